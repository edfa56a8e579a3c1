"""The version of dpbench (one place; results and reports record it)."""

__version__ = "0.1.0"
