"""The ``dpbench`` command line.

:func:`run` is the console-script entry point: it imports the command line inside its own
``try`` so that Ctrl-C even during start-up (the imports of numpy, scipy and the plugins) ends
with exit status 130 and one line instead of a traceback.
"""

import sys


def run() -> None:
    """Console-script entry point: ``sys.exit(main())`` with a clean Ctrl-C during imports."""
    try:
        from dpbench.cli.main import main
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        sys.exit(130)
    sys.exit(main())


def main(argv=None) -> int:
    """See :func:`dpbench.cli.main.main`."""
    from dpbench.cli.main import main as _main

    return _main(argv)


__all__ = ["main", "run"]
