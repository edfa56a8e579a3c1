"""Where the repository's own files are, independent of the folder a test file sits in."""

from pathlib import Path

#: The repository root (the folder holding pyproject.toml).
REPO = Path(__file__).resolve().parents[2]
#: The test tree.
TESTS = REPO / "tests"
#: The fake third-party plugin package (installed or imported by the plugin-author tests).
THIRDPARTY = TESTS / "thirdparty"
