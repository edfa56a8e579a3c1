"""Declared plugin parameters: :class:`Param` and the :class:`Configurable` base of plugins.

Re-exported by :mod:`dpbench.api`: a plugin declares
``params = {"name": Param(default, doc, type, choices)}`` and receives validated values in
``self.config``.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any, Callable, ClassVar

from dpbench.core.errors import UserInputError


@dataclass(frozen=True)
class Param:
    """Declaration of one parameter of a plugin.

    Parameters
    ----------
    default : object
        Value used when the user gives none.
    doc : str
        One-line description shown by ``dpbench list``.
    type : callable, optional
        Converts a command-line string (or a value) to the parameter's type; defaults to
        the type of ``default``.
    choices : tuple, optional
        Allowed values.
    interval : (low, high, closed), optional
        Allowed numeric range, as scikit-learn's ``Interval`` constraint: ``low`` / ``high``
        (None: unbounded) and ``closed`` in {"both", "left", "right", "neither"}; the value must
        also be finite. Checked when the plugin is configured, before any trial, so plugins do
        not repeat the check.
    """

    default: Any
    doc: str
    type: Callable | None = None
    choices: tuple | None = None
    interval: tuple | None = None

    def convert(self, name: str, value):
        """Convert ``value`` (often a string from the command line), or raise UserInputError."""
        conv = self.type or (type(self.default) if self.default is not None else _auto)
        if conv is bool:
            conv = _to_bool
        elif conv is int:  # "1e8" (docs/user-guide/compare.md: exhaustive.limit=1e8) was refused by int()
            conv = to_integer
        try:
            out = conv(value)
        except (TypeError, ValueError, OverflowError) as exc:  # OverflowError: int(float("inf"))
            # Python's own text ("could not convert string to float: 'abc'") says neither what the
            # parameter expects nor how to fix it
            expected = {to_integer: "an integer", float: "a number", _to_bool: "true or false"}.get(conv)
            if expected:
                raise UserInputError(f"parameter {name}={value!r} must be {expected}, e.g. {name}={self.default}"
                                     ) from None
            raise UserInputError(f"parameter {name}={value!r}: {exc}") from None
        if self.choices is not None and out not in self.choices:
            raise UserInputError(f"parameter {name}={value!r} must be one of {', '.join(map(str, self.choices))}")
        if self.interval is not None and not _in_interval(out, *self.interval):
            raise UserInputError(f"parameter {name}={value!r} must lie in {_show_interval(*self.interval)}")
        return out


def _in_interval(v, low, high, closed="both") -> bool:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        return False
    left = low is None or (v >= low if closed in ("both", "left") else v > low)
    right = high is None or (v <= high if closed in ("both", "right") else v < high)
    return left and right


def _show_interval(low, high, closed="both") -> str:
    lo = "(-inf" if low is None else ("[" if closed in ("both", "left") else "(") + f"{low:g}"
    hi = "inf)" if high is None else f"{high:g}" + ("]" if closed in ("both", "right") else ")")
    return f"{lo}, {hi}"


def to_integer(value) -> int:
    """An int from an integer, an integral float or numeric text (``"1e8"``, ``"2.0"``).

    The one integer converter of parameters and of ``dpbench compare``'s options
    (:func:`dpbench.bench.config.to_int`).

    Raises
    ------
    ValueError
        For true/false, a fractional or non-finite number, or text that is not a number.
    """
    if isinstance(value, bool):
        raise ValueError("must be an integer, not true/false")
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, str):
        text = value.strip()
        try:
            return int(text)
        except ValueError:
            pass
        try:
            value = float(text)
        except ValueError:
            raise ValueError("must be an integer") from None
    if isinstance(value, numbers.Real) and float(value).is_integer():
        return int(value)
    raise ValueError("must be an integer")


def _to_bool(v):
    if isinstance(v, bool):
        return v
    t = str(v).strip().lower()
    if t in ("1", "true", "yes", "on"):
        return True
    if t in ("0", "false", "no", "off"):
        return False
    raise ValueError("expected true/false")


def _auto(v):
    """Best-effort conversion for parameters whose default is None."""
    if not isinstance(v, str):
        return v
    for conv in (int, float):
        try:
            return conv(v)
        except ValueError:
            pass
    return v


def int_or_inf(v):
    """Parameter type: a positive integer or ``inf`` (e.g. the number of rejection rounds T)."""
    if isinstance(v, str) and v.strip().lower() in ("inf", "infinity", "none"):
        return math.inf
    try:
        f = float(v)
    except (TypeError, ValueError):
        f = math.nan
    if math.isinf(f):
        return math.inf
    if math.isnan(f) or f != int(f) or f < 1:
        raise ValueError("expected a positive integer or 'inf'")
    return int(f)


class Configurable:
    """Base for plugins with declared parameters (``params``) validated at construction."""

    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    params: ClassVar[dict[str, Param]] = {}

    def __init__(self, **params):
        unknown = set(params) - set(self.params)
        if unknown:
            known = ", ".join(sorted(self.params)) or "(none)"
            raise UserInputError(
                f"{self.kind} {self.name!r} has no parameter {sorted(unknown)[0]!r}; its parameters are: {known}"
            )
        self.config = {k: p.default for k, p in self.params.items()}
        for k, v in params.items():
            self.config[k] = self.params[k].convert(f"{self.name}.{k}", v)

    kind: ClassVar[str] = "plugin"

    @classmethod
    def describe(cls) -> dict:
        """Metadata for ``dpbench list`` (JSON-serialisable)."""
        return {
            "name": cls.name,
            "summary": cls.summary,
            "params": {k: {"default": _jsonable(p.default), "doc": p.doc} for k, p in cls.params.items()},
        }


def _jsonable(v):
    if isinstance(v, float) and math.isinf(v):
        return "inf"
    return v
