"""Data sets shipped inside an installed Python package: ``<name>.npz`` beside its provenance ``<name>.toml``.

dpbench's own real data sets (``khan``, ``diabetes``, ``hitters``, ``nci60`` and the 14
microarray sets) are installed as the package ``dpbench_data``; a third-party plugin that ships
data uses :class:`PackagedDataset` with its own package. The file's sha256 is checked against
the provenance record before the arrays are read (``allow_pickle=False``).
"""

from __future__ import annotations

import tomllib
from importlib.resources import files
from typing import ClassVar

import numpy as np

from dpbench.core.contracts.data import Dataset, DatasetArrays
from dpbench.core.datafiles import read_npz_verified
from dpbench.core.errors import UserInputError




def _resource(package: str, filename: str):
    return files(package).joinpath(filename)


def read_provenance(name: str, package: str = "dpbench_data") -> dict:
    """The parsed ``<name>.toml`` provenance record of a shipped data set.

    Raises
    ------
    UserInputError
        If the file is missing from the installation.
    """
    res = _resource(package, f"{name}.toml")
    try:
        return tomllib.loads(res.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserInputError(f"data set {name!r}: provenance file {name}.toml is missing from the "
                             f"installed package {package}; reinstall it") from None


class PackagedDataset(Dataset):
    """A data set stored as ``<name>.npz`` + ``<name>.toml`` (its provenance) in an installed package.

    dpbench's own real data sets live in the package ``dpbench_data``; a third-party plugin that
    ships data sets its own ``package``. A subclass only names the data set: its provenance
    (source, citation, licence, sha256, shape, summary) is read when the class is defined, and
    :meth:`load` checks the sha256 before reading the arrays with ``allow_pickle=False``.
    """

    name: ClassVar[str] = ""
    package: ClassVar[str] = "dpbench_data"

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        cls.provenance = read_provenance(cls.name, cls.package)
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
        res = _resource(self.package, prov["file"])
        try:
            data = res.read_bytes()
        except FileNotFoundError:
            raise UserInputError(f"data set {self.name!r}: file {prov['file']} is missing from the installed "
                                 f"package {self.package}; reinstall it") from None
        z = read_npz_verified(data, prov["sha256"], f"data set {self.name!r} ({prov['file']})")
        X = np.asarray(z["X"], dtype=np.float64)
        if list(X.shape) != list(prov["shape"]):
            raise UserInputError(f"data set {self.name!r}: X has shape {X.shape}, provenance says "
                                 f"{tuple(prov['shape'])}; reinstall dpbench")
        y = np.asarray(z["y"], dtype=np.float64) if "y" in z else None
        names = [str(v) for v in z["feature_names"]]
        return DatasetArrays(X=X, y=y, feature_names=names, target_name=prov.get("target") or None)
