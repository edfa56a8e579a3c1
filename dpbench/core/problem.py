"""The data of one selection problem and its data-independent preprocessing.

Vocabulary follows docs/vocabulary.md: ``X`` is the n x p design matrix (rows are
individuals), ``y`` the response of length n, ``s`` the sparsity level and a support is a
sorted integer array of s column indices.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from dpbench.core.errors import UserInputError


def as_support(support, p=None) -> np.ndarray:
    """Return ``support`` as a sorted ``int64`` array of distinct column indices.

    Raises
    ------
    UserInputError
        If indices repeat or fall outside ``0 .. p-1``.
    """
    arr = np.unique(np.asarray(support, dtype=np.int64).ravel())
    if arr.size != np.asarray(support).size:
        raise UserInputError(f"support {list(np.asarray(support))} repeats an index; give distinct column indices")
    if p is not None and arr.size and (arr[0] < 0 or arr[-1] >= p):
        raise UserInputError(f"support {arr.tolist()} has an index outside 0..{p - 1}")
    return arr


@dataclass(frozen=True)
class Problem:
    """One regression data set and the sparsity level to select.

    Parameters
    ----------
    X : ndarray of shape (n, p)
        Design matrix, float64, finite.
    y : ndarray of shape (n,)
        Response, float64, finite.
    s : int
        Sparsity level, ``1 <= s < p``.
    true_support : ndarray of shape (s,), optional
        The support of the data-generating coefficients when known (simulations).
    name : str
        Generator or data-set name.
    provenance : dict
        Where the data came from (generator parameters, file, checksum, ...).

    Raises
    ------
    UserInputError
        For non-finite values, mismatched shapes, ``n < 2`` or ``s`` outside ``1 .. p-1``.
    """

    X: np.ndarray
    y: np.ndarray
    s: int
    true_support: np.ndarray | None = None
    name: str = "data"
    provenance: dict = field(default_factory=dict)

    def __post_init__(self):
        X = np.asarray(self.X, dtype=np.float64)
        y = np.asarray(self.y, dtype=np.float64).ravel()
        if X.ndim != 2:
            raise UserInputError(f"X must be a 2-D array (n x p); got shape {X.shape}")
        n, p = X.shape
        if y.shape[0] != n:
            raise UserInputError(f"X has {n} rows but y has {y.shape[0]} entries; give one response per row")
        if n < 2:
            raise UserInputError(f"n = {n}: need at least 2 rows")
        if not np.all(np.isfinite(X)):
            bad = np.argwhere(~np.isfinite(X))[0]
            raise UserInputError(
                f"X contains NaN or inf (first at row {bad[0]}, column {bad[1]}); "
                "impute or drop those rows before selection"
            )
        if not np.all(np.isfinite(y)):
            bad = int(np.flatnonzero(~np.isfinite(y))[0])
            raise UserInputError(f"y contains NaN or inf (first at row {bad}); impute or drop those rows")
        s = int(self.s)
        if s != self.s or not 1 <= s < p:
            raise UserInputError(f"sparsity level s = {self.s} must be an integer with 1 <= s < p = {p}")
        object.__setattr__(self, "X", X)
        object.__setattr__(self, "y", y)
        object.__setattr__(self, "s", s)
        if self.true_support is not None:
            ts = as_support(self.true_support, p)
            if ts.size != s:
                raise UserInputError(f"true support has {ts.size} indices but s = {s}")
            object.__setattr__(self, "true_support", ts)

    @property
    def n(self) -> int:
        """Number of rows (individuals)."""
        return self.X.shape[0]

    @property
    def p(self) -> int:
        """Number of features."""
        return self.X.shape[1]

    def clipped(self, b_x: float, b_y: float) -> "Problem":
        """Return the problem with ``X`` clipped to [-b_x, b_x] and ``y`` to [-b_y, b_y].

        Clipping is the data-independent preprocessing of Lemma 2 / Remark 1 of
        behdin2024-dp-bss-iclr-workshop that bounds the sensitivity of the score.

        Raises
        ------
        UserInputError
            If a bound is not positive and finite.
        """
        for label, b in (("b_x", b_x), ("b_y", b_y)):
            if not (np.isfinite(b) and b > 0):
                raise UserInputError(f"clipping bound {label} = {b} must be positive and finite")
        return replace(
            self,
            X=np.clip(self.X, -b_x, b_x),
            y=np.clip(self.y, -b_y, b_y),
            provenance={**self.provenance, "clipped": {"b_x": b_x, "b_y": b_y}},
        )


def add_noise_at_snr(rng: np.random.Generator, signal, snr: float) -> np.ndarray:
    """Return ``signal + e`` with Gaussian noise rescaled to an exact signal-to-noise ratio.

    ``e`` is drawn as n standard normals from ``rng`` and multiplied by the scalar that makes
    ``||signal||^2 / ||e||^2 = snr`` hold exactly (not only in expectation): the noise model
    of the NeurIPS 2025 simulations (docs/reproductions.md), shared by the ``toeplitz`` and
    ``planted`` generators.

    Parameters
    ----------
    rng : numpy.random.Generator
        Source of the n standard normal draws (consumes exactly n of them).
    signal : array_like of shape (n,)
        The noiseless response ``X beta*``.
    snr : float
        Target ratio ``||X beta*||^2 / ||e||^2``, > 0.

    Returns
    -------
    ndarray of shape (n,)
        The response ``y = signal + e``.

    Raises
    ------
    UserInputError
        If ``snr`` is not positive and finite, or the signal is identically zero (no noise
        scale gives a positive ratio).
    """
    signal = np.asarray(signal, dtype=np.float64).ravel()
    if not (np.isfinite(snr) and snr > 0):
        raise UserInputError(f"snr = {snr} must be positive and finite")
    power = float(signal @ signal)
    if not power > 0:
        raise UserInputError("the planted signal X beta* is identically zero, so no noise level gives "
                             "the requested SNR; choose columns that are not constant")
    e = rng.standard_normal(signal.shape[0])
    e *= np.sqrt(power / (snr * (e @ e)))
    return signal + e
