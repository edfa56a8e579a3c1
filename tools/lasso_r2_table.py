"""Table 1 of swope2024 (DP-SIS) for the shipped microarray sets: non-private Lasso R^2 at lambda = 0.1.

Usage::

    python tools/lasso_r2_table.py            # prints a Markdown table (our R^2 next to the paper's)

For each data set: the shipped X and y = class 1..K (see the data sets' provenance), the
paper's preprocessing (``--standardize dpsis``: centred columns, every column and the
target scaled to infinity-norm 1; swope2024 section 4.1), and scikit-learn's
``Lasso(alpha=0.1)`` (objective ``||y - X b - c||^2 / (2n) + 0.1 ||b||_1``, with intercept);
R^2 is the in-sample coefficient of determination (``Lasso.score``), as the paper reports
"R^2 for nonprivate LASSO regressions with lambda = 0.1" without a held-out split.
A second column gives R^2 on the raw data (no centring or scaling): the paper's section 5
footnote 3 says data sets that were "already scaled and centered" were not preprocessed,
and for some sets that reading matches better. Column ``nnz``: non-zero coefficients
under the dpsis preprocessing (the paper's lasso reference takes its top k of them).
"""

from __future__ import annotations

import sys
import warnings

import numpy as np

#: swope2024 Table 1: name -> (n, p, R^2).
PAPER = {
    "alon": (62, 2000, 0.4822), "borovecki": (31, 22283, 0.9011), "chowdary": (104, 22283, 0.8338),
    "christensen": (217, 1413, 0.7870), "golub": (72, 7129, 0.6819), "gordon": (181, 12533, 0.2432),
    "gravier": (168, 2905, 0.0689), "khan": (63, 2308, 0.6961), "shipp": (77, 7129, 0.4204),
    "singh": (102, 12600, 0.6449), "sorlie": (85, 457, 0.9300), "su": (102, 5564, 0.9602),
    "subramanian": (50, 10100, 0.5340), "west": (49, 7129, 0.7044),
}
ALPHA = 0.1


def lasso_r2(X, y, max_iter: int = 10_000) -> tuple[float, int]:
    """In-sample R^2 and non-zero count of ``sklearn.linear_model.Lasso(alpha=0.1)`` on (X, y)."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import Lasso

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = Lasso(alpha=ALPHA, max_iter=max_iter).fit(X, y)
    return float(model.score(X, y)), int(np.count_nonzero(model.coef_))


def table(names=None) -> list[dict]:
    """One row per data set: shapes and R^2 (ours with dpsis preprocessing, ours raw, the paper's)."""
    from dpbench.core.datafiles import standardize_arrays
    from dpbench.bench.registry import registry

    out = []
    for name in names or PAPER:
        arr = registry().dataset(name)().load()
        X, y, _ = standardize_arrays(arr.X, arr.y, "dpsis")
        r2, nnz = lasso_r2(X, y)
        r2_raw, _ = lasso_r2(arr.X, arr.y, max_iter=1000)  # sklearn's default effort on unscaled data
        n, p, paper = PAPER[name]
        out.append({"name": name, "shape": arr.X.shape, "paper_shape": (n, p), "r2": r2, "nnz": nnz,
                    "r2_raw": r2_raw, "paper": paper})
    return out


def markdown(rows) -> str:
    lines = ["| data set | n x p (ours) | n x p (paper) | R² ours (dpsis) | nnz | R² ours (raw) | R² paper |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['name']} | {r['shape'][0]} x {r['shape'][1]} | {r['paper_shape'][0]} x "
                     f"{r['paper_shape'][1]} | {r['r2']:.4f} | {r['nnz']} | {r['r2_raw']:.4f} | {r['paper']:.4f} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(markdown(table(sys.argv[1:] or None)), end="")
