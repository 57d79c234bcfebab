"""The package version: a module of its own, so that low layers (the disk cache keys on it) need
not import the package face, which reaches every layer."""
__version__ = "0.1.0"  # as pyproject.toml says
