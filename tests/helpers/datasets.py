"""The check every shipped data file passes, whatever its collection."""

import hashlib
from importlib.resources import files

import numpy as np

from dpbench.bench.registry import registry


def check_shipped_dataset(name: str, shape: tuple, sha: str, provenance_keys: set):
    """Provenance record, file checksum and loaded arrays of the shipped data set ``name``.

    The expected ``shape`` and ``sha`` (SHA-256 of the shipped file) are recorded by the caller
    independently of the provenance .toml file, so that a changed file and a changed record
    both fail. Returns ``(cls, provenance, arrays)`` for the collection's own checks.
    """
    cls = registry().dataset(name)
    prov = cls.provenance
    assert provenance_keys <= set(prov), provenance_keys - set(prov)
    assert prov["sha256"] == sha and tuple(prov["shape"]) == shape
    raw = files("dpbench_data").joinpath(prov["file"]).read_bytes()
    assert hashlib.sha256(raw).hexdigest() == sha
    arr = cls().load()
    assert arr.X.shape == shape and arr.X.dtype == np.float64 and np.all(np.isfinite(arr.X))
    assert len(arr.feature_names) == shape[1] and len(set(arr.feature_names)) == shape[1]
    return cls, prov, arr
