"""``dpbench compare --config FILE.toml``: every command-line option, in a TOML file.

Keys are the long option names with dashes or underscores (``b-x`` or ``b_x``); lists
may be TOML arrays or comma-separated strings; ``[params]`` is a table of per-plugin
parameters (``exhaustive = { limit = 1e7 }``) or ``param = ["NAME.KEY=VALUE", ...]``.
Command-line options override the file.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from ..errors import UserInputError

_LISTS = {"n", "p", "s", "snr", "rho", "epsilon"}


def load_config(path, known: dict) -> dict:
    """Read a TOML config and return the options it sets, validated against ``known``.

    Raises
    ------
    UserInputError
        Missing file, TOML syntax error, or an unknown key (the message lists the known ones).
    """
    path = Path(path)
    if not path.exists():
        raise UserInputError(f"config file {path} does not exist")
    try:
        raw = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise UserInputError(f"config file {path} is not valid TOML: {exc}") from None
    raw = {k.replace("-", "_"): v for k, v in raw.items()}
    if "eps" in raw:
        raw["epsilon"] = raw.pop("eps")
    params = list(raw.pop("param", []) or [])
    for plugin, table in (raw.pop("params", {}) or {}).items():
        if not isinstance(table, dict):
            raise UserInputError(f"config {path}: [params] {plugin} must be a table of KEY = VALUE")
        params += [f"{plugin}.{k}={v}" for k, v in table.items()]
    unknown = sorted(set(raw) - set(known) - {"description"})
    if unknown:
        raise UserInputError(f"config {path}: unknown option(s) {', '.join(unknown)}; known: "
                             f"{', '.join(sorted(known))}, params")
    raw.pop("description", None)
    out = {}
    for k, v in raw.items():
        if k in _LISTS and not isinstance(v, list):
            v = [x for x in str(v).replace(" ", ",").split(",") if x] if isinstance(v, str) else [v]
        if k == "methods" and isinstance(v, list):
            v = ",".join(v)
        out[k] = v
    if params:
        out["param"] = params
    return out
