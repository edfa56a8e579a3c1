"""The privacy audit (issue 23): statistics, agreement with the neighbour audits, built-ins,
controls, the command line and a third-party selector.

Every figure is deterministic (fixed seeds, named streams); thresholds are the guarantees
themselves (loss <= ε, hockey-stick <= δ, ε lower bound <= ε).
"""

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from audit_controls import CONTROLS, HalfSensitivityEM, LiteralDPSIS, MistakesClaimsPure
from flip_pair import flip_pair, trial_of
from scipy.stats import binomtest
from test_mistakes_ptr import _dist, hockey_stick as ptr_hockey_stick
from test_topr_mistakes import _max_ratio, neighbour_pairs, toeplitz_problem

from dpbench.bench.audit import QUICK_BUDGET, AuditSetup, Pair, audit_instance
from dpbench.bench.audit.engine import exact_pair
from dpbench.bench.audit.laws import clopper_pearson, clopper_pearson_scipy, evaluate_event, hockey_stick, privacy_loss
from dpbench.bench.audit.pairs import search_pairs
from dpbench.cli.main import main
from dpbench.bench.registry import Entry, registry
from dpbench.testing import all_supports, audit_selector
from dpbench_plugins.selectors.swaps.mistakes import Mistakes
from dpbench_plugins.selectors.swaps.mistakes_ptr import MistakesPTR
from dpbench_plugins.selectors.swaps.topr import TopR

BUILTINS = ("exhaustive", "topr", "mistakes", "mistakes-ptr", "dpsis", "sampagg", "mcmc")
THIRDPARTY = Path(__file__).parent / "thirdparty"


# --------------------------------------------------------------------------- statistics


def test_exact_statistics_against_direct_sums():
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.ones(12))
    q = rng.dirichlet(np.ones(12))
    p[3] = 0.0  # an output impossible under D only
    p /= p.sum()
    with np.errstate(divide="ignore"):
        lp, lq = np.log(p), np.log(q)
    loss, k = privacy_loss(lp, lq)
    assert loss == math.inf and k == 3
    loss, _ = privacy_loss(np.delete(lp, 3), np.delete(lq, 3))
    assert loss == pytest.approx(np.max(np.abs(np.log(np.delete(p, 3)) - np.log(np.delete(q, 3)))), rel=1e-12)
    for eps in (0.0, 0.3, 2.0):
        want = max(np.maximum(0, p - math.exp(eps) * q).sum(), np.maximum(0, q - math.exp(eps) * p).sum())
        assert hockey_stick(lp, lq, eps) == pytest.approx(want, rel=1e-10, abs=1e-15)


@pytest.mark.parametrize("k,n", [(0, 50), (7, 50), (50, 50), (311, 40000)])
def test_clopper_pearson_is_scipys_exact_interval(k, n):
    lo, hi = clopper_pearson(k, n, 0.025)
    ci = binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
    assert float(lo) == pytest.approx(ci.low, abs=1e-12) and float(hi) == pytest.approx(ci.high, abs=1e-12)
    assert clopper_pearson_scipy(k, n, 0.025) == pytest.approx((ci.low, ci.high), abs=1e-15)


def test_monte_carlo_bound_covers_a_known_ratio():
    """Two laws with P(E) = 0.2 and 0.2 e^-1 exactly (ε = 1 on E): over 60 seeds the 95 % lower
    bound exceeds the truth at most 5 % of the time (binomial tail: more than 10 of 60 has
    probability < 1e-3)."""
    above = 0
    for seed in range(60):
        rng = np.random.default_rng(seed)
        a = (rng.random(4000) < 0.2).astype(np.int64)[:, None]  # output 1 is the event E
        b = (rng.random(4000) < 0.2 / math.e).astype(np.int64)[:, None]
        above += evaluate_event({(1,)}, True, a, b, 0.0, 0.05)["epsilon_lb"] > 1.0
    assert above <= 10


# --------------------------------------------------------------------------- agreement with the neighbour audits


