"""``python -m dpbench.cli``: the same as the ``dpbench`` command."""

from . import run

run()
