"""The real data sets shipped with dpbench: ``khan``, ``nci60``, ``diabetes``, ``hitters``.

The files live in the repository's ``datasets/`` directory, installed as the package
``dpbench_data`` (so they are found after a non-editable install too). Each data set's
provenance (source package and version, citation, licence, sha256, shape, description)
is read from ``datasets/<name>.toml``; :meth:`PackagedDataset.load` checks the sha256 of the
``.npz`` before reading it with ``allow_pickle=False``.

The arrays are returned as shipped (no centring or scaling): preprocessing is the user's
explicit choice (``dpbench.bench.datasets.standardize_arrays``), since it uses the data and is not
private.
"""

from __future__ import annotations


from dpbench.api import PackagedDataset, hookimpl

class Khan(PackagedDataset):
    """Khan et al. (2001) SRBCT training split, 63 x 2308, y = class label 1-4 (swope2024 Table 1)."""

    name = "khan"


class NCI60(PackagedDataset):
    """NCI-60 cell lines, 64 x 6830 gene expression; design matrix only (y is None)."""

    name = "nci60"


class Diabetes(PackagedDataset):
    """Efron et al. (2004) diabetes progression, 442 x 10, raw (unscaled) units."""

    name = "diabetes"


class Hitters(PackagedDataset):
    """ISLR Hitters, 263 complete rows x 19 predictors (0/1 categoricals), y = log(Salary)."""

    name = "hitters"


@hookimpl
def dpbench_datasets():
    return [Khan, NCI60, Diabetes, Hitters]