def _exact(sel, a, b, eps, delta=0.0):
    ta, tb = trial_of(a, delta=delta), trial_of(b, delta=delta)
    return exact_pair(sel, ta, sel.prepare(ta, None), tb, sel.prepare(tb, None), eps)


def test_exact_figures_agree_with_the_flip_pair_audits():
    """tests/test_mistakes_ptr.py's flip pair: plain mistakes loses > 1.45 ε there, its rows say
    'none: gap condition failed' (no finding), the control claiming pure ε is a finding, and
    mistakes-ptr's hockey-stick divergence is the same number both audits compute."""
    a, b = flip_pair()
    pa, _ = _dist(Mistakes(), trial_of(a), 1.0)
    pb, _ = _dist(Mistakes(), trial_of(b), 1.0)
    res = _exact(Mistakes(), a, b, 1.0)
    assert res.loss == pytest.approx(np.max(np.abs(np.log(pa) - np.log(pb))), rel=1e-12)
    assert res.loss > 1.45 and res.claim.startswith("none") and not res.finding
    assert res.hockey_stick == pytest.approx(ptr_hockey_stick(pa, pb, 1.0), rel=1e-9)
    bad = _exact(MistakesClaimsPure(), a, b, 1.0)
    assert bad.finding and bad.claim == "pure ε=1" and bad.loss == pytest.approx(res.loss, rel=1e-12)
    for eps, delta in ((1.0, 1e-6), (4.0, 1e-3)):
        sel = MistakesPTR(ptr_fraction=0.5)
        pa, _ = _dist(sel, trial_of(a, delta=delta), eps)
        pb, _ = _dist(sel, trial_of(b, delta=delta), eps)
        r = _exact(sel, a, b, eps, delta)
        assert r.hockey_stick == pytest.approx(ptr_hockey_stick(pa, pb, eps), rel=1e-9, abs=1e-15)
        assert r.claim == f"(ε={eps:g}, δ={delta:g})" and not r.finding


def test_exact_figures_agree_with_the_topr_audit_pairs():
    rng = np.random.default_rng(0)
    prob = toeplitz_problem(10, 7, 2, int(rng.integers(1 << 30))).clipped(0.5, 0.5)
    for a, b in list(neighbour_pairs(prob, rng, 0.5, 0.5, lam=1.0, k=2)):
        want = _max_ratio(TopR(), a, b, 0.5, lam=1.0)[0]
        from test_topr_mistakes import make_trial

        ta, tb = make_trial(a, lam=1.0), make_trial(b, lam=1.0)
        sel = TopR()
        got = exact_pair(sel, ta, sel.prepare(ta, None), tb, sel.prepare(tb, None), 0.5)
        assert got.loss / 0.5 == pytest.approx(want, rel=1e-9, abs=1e-12) and not got.finding


# --------------------------------------------------------------------------- search


def test_pairs_are_reproducible_and_round_trip():
    a = search_pairs(3, [(20, 7, 2), (12, 8, 3)], 30, 1.0, 1.1)
    b = search_pairs(3, [(20, 7, 2), (12, 8, 3)], 30, 1.0, 1.1)
    assert [x.spec() for x in a] == [x.spec() for x in b] and len({x.spec() for x in a}) == 30
    assert {x.family for x in a} == {"iid", "toeplitz", "twins", "tied"}
    for x in a:
        assert Pair.parse(x.spec()) == x and x.u != x.v
    with pytest.raises(Exception, match="family:n:p:s:seed:row:u:v"):
        Pair.parse("nonsense")


def test_audit_is_reproducible_from_its_seed_and_the_printed_pair():
    sel = HalfSensitivityEM()
    one = audit_instance(sel, sel.name, AuditSetup(), QUICK_BUDGET, seed=5)
    two = audit_instance(sel, sel.name, AuditSetup(), QUICK_BUDGET, seed=5)
    assert one.to_dict() == two.to_dict()
    again = audit_instance(sel, sel.name, AuditSetup(), QUICK_BUDGET, seed=5, pairs=[one.worst.spec])
    assert again.worst.loss == one.worst.loss and again.pairs_tried == 1


# --------------------------------------------------------------------------- built-ins and controls


