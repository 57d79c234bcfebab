"""The standalone cluster test: a package, so that its conftest does not shadow ``spark_tests/conftest.py``
(tests there do ``from conftest import ...``)."""
