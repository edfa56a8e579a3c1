"""The non-editable install ships every subpackage of the source tree.

``pyproject.toml`` lists the packages explicitly (the plugins and data directories are
renamed on install), so a new subpackage that is not added there works in an editable
checkout and fails after ``pip install .`` (it happened with ``dpbench.core.toplist``).
"""

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _declared():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    return set(config["packages"]), config["package-dir"]


def test_every_source_package_is_installed():
    packages, package_dir = _declared()
    missing = []
    for name, directory in package_dir.items():
        base = ROOT / directory
        for init in base.rglob("__init__.py"):
            rel = init.parent.relative_to(base)
            dotted = ".".join((name, *rel.parts))
            if "__pycache__" not in rel.parts and dotted not in packages:
                missing.append(dotted)
    assert not missing, f"add to [tool.setuptools] packages in pyproject.toml: {sorted(missing)}"