#: Pairs the default-budget search found for each control (seed 0); re-audited here in seconds.
#: The slow tests below re-run the search itself.
CAUGHT = {
    "mistakes-claims-pure": "twins:200:7:2:14:144:-4,-2,-4,4,-4,-4,-1,-2:-1,4,-4,4,4,-4,-4,-4",
    "em-half-sensitivity": "toeplitz:200:7:2:13:103:2,-4,4,-4,1,4,4,4:4,-4,4,-4,4,0,2,-4",
    "reference-reader": "toeplitz:20:7:2:1:14:-4,4,-4,4,-4,-4,-4,4:-3,-2,0,4,3,-3,-1,-4",
    "sampagg-half-noise": "twins:20:7:2:2:7:-4,-4,4,4,4,4,4,4:4,-4,4,4,4,4,4,-4",
    "dpsis-literal": "twins:100:8:3:6:0:-4,-4,4,4,4,-4,-4,4,4:4,4,4,4,1,-4,-4,4,-4",
}


@pytest.mark.parametrize("name", sorted(CAUGHT))
def test_control_is_caught_on_its_pair(name):
    cls = next(c for c in CONTROLS if c.name == name)
    audit = audit_selector(cls, pairs=[CAUGHT[name]])
    w = audit.worst
    assert audit.finding and w.finding and w.claim == "pure ε=1", audit.to_dict()
    figure = w.loss if audit.mode == "exact" else w.epsilon_lb
    assert figure > 1.0
    assert CAUGHT[name] in audit.reproduce


@pytest.mark.parametrize("name", BUILTINS[:4])
def test_exact_builtins_hold_their_guarantee_quick(name):
    audit = audit_selector(registry().selector(name), quick=True)
    assert audit.mode == "exact" and not audit.finding and audit.worst is not None, audit.to_dict()
    assert audit.errors == 0


@pytest.mark.full
@pytest.mark.parametrize("name", BUILTINS)
def test_builtins_hold_their_guarantee_at_the_default_budget(name):
    audit = audit_selector(registry().selector(name))
    assert not audit.finding and audit.errors == 0, audit.to_dict()
    if name == "mcmc":
        assert audit.verdict == "nothing claimed" and audit.claims == ["none: mixing not established"]


@pytest.mark.full
@pytest.mark.parametrize("cls", CONTROLS, ids=lambda c: c.name)
def test_every_control_is_caught_at_the_default_budget(cls):
    audit = audit_selector(cls)
    assert audit.finding, audit.to_dict()
    figure = audit.worst.loss if audit.mode == "exact" else audit.worst.epsilon_lb
    assert figure > 1.0


# --------------------------------------------------------------------------- command line


def _register(monkeypatch, *classes):
    for cls in classes:
        monkeypatch.setitem(registry().entries["selector"], cls.name, Entry(cls.name, cls, "tests", "tests"))


def test_cli_exits_1_on_a_finding_with_the_reproducing_command(monkeypatch, capsys, tmp_path):
    _register(monkeypatch, MistakesClaimsPure)
    js = tmp_path / "a.json"
    spec = CAUGHT["mistakes-claims-pure"]
    assert main(["audit", "--methods", "mistakes-claims-pure,exhaustive", "--pair", spec, "--json", str(js),
                 "--out", str(tmp_path / "r.db")]) == 1
    out = capsys.readouterr().out
    assert "FINDING" in out and "--pair" in out and "mistakes-claims-pure" in out
    data = json.loads(js.read_text())
    verdicts = {a["method"]: a["verdict"] for a in data["audits"]}
    assert verdicts == {"mistakes-claims-pure": "FINDING", "exhaustive": "ok"}
    assert (tmp_path / "r.db.audit.json").is_file()


