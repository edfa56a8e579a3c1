"""The problem of a real-data setting: a registered data set or a user file, standardised as asked.

The data file readers and the standardisation are in :mod:`dpbench.core.datafiles`; this
module adds the look-up of a registered data set by name, which needs the plugin registry.
"""

from __future__ import annotations

from dpbench.bench.registry import registry
from dpbench.core.datafiles import load_table_once, standardize_arrays
from dpbench.core.errors import UserInputError
from dpbench.core.problem import Problem


def problem_from_dataset(setting: dict):
    """The :class:`~dpbench.core.problem.Problem` of a real-data setting (used by the runner).

    Real data are the same in every trial; trials differ only in the mechanisms' randomness.

    Parameters
    ----------
    setting : dict
        Either ``{"dataset": NAME, "s": s}`` for a registered data set, or
        ``{"data": PATH, "target": COLUMN, "s": s}`` for a user file (:func:`load_table`).
        Optional ``"standardize"``: one of :data:`STANDARDIZE_MODES` (default ``"none"``).

    Returns
    -------
    Problem
        ``true_support`` None; ``provenance`` holds the data set's name, source and sha256,
        the standardisation, and ``notice`` (the not-private warning) when it used the data.

    Raises
    ------
    UserInputError
        For a design-only data set (no response: use the ``planted`` generator), an unknown
        name (UnknownNameError), or any error of :func:`load_table`.
    """
    mode = setting.get("standardize") or "none"
    s = setting["s"]
    if "dataset" in setting:
        name = setting["dataset"]
        cls = registry().dataset(name)
        arr = cls().load()
        if arr.y is None:
            raise UserInputError(
                f"data set {name!r} is a design matrix only (no response); plant a signal on it with "
                f"the planted generator (--generator planted --param planted.design={name})")
        X, y, notice = standardize_arrays(arr.X, arr.y, mode)
        prov = {"dataset": name, "target": arr.target_name, "standardize": mode,
                **{k: cls.provenance[k] for k in ("sha256", "source_package", "source_version")
                   if k in cls.provenance}}
    elif "data" in setting:
        t = load_table_once(setting["data"], setting.get("target"), mode)
        if t.y is None:
            raise UserInputError(f"{setting['data']}: no response; give --target COLUMN")
        X, y, notice, name = t.X, t.y, t.notice, str(setting["data"])
        prov = dict(t.provenance)
    else:
        raise UserInputError(f"data setting {setting} names neither a dataset nor a data file")
    if notice:
        prov["notice"] = notice
    return Problem(X, y, s, true_support=None, name=name, provenance=prov)
