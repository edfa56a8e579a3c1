"""Reproducible random streams: one SeedSequence per (run seed, purpose, setting, trial, method).

Streams are derived from their *names*, never from the order in which jobs run, so a
serial run, a parallel run and a resumed run produce identical results.
"""

from __future__ import annotations

import hashlib
import json

import numpy as np


def stable_key(obj) -> int:
    """A 32-bit integer derived from ``obj`` (str, number or JSON-serialisable) by SHA-256.

    Python's ``hash`` is salted per process, so it cannot name a random stream.
    """
    if not isinstance(obj, (int, np.integer)) or isinstance(obj, bool):
        text = obj if isinstance(obj, str) else json.dumps(obj, sort_keys=True, default=str)
        return int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "little")
    return int(obj) & 0xFFFFFFFF


def seed_sequence(seed: int, *keys) -> np.random.SeedSequence:
    """SeedSequence for ``seed`` spawned at the path ``keys`` (each a str, int or JSON value)."""
    return np.random.SeedSequence(int(seed), spawn_key=tuple(stable_key(k) for k in keys))


def rng_for(seed: int, *keys) -> np.random.Generator:
    """A ``numpy.random.Generator`` (PCG64) for ``seed`` and the stream name ``keys``.

    Examples
    --------
    >>> a = rng_for(0, "data", "toeplitz n=100", 3).random()
    >>> b = rng_for(0, "data", "toeplitz n=100", 3).random()
    >>> a == b
    True
    """
    return np.random.Generator(np.random.PCG64(seed_sequence(seed, *keys)))
