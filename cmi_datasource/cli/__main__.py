"""``python -m cmi_datasource.cli``: the ``cmi`` command."""
from . import main

if __name__ == "__main__":
    main()
