"""Where the repository's own files are, independent of the folder a test file sits in."""

from pathlib import Path

#: The repository root (the folder holding pyproject.toml).
REPO = Path(__file__).resolve().parents[2]
#: The test tree.
TESTS = REPO / "tests"
#: The fake third-party plugin package (installed or imported by the plugin-author tests).
THIRDPARTY = TESTS / "thirdparty"


def benchmark_module(name: str):
    """Import ``benchmarks/<name>.py`` (not a package: its folder goes on sys.path for the import only)."""
    import importlib
    import sys

    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(REPO / "benchmarks"))
