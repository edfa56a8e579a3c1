"""The data contracts: simulation designs (:class:`Generator`) and shipped real data sets (:class:`Dataset`).

Re-exported by :mod:`dpbench.api`.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from dpbench.core.params import Configurable
from dpbench.core.problem import Problem


class Generator(Configurable, abc.ABC):
    """A simulation design: draws a :class:`Problem` (with its true support) from an rng.

    ``params`` (a dict of :class:`Param`) must include every quantity that determines the
    distribution of the data (typically n, p, s, snr, ...): :meth:`setting` keys the
    random streams and the stored rows by them. Checked by
    :func:`dpbench.testing.check_generator`.
    """

    kind: ClassVar[str] = "generator"

    @abc.abstractmethod
    def generate(self, rng: np.random.Generator) -> Problem:
        """Draw one data set using ``self.config``.

        Parameters
        ----------
        rng : numpy.random.Generator
            The only source of randomness: the same seed gives the same data, bit for bit.

        Returns
        -------
        Problem
            ``X`` of shape (n, p) and ``y`` of shape (n,), float64, finite, with
            ``s`` and ``true_support`` (int64, shape (s,), sorted, distinct, in ``[0, p)``).

        Raises
        ------
        UserInputError
            Parameters that describe no valid design (s >= p, rho outside (-1, 1), ...).
        """

    def setting(self) -> dict:
        """The parameters that determine the distribution of the data (for seeding/keys)."""
        return {"generator": self.name, **self.config}


@dataclass
class DatasetArrays:
    """A loaded real data set: X (n, p), optional y (n,), and column names."""

    X: np.ndarray
    y: np.ndarray | None
    feature_names: list[str]
    target_name: str | None = None


class Dataset(abc.ABC):
    """A real data set shipped with a plugin, with provenance.

    Subclasses set ``name`` (unique, non-empty), ``summary``, ``provenance`` (a dict:
    source, version, citation, licence, sha256) and implement :meth:`load`.
    """

    kind: ClassVar[str] = "dataset"
    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    provenance: ClassVar[dict] = {}
    params: ClassVar[dict] = {}

    @abc.abstractmethod
    def load(self) -> DatasetArrays:
        """Read the data (deterministic, no randomness).

        Returns
        -------
        DatasetArrays
            ``X`` of shape (n, p), float64, finite; ``y`` of shape (n,) or None;
            ``feature_names`` of length p.

        Raises
        ------
        UserInputError
            A missing or corrupted file (name the file and the checksum that failed).
        """

    @classmethod
    def describe(cls) -> dict:
        return {"name": cls.name, "summary": cls.summary, "provenance": cls.provenance}
