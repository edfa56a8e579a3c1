"""Generator ``planted``: a sparse signal planted on the design matrix of a real data set.

Exact recovery cannot be measured on real data (the true support is unknown); planting
beta* on a real design keeps its correlation structure while making the truth known
(the DP-SIS real-data setting of swope2024 with a known signal; issue 7).

Per trial, with the trial's rng and in this order:

1. optionally subsample ``n`` of the data set's rows without replacement (sorted);
2. standardise every column of that design to mean 0 and unit variance (population
   standard deviation, ddof = 0), so the design has the marginal scale of the ``toeplitz``
   design; a column that is constant on the chosen rows is set to 0 and never planted;
3. choose the support: ``s`` distinct non-constant columns uniformly at random (sorted);
4. beta*_j = 1/sqrt(s) on the support (``signs="positive"``, the toeplitz convention,
   docs/reproductions.md) or +-1/sqrt(s) with independent fair random signs
   (``signs="random"``);
5. y = X beta* + e with e Gaussian, rescaled so that ||X beta*||^2 / ||e||^2 = snr exactly
   (:func:`dpbench.core.problem.add_noise_at_snr`, the toeplitz noise model).

The design is public simulation input here; its standardisation is part of the
simulation design, not a preprocessing of private data.
"""

from __future__ import annotations

import numpy as np

from dpbench.api import Generator, Param, Problem, UserInputError, add_noise_at_snr, dataset, hookimpl

# Designs are read once per process (sha256-checked by the data-set plugin) and kept
# read-only: a run draws many trials from the same design.
_DESIGNS: dict[str, tuple[np.ndarray, dict]] = {}


def load_design(name: str) -> tuple[np.ndarray, dict]:
    """The design matrix (read-only float64, (n, p)) and provenance of registered data set ``name``.

    Raises
    ------
    UnknownNameError
        If no data set of that name is registered (the message lists the known ones).
    """
    if name not in _DESIGNS:
        ds = dataset(name)
        X = np.array(ds().load().X, dtype=np.float64)
        X.setflags(write=False)
        _DESIGNS[name] = (X, dict(ds.provenance))
    return _DESIGNS[name]


def _optional_int(v):
    if v is None or (isinstance(v, str) and v.strip().lower() in ("", "none", "all")):
        return None
    f = float(v)
    if f != int(f):
        raise ValueError("expected an integer or 'all'")
    return int(f)


class Planted(Generator):
    """Sparse beta* planted on s random columns of a real (standardised) design at an exact SNR."""

    name = "planted"
    summary = ("real design (standardised columns) with beta* = 1/sqrt(s) on s random columns, exact SNR; "
               "measures exact recovery on real correlations")
    params = {
        "design": Param("nci60", "registered data set whose design matrix is used (nci60, khan, ...)", str),
        "n": Param(None, "rows subsampled without replacement per trial (default: all rows)", _optional_int),
        "s": Param(5, "sparsity level (number of planted columns)", int),
        "snr": Param(5.0, "signal-to-noise ratio ||X beta*||^2 / ||e||^2 (exact)", float, interval=(0, None, "neither")),
        "signs": Param("positive", "signs of beta*: all positive, or independent random +-1", str,
                       choices=("positive", "random")),
    }

    def generate(self, rng: np.random.Generator) -> Problem:
        """Draw one planted problem (see the module docstring for the exact recipe).

        Returns
        -------
        Problem
            ``X`` (n, p) standardised design, ``y`` (n,), ``true_support`` (s,) sorted.

        Raises
        ------
        UserInputError
            If ``n`` exceeds the data set's rows or is < 2, ``s`` is not in
            ``1 .. (number of non-constant columns)`` and ``< p``, or ``snr <= 0``.
        """
        c = self.config
        X0, prov = load_design(c["design"])
        n0, p = X0.shape
        n, s, snr = c["n"], c["s"], c["snr"]
        if not (np.isfinite(snr) and snr > 0):
            raise UserInputError(f"snr = {snr} must be positive and finite")
        if n is None or n == n0:
            X = np.array(X0)
            rows = None
        else:
            if not 2 <= n <= n0:
                raise UserInputError(f"planted: n = {n} rows requested but design {c['design']!r} has {n0}; "
                                     f"use 2 <= n <= {n0}")
            rows = np.sort(rng.choice(n0, size=n, replace=False))
            X = X0[rows]
        X = X - X.mean(axis=0)
        sd = X.std(axis=0)
        live = np.flatnonzero(sd > 0)
        X = X / np.where(sd > 0, sd, 1.0)
        X[:, sd == 0] = 0.0
        if not 1 <= s < p or s > live.size:
            raise UserInputError(f"planted: s = {s} must satisfy 1 <= s < p = {p} and s <= {live.size} "
                                 f"(the non-constant columns of design {c['design']!r} on the chosen rows)")
        support = np.sort(rng.choice(live, size=s, replace=False))
        beta = np.full(s, 1.0 / np.sqrt(s))
        if c["signs"] == "random":
            beta *= rng.choice(np.array([-1.0, 1.0]), size=s)
        signal = X[:, support] @ beta
        y = add_noise_at_snr(rng, signal, snr)
        provenance = {**self.setting(), "design_sha256": prov.get("sha256"),
                      "beta": beta.tolist(), "standardized": "columns mean 0, sd 1 (ddof 0)"}
        if rows is not None:
            provenance["rows"] = rows.tolist()
        return Problem(X, y, s, true_support=support, name=self.name, provenance=provenance)


@hookimpl
def dpbench_generators():
    return [Planted]
