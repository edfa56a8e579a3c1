"""Typed preparations: the per-ε cache a preparation may hold, and storing a dataclass preparation.

Re-exported by :mod:`dpbench.api`. A selector's ``prepare``
(:class:`dpbench.api.Selector`) returns a frozen dataclass; the runner passes it unchanged
to every ``draw`` and ``log_prob``. Two pieces here make that work without per-plugin code:

* :class:`Memo` / :class:`EpsilonCache` -- the only part of a preparation that may change after
  ``prepare``: values that are pure functions of (ε, Δ) and of the rest of the preparation,
  such as an exponential mechanism's normaliser, computed once per ε;
* :func:`prepared_state` / :func:`prepared_from_state` -- a dataclass preparation as plain data
  (numpy arrays and JSON values, never pickle) for the results store, and back, so that a
  resumed run draws from a stored preparation exactly as from a fresh one.
"""

from __future__ import annotations

import dataclasses
import json
import typing
from typing import Any, Callable

import numpy as np


class Memo(dict):
    """The one mutable part a selector's ``prepared`` may hold: a memo of pure functions.

    A ``Memo`` (a plain dict, e.g. a per-epsilon normaliser) inside ``prepared`` may gain
    entries during ``draw`` / ``log_prob``, provided each entry is a deterministic function
    of its key and of the rest of ``prepared``: outputs must equal those after a fresh
    ``prepare``. :func:`dpbench.testing.check_selector` leaves ``Memo`` contents out of its
    "``prepared`` not mutated" comparison and checks that condition instead. A ``Memo`` is
    never stored (:func:`prepared_state`); a loaded preparation starts with an empty one.
    """


class EpsilonCache(Memo):
    """Values of a preparation that depend on the privacy parameter only, each computed once.

    The shared per-ε cache of the exponential-mechanism selectors (``exhaustive``: the log
    normaliser log Z(ε); ``topr``: log P0 of eq. 6 of behdin2024; ``mistakes``: log P(t)).
    Entries are keyed by ``(ε, Δ)``: a value is a pure function of ε, the sensitivity Δ of the
    trial and the rest of the preparation, so the cache changes no output (the :class:`Memo`
    condition), it only avoids recomputing a normaliser over R or C(p, s) terms per call.

    Examples
    --------
    >>> cache = EpsilonCache()
    >>> cache(1.0, 2.0, lambda: 3.0)  # computed
    3.0
    >>> cache(1.0, 2.0, lambda: 4.0)  # cached
    3.0
    """

    def __call__(self, epsilon: float, sensitivity: float, compute: Callable[[], Any]) -> Any:
        """The value for ``(epsilon, sensitivity)``; ``compute()`` (no arguments) on first use.

        Parameters
        ----------
        epsilon : float
            Privacy parameter ε > 0 (validated by the caller).
        sensitivity : float
            The score's sensitivity Δ of the trial.
        compute : callable
            Returns the value; called at most once per key.
        """
        key = (float(epsilon), float(sensitivity))
        if key not in self:
            self[key] = compute()
        return self[key]


def _json_value(v, where: str):
    """``v`` as a plain JSON value (numpy scalars to Python numbers); TypeError if it is none."""
    if isinstance(v, np.generic):
        v = v.item()
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, list):
        return [_json_value(x, f"{where}[{i}]") for i, x in enumerate(v)]
    if isinstance(v, dict) and all(isinstance(k, str) for k in v):
        return {k: _json_value(x, f"{where}[{k!r}]") for k, x in v.items()}
    raise TypeError(f"{where} of type {type(v).__name__} is not storable: use a numpy array (numeric or bool), "
                    "None, bool, int, float, str, or lists / dicts with str keys of those (a tuple would "
                    "come back as a list)")


def prepared_state(prepared, prefix: str = "") -> dict:
    """A dataclass preparation as ``{name: ndarray or JSON value}`` (see :meth:`Selector.save_prepared`).

    Every field given to the constructor is stored under its name (a nested dataclass field
    ``f`` of class ``C`` as ``"f.<field of C>"``); fields with ``init=False`` (derived in
    ``__post_init__``, e.g. a lookup table) and :class:`Memo` fields are left out: loading
    rebuilds them.

    Parameters
    ----------
    prepared : dataclass instance
        Fields: numpy arrays (numeric or bool dtype), None, bool, int, float (inf/nan
        included), str, lists and str-keyed dicts of those, nested dataclasses, Memos.

    Returns
    -------
    dict
        Arrays kept as they are (stored as ``.npy`` data); the rest JSON-serialisable.

    Raises
    ------
    TypeError
        A field of another type (an object array, a tuple, a function, ...), so that a
        preparation growing an unstorable field fails loudly instead of being saved wrongly.
    """
    if not dataclasses.is_dataclass(prepared) or isinstance(prepared, type):
        raise TypeError(f"the preparation is a {type(prepared).__name__}, not a dataclass instance")
    hints = typing.get_type_hints(type(prepared))
    out = {}
    for f in dataclasses.fields(prepared):
        name = prefix + f.name
        v = getattr(prepared, f.name)
        if not f.init or isinstance(v, Memo):
            continue
        if dataclasses.is_dataclass(v):
            if hints.get(f.name) is not type(v):
                raise TypeError(f"prepared.{name} holds a {type(v).__name__} but is annotated "
                                f"{hints.get(f.name)!r}; annotate a nested preparation with its class")
            out.update(prepared_state(v, name + "."))
        elif isinstance(v, np.ndarray):
            if v.dtype.kind not in "biuf":
                raise TypeError(f"prepared.{name} is an array of dtype {v.dtype}; only numeric and bool "
                                "arrays are storable (no pickle)")
            out[name] = v
        else:
            out[name] = _json_value(v, f"prepared.{name}")
    json.dumps({k: v for k, v in out.items() if not isinstance(v, np.ndarray)})  # fail here, not in the store
    return out


def prepared_from_state(cls: type, state: dict, prefix: str = ""):
    """Inverse of :func:`prepared_state`: an instance of the dataclass ``cls`` from the stored dict.

    Parameters
    ----------
    cls : type
        The dataclass (``Selector.prepared_type``); nested dataclass fields are found from its
        annotations.
    state : dict
        What :func:`prepared_state` returned, after the store's round trip (arrays as ndarray).

    Raises
    ------
    ValueError
        A field is missing or left over (a preparation stored by another version of the
        selector: bump its ``prepared_version`` when the fields change, so that such an
        artefact is never looked up).
    """
    hints = typing.get_type_hints(cls)
    kwargs, used = {}, set()
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        name = prefix + f.name
        hint = hints.get(f.name)
        if isinstance(hint, type) and issubclass(hint, Memo):
            continue  # an empty memo from the field's default factory
        if isinstance(hint, type) and dataclasses.is_dataclass(hint):
            kwargs[f.name] = prepared_from_state(hint, state, name + ".")
            used.update(k for k in state if k.startswith(name + "."))
        elif name in state:
            kwargs[f.name] = state[name]
            used.add(name)
        else:
            raise ValueError(f"stored preparation of {cls.__name__} lacks field {name!r}; recompute it")
    if not prefix and set(state) - used:
        raise ValueError(f"stored preparation of {cls.__name__} has unknown fields "
                         f"{sorted(set(state) - used)}; recompute it")
    return cls(**kwargs)