def test_cli_quick_exact_builtins_exit_0(capsys):
    assert main(["audit", "--methods", "exhaustive,mistakes", "--quick", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    by = {a["method"]: a for a in data["audits"]}
    assert by["exhaustive"]["verdict"] == "ok" and by["exhaustive"]["mode"] == "exact"
    assert all(not a["finding"] for a in data["audits"])


@pytest.mark.parametrize("argv,message", [
    (["--methods", "no-such-selector"], "no-such-selector"),
    (["--methods", "exhaustive", "--pair", "garbage"], "family:n:p:s"),
    (["--methods", "exhaustive", "--epsilon", "-1"], "epsilon"),
    (["--methods", "exhaustive", "--budget", "0"], "--budget"),
    (["--methods", "exhaustive", "--seed", "-3"], "--seed"),
    (["--methods", "exhaustive", "--lam", "-1"], "--lam"),
    (["--methods", "exhaustive", "--confidence", "1.5"], "--confidence"),
    (["--methods", "exhaustive", "--sweep", "nosuch=1,2"], "nosuch"),
    (["--methods", "exhaustive", "--plot", "/nonexistent-dir/x.png"], "does not exist"),
])
def test_cli_bad_input_is_one_line_and_exit_2(argv, message, capsys):
    assert main(["audit", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_html_report_shows_the_audit(tmp_path, capsys):
    db = tmp_path / "r.db"
    assert main(["compare", "--methods", "exhaustive", "--p", "6", "--n", "30", "--s", "2", "--trials", "1",
                 "--draws", "2", "--out", str(db)]) == 0
    assert main(["audit", "--methods", "exhaustive", "--pair", CAUGHT["em-half-sensitivity"], "--out", str(db)]) == 0
    html = tmp_path / "r.html"
    assert main(["report", str(db), "--html", str(html)]) == 0
    text = html.read_text()
    assert "Privacy audit" in text and "exhaustive" in text and "pure ε=1" in text


def test_plot_of_an_audit(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    png = tmp_path / "a.png"
    assert main(["audit", "--methods", "exhaustive", "--pair", CAUGHT["em-half-sensitivity"], "--plot", str(png)]) == 0
    assert png.stat().st_size > 1000


# --------------------------------------------------------------------------- third-party selectors


def test_third_party_selectors_audited_from_their_source(monkeypatch):
    """docs/plugins.md's `random` example holds its claim; its leaky variant is caught (Monte-Carlo)."""
    monkeypatch.syspath_prepend(str(THIRDPARTY))
    monkeypatch.delitem(sys.modules, "dpbench_coinflip.random_example", raising=False)
    from dpbench_coinflip.random_example import LeakyRandom, RandomSupport

    ok = audit_selector(RandomSupport, quick=True)
    assert ok.mode == "monte-carlo" and not ok.finding and ok.verdict == "ok"
    bad = audit_selector(LeakyRandom, quick=True)
    assert bad.finding and bad.worst.epsilon_lb > 1.0


@pytest.mark.slow
def test_installed_third_party_package_audited_by_the_cli(tmp_path):
    """pip-install tests/thirdparty elsewhere; `dpbench audit` finds its selectors by entry point."""
    target, build = tmp_path / "site", tmp_path / "src"
    shutil.copytree(THIRDPARTY, build)
    pip = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "-q",
                          "--target", str(target), str(build)], capture_output=True, text=True, timeout=300)
    assert pip.returncode == 0, pip.stderr
    env = {**os.environ, "PYTHONPATH": str(target)}
    run = [sys.executable, "-m", "dpbench.cli", "audit", "--quick", "--json", "--methods"]
    good = subprocess.run([*run, "random"], capture_output=True, text=True, env=env, timeout=300)
    assert good.returncode == 0, good.stderr
    assert json.loads(good.stdout)["audits"][0]["verdict"] == "ok"
    bad = subprocess.run([*run, "leaky-random"], capture_output=True, text=True, env=env, timeout=300)
    assert bad.returncode == 1, bad.stderr
    assert json.loads(bad.stdout)["audits"][0]["verdict"] == "FINDING"


@pytest.mark.slow
def test_literal_dpsis_control_law_is_its_sampler():
    """The control's quadrature law matches its own draws (the conformance chi-square test)."""
    from dpbench.testing import check_selector

    check_selector(LiteralDPSIS)
    assert all_supports(4, 2).shape == (6, 2)
