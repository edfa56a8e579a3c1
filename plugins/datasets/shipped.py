"""The real data sets shipped with dpbench: ``khan``, ``nci60``, ``diabetes``, ``hitters``.

The files live in the repository's ``datasets/`` directory, installed as the package
``dpbench_data`` (so they are found after a non-editable install too). Each data set's
provenance (source package and version, citation, licence, sha256, shape, description)
is read from ``datasets/<name>.toml``; :meth:`ShippedDataset.load` checks the sha256 of the
``.npz`` before reading it with ``allow_pickle=False``.

The arrays are returned as shipped (no centring or scaling): preprocessing is the user's
explicit choice (``dpbench.data_io.standardize_arrays``), since it uses the data and is not
private.
"""

from __future__ import annotations

import tomllib
from importlib.resources import files
from typing import ClassVar

import numpy as np

from dpbench import Dataset, DatasetArrays, UserInputError, hookimpl
from dpbench.data_io import read_npz_verified

DATA_PACKAGE = "dpbench_data"


def _resource(filename: str):
    return files(DATA_PACKAGE).joinpath(filename)


def read_provenance(name: str) -> dict:
    """The parsed ``<name>.toml`` provenance record of a shipped data set.

    Raises
    ------
    UserInputError
        If the file is missing from the installation.
    """
    res = _resource(f"{name}.toml")
    try:
        return tomllib.loads(res.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserInputError(f"data set {name!r}: provenance file {name}.toml is missing from the "
                             f"installed package {DATA_PACKAGE}; reinstall dpbench") from None


class ShippedDataset(Dataset):
    """A data set stored as ``<name>.npz`` + ``<name>.toml`` in the ``dpbench_data`` package."""

    name: ClassVar[str] = ""

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        cls.provenance = read_provenance(cls.name)
        cls.summary = cls.provenance["summary"]

    def load(self) -> DatasetArrays:
        """Read the shipped arrays after verifying the file's sha256.

        Returns
        -------
        DatasetArrays
            ``X`` float64 of shape ``provenance["shape"]``; ``y`` float64 (n,) or None for a
            design-only data set; ``feature_names``; ``target_name``.

        Raises
        ------
        UserInputError
            If the file is missing, its sha256 differs from the provenance record, or its
            shape differs from the recorded one.
        """
        prov = self.provenance
        res = _resource(prov["file"])
        try:
            data = res.read_bytes()
        except FileNotFoundError:
            raise UserInputError(f"data set {self.name!r}: file {prov['file']} is missing from the installed "
                                 f"package {DATA_PACKAGE}; reinstall dpbench") from None
        z = read_npz_verified(data, prov["sha256"], f"data set {self.name!r} ({prov['file']})")
        X = np.asarray(z["X"], dtype=np.float64)
        if list(X.shape) != list(prov["shape"]):
            raise UserInputError(f"data set {self.name!r}: X has shape {X.shape}, provenance says "
                                 f"{tuple(prov['shape'])}; reinstall dpbench")
        y = np.asarray(z["y"], dtype=np.float64) if "y" in z else None
        names = [str(v) for v in z["feature_names"]]
        return DatasetArrays(X=X, y=y, feature_names=names, target_name=prov.get("target") or None)


class Khan(ShippedDataset):
    """Khan et al. (2001) SRBCT training split, 63 x 2308, y = class label 1-4 (swope2024 Table 1)."""

    name = "khan"


class NCI60(ShippedDataset):
    """NCI-60 cell lines, 64 x 6830 gene expression; design matrix only (y is None)."""

    name = "nci60"


class Diabetes(ShippedDataset):
    """Efron et al. (2004) diabetes progression, 442 x 10, raw (unscaled) units."""

    name = "diabetes"


class Hitters(ShippedDataset):
    """ISLR Hitters, 263 complete rows x 19 predictors (0/1 categoricals), y = log(Salary)."""

    name = "hitters"


@hookimpl
def dpbench_datasets():
    return [Khan, NCI60, Diabetes, Hitters]
