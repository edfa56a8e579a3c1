"""The ``roy-tewari`` generator (the authors' main.py design) and the bss reference on simulations."""

import json
import math

import numpy as np
import pytest

from dpbench import UserInputError
from dpbench.cli.main import main
from dpbench.bench.registry import registry


@pytest.mark.parametrize("signal, factor", [("strong", 4), ("weak", 1)])
def test_design_is_the_authors(signal, factor):
    n, p, s = 300, 50, 4
    pr = registry().generator("roy-tewari")(n=n, p=p, s=s, signal=signal).generate(np.random.default_rng(0))
    X, y = pr.X, pr.y
    np.testing.assert_allclose(np.abs(X).max(axis=1), 1.0)  # each row scaled to max-norm 1
    assert np.all(np.sum(np.abs(X) == 1.0, axis=1) >= 1)
    assert pr.true_support.tolist() == [0, 1, 2, 3]
    beta = 2 * math.sqrt(factor * math.log(p) / n)
    e = y - beta * X[:, :s].sum(axis=1)
    assert np.abs(e).max() <= 0.1 and np.abs(e).max() > 0.09  # U[-0.1, 0.1] noise, n = 300 draws
    assert abs(e.mean()) < 4 * 0.1 / math.sqrt(3 * n)  # mean 0 within 4 standard errors
    # before scaling the rows are standard normal: the scale factor is the row's max |z|
    # (for p = 50 its median is about 2.4), so the entries have sd about 1/2.4
    assert 0.3 < X[:, s:].std() < 0.55


def test_uniform_design_and_bad_values():
    pr = registry().generator("roy-tewari")(n=2000, p=20, s=3, design="uniform").generate(np.random.default_rng(1))
    assert np.abs(pr.X).max() <= 1 and abs(pr.X.var() - 1 / 3) < 0.01  # U[-1, 1]: variance 1/3
    with pytest.raises(UserInputError):
        registry().generator("roy-tewari")(signal="medium")
    with pytest.raises(UserInputError):
        registry().generator("roy-tewari")(p=4, s=4).generate(np.random.default_rng(0))


def test_reference_bss_is_allowed_on_simulated_data(tmp_path):
    out = tmp_path / "s.json"
    assert main(["compare", "--methods", "exhaustive", "--generator", "roy-tewari", "--n", "200", "--p", "12",
                 "--s", "2", "--trials", "1", "--draws", "5", "--reference", "bss",
                 "--out", str(tmp_path / "r.db"), "--json", str(out)]) == 0
    (row,) = json.loads(out.read_text())
    assert row["reference"] == "bss" and row["failed"] == 0
