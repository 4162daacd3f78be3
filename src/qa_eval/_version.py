"""The package version, in a leaf module: the run signature (runner) and ``--version`` (cli) read
it without importing the package's ``__init__``."""

__version__ = "0.1.0"
