"""``python -m dpbench.cli``: the same as the ``dpbench`` command."""

from dpbench.cli import run

run()
