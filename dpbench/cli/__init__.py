"""The ``dpbench`` command line (layer 8); :func:`dpbench.cli.main.main` is the entry point."""

from .main import main

__all__ = ["main"]
