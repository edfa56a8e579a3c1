"""The public conformance suite (dpbench.testing) over every registered plugin, and its power.

Every registered selector, solver and generator must pass ``check_*``; deliberately broken
selectors must fail with a message naming what is wrong; registration refuses classes and
modules that break the contract, with one warning naming the distribution.
"""

import sys
import types
import warnings
from pathlib import Path

import numpy as np
import pluggy
import pytest

from dpbench.api import Draws, Selector, hookimpl
from dpbench.core.contracts.selector import EXPONENTIAL_MECHANISM
from dpbench.core.preparation import Memo
from dpbench.core.errors import SolverLimitError
from dpbench.bench.registry import build_registry, check_plugin_class, registry
from dpbench.core.supports import uniform_supports
from dpbench.testing import (all_supports, check_generator, check_selector, check_solver,
                             exponential_mechanism_log_probs, tiny_trial)

REG = registry()

#: Small settings for the built-in generators (the conformance check draws three data sets).
GENERATOR_PARAMS = {
    "toeplitz": {"n": 30, "p": 8, "s": 3},
    "planted": {"design": "diabetes", "n": 40, "s": 3},
    "sis-w1": {"n": 30, "p": 12, "s": 3},
    "sis-w1w2": {"n": 30, "p": 12, "s": 3},
}
#: Parameters that keep a built-in selector's check fast on the tiny problems.
SELECTOR_PARAMS = {"mcmc": {"iterations": 50}}


@pytest.mark.parametrize("name", REG.names("selector"))
def test_registered_selector_conforms(name):
    check_selector(REG.selector(name), **SELECTOR_PARAMS.get(name, {}))


@pytest.mark.parametrize("name", REG.names("solver"))
def test_registered_solver_conforms(name):
    if "least-squares" not in REG.solver(name).losses:  # checked on its own loss (tests/test_hinge.py)
        pytest.skip(f"solver {name!r} serves only the losses {REG.solver(name).losses}")
    try:
        check_solver(REG.solver(name))
    except SolverLimitError as exc:
        pytest.skip(f"solver {name!r} unavailable here: {exc}")


@pytest.mark.parametrize("name", REG.names("generator"))
def test_registered_generator_conforms(name):
    check_generator(REG.generator(name), **GENERATOR_PARAMS.get(name, {}))


@pytest.mark.parametrize("name", REG.names("dataset"))
def test_registered_dataset_class_conforms(name):
    check_plugin_class("dataset", REG.dataset(name))


def test_third_party_test_package_conforms(monkeypatch):
    """The selector of tests/thirdparty, imported from its source tree (no install needed)."""
    monkeypatch.syspath_prepend(str(Path(__file__).parent / "thirdparty"))
    monkeypatch.delitem(sys.modules, "dpbench_coinflip.plugin", raising=False)
    from dpbench_coinflip.plugin import CoinFlip

    check_selector(CoinFlip)


# --------------------------------------------------------------------------- broken selectors


class Good(Selector):
    """The exponential mechanism by brute force: the reference the broken ones start from."""

    name = "good"
    summary = "test only"
    dp_type = "pure"
    output_law = EXPONENTIAL_MECHANISM

    def prepare(self, trial, rng):
        return {"S": all_supports(trial.p, trial.s)}

    def _lp(self, trial, epsilon):
        return exponential_mechanism_log_probs(trial, epsilon)[1]

    def draw(self, trial, prepared, epsilon, n_draws, rng):
        lp = self._lp(trial, epsilon)
        k = rng.choice(len(lp), size=n_draws, p=np.exp(lp) / np.exp(lp).sum())
        return Draws(prepared["S"][k].copy())

    def log_prob(self, trial, prepared, epsilon, support):
        k = int(np.flatnonzero((prepared["S"] == np.sort(support)).all(axis=1))[0])
        return float(self._lp(trial, epsilon)[k])


def test_reference_selector_passes():
    check_selector(Good)


class WrongShape(Good):
    def draw(self, trial, prepared, epsilon, n_draws, rng):
        return Draws(super().draw(trial, prepared, epsilon, n_draws, rng).supports[:, :-1])


class Unsorted(Good):
    def draw(self, trial, prepared, epsilon, n_draws, rng):
        return Draws(super().draw(trial, prepared, epsilon, n_draws, rng).supports[:, ::-1].copy())


class Placeholder(Good):
    """bss's old behaviour: -1 rows for an uncertified trial."""

    def draw(self, trial, prepared, epsilon, n_draws, rng):
        return Draws(np.full((n_draws, trial.s), -1, dtype=np.int64), certified=False)


class Float(Good):
    def draw(self, trial, prepared, epsilon, n_draws, rng):
        return Draws(super().draw(trial, prepared, epsilon, n_draws, rng).supports.astype(float))


class Mutates(Good):
    def draw(self, trial, prepared, epsilon, n_draws, rng):
        prepared["S"][[0, 1]] = prepared["S"][[1, 0]]  # e.g. an in-place reorder
        return super().draw(trial, prepared, epsilon, n_draws, rng)


class WrongEpsilon(Good):
    """log_prob and draw both at 2 epsilon: consistent with each other, not the mechanism."""

    def _lp(self, trial, epsilon):
        return super()._lp(trial, 2 * epsilon)


class WrongLaw(Good):
    """Draws uniformly but claims the exponential mechanism's probabilities (no output_law)."""

    output_law = None

    def draw(self, trial, prepared, epsilon, n_draws, rng):
        return Draws(uniform_supports(rng, trial.p, trial.s, n_draws))


class Unnormalised(Good):
    output_law = None

    def log_prob(self, trial, prepared, epsilon, support):
        return super().log_prob(trial, prepared, epsilon, support) + 0.1


class GlobalRandom(Good):
    def draw(self, trial, prepared, epsilon, n_draws, rng):
        return super().draw(trial, prepared, epsilon, n_draws, np.random.default_rng())


class History(Good):
    """Keeps state on the instance: every draw depends on how many came before."""

    def draw(self, trial, prepared, epsilon, n_draws, rng):
        self.calls = getattr(self, "calls", 0) + 1
        rng.integers(0, 2, size=self.calls)  # consumes a history-dependent amount
        return super().draw(trial, prepared, epsilon, n_draws, rng)


class BadMemo(Good):
    """A per-epsilon cache keyed by nothing: later epsilons reuse the first one's law."""

    def prepare(self, trial, rng):
        return {**super().prepare(trial, rng), "memo": Memo()}

    def _lp(self, trial, epsilon):
        raise AssertionError("unused")

    def draw(self, trial, prepared, epsilon, n_draws, rng):
        lp = prepared["memo"].setdefault("lp", exponential_mechanism_log_probs(trial, epsilon)[1])
        k = rng.choice(len(lp), size=n_draws, p=np.exp(lp) / np.exp(lp).sum())
        return Draws(prepared["S"][k].copy())

    log_prob = Selector.log_prob


class BadStore(Good):
    """Stores its preparation but reloads it in another order."""

    def save_prepared(self, prepared):
        return {"S": prepared["S"]}

    def load_prepared(self, state):
        return {"S": state["S"][::-1].copy()}


class Unstorable(Good):
    def save_prepared(self, prepared):
        return {"S": np.array([object()] * 2)}


@pytest.mark.parametrize("cls, message", [
    (WrongShape, r"has shape \(7, \d\), expected \(n_draws, s\) = \(7, \d\)"),
    (Unsorted, r"not sorted ascending"),
    (Placeholder, r"outside \[0, p\).*never -1 placeholders"),
    (Float, r"dtype float64, expected int64"),
    (Mutates, r"draw at epsilon=0.5 mutated `prepared` at prepared\['S'\]"),
    (WrongEpsilon, r"declares output_law = 'exponential-mechanism' but at epsilon=0.5 P\(\["),
    (WrongLaw, r"frequencies of 4000 draws at epsilon=4.0 disagree with exp\(log_prob\)"),
    (Unnormalised, r"sum to 1.10517"),
    (GlobalRandom, r"two draws with the same rng seed differ"),
    (History, r"two draws with the same rng seed differ at epsilon=0.5 \(supports \[\["),
    (BadMemo, r"draws at epsilon=40.0 depend on what ran before"),
    (BadStore, r"draws at epsilon=0.5 from the stored and reloaded preparation differ from those of the fresh one"),
    (Unstorable, r"save_prepared gave a state the results store cannot hold without pickle \(artefact field 'S' "
                 r"is an object array\)"),
], ids=lambda v: v.__name__ if isinstance(v, type) else "")
def test_broken_selector_fails_with_the_reason(cls, message):
    cls.name = cls.__name__.lower()
    with pytest.raises(AssertionError, match=message):
        check_selector(cls, problems=((40, 6, 2, 0),))


def test_undeclared_dp_type_fails_the_check():
    class NoDP(Good):
        dp_type = None

    with pytest.raises(AssertionError, match=r"dp_type=None; set dp_type to one of pure, approximate, none"):
        check_selector(NoDP)


def test_bss_without_any_support_fails_the_row_instead_of_minus_one():
    from dpbench.core.contracts.oracle import OracleResult

    trial = tiny_trial(solver="enumerate")
    trial.cache[("optimum", "enumerate")] = OracleResult(None, np.inf, 0.0, "time_limit", message="limit")
    sel = REG.selector("bss")()
    with pytest.raises(RuntimeError, match=r"found no support \(status time_limit: limit\)"):
        sel.draw(trial, sel.prepare(trial, None), 1.0, 3, None)


# --------------------------------------------------------------------------- registration


def _module(name, **attrs):
    mod = types.ModuleType(name)
    mod.__dict__.update(attrs)
    return mod


def test_misspelled_hook_warns_once_naming_the_distribution():
    @hookimpl
    def dpbench_selector():  # missing "s"
        return [Good]

    @hookimpl
    def dpbench_selectors():
        return [Good]

    typo = _module("typo_plugin", dpbench_selector=dpbench_selector)
    fine = _module("fine_plugin", dpbench_selectors=dpbench_selectors)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        reg = build_registry([("typo", typo, "typo-dist 1.0"), ("fine", fine, "fine-dist 2.0")],
                             entry_points=False)
    messages = [str(w.message) for w in caught]
    assert len(messages) == 1, messages
    assert "typo-dist 1.0" in messages[0] and "'dpbench_selector' (did you mean 'dpbench_selectors'?)" in messages[0]
    assert reg.names("selector") == ["good"] and reg.entries["selector"]["good"].distribution == "fine-dist 2.0"
    # what check_pending alone would have done: stop everything
    pm = pluggy.PluginManager("dpbench")
    from dpbench import hookspecs

    pm.add_hookspecs(hookspecs)
    pm.register(typo)
    with pytest.raises(pluggy.PluginValidationError):
        pm.check_pending()


class _NoName(Good):
    name = ""


class _BadParams(Good):
    name = "badparams"
    params = {"k": 3}


class _NoNeighbours(Good):
    name = "noneighbours"
    neighbouring = ""


class _Abstract(Selector):
    name = "abstract"
    dp_type = "pure"


class _BadDiagnostics(Good):
    name = "baddiagnostics"
    diagnostics = {"x": "mean"}  # a plain string, not a Diagnostic: summaries could not aggregate it


@pytest.mark.parametrize("obj, message", [
    (int, r"is not a subclass of dpbench.core.contracts.Selector"),
    (_Abstract, r"does not implement draw"),
    (_NoName, r"has no name"),
    (_BadParams, r"params must be a dict of dpbench.core.contracts.Param"),
    (_NoNeighbours, r"declares no neighbouring relation"),
    (_BadDiagnostics, r"diagnostics must be a dict of dpbench.core.contracts.Diagnostic"),
], ids=["not-a-selector", "abstract", "no-name", "bad-params", "no-neighbouring", "bad-diagnostics"])
def test_registration_skips_a_broken_class_with_one_warning(obj, message):
    @hookimpl
    def dpbench_selectors():
        return [obj, Good]

    with pytest.warns(UserWarning, match=message) as caught:
        reg = build_registry([("broken", _module("broken", dpbench_selectors=dpbench_selectors), "broken-dist 0.1")],
                             entry_points=False)
    assert len(caught) == 1 and "broken-dist 0.1" in str(caught[0].message)
    assert reg.names("selector") == ["good"]


def test_duplicate_name_keeps_the_first():
    @hookimpl
    def dpbench_selectors():
        return [Good]

    with pytest.warns(UserWarning, match=r"selector 'good' from b-dist ignored: already provided by a-dist") as caught:
        reg = build_registry([("a", _module("a", dpbench_selectors=dpbench_selectors), "a-dist"),
                              ("b", _module("b", dpbench_selectors=dpbench_selectors), "b-dist")],
                             entry_points=False)
    assert len(caught) == 1 and reg.entries["selector"]["good"].distribution == "a-dist"

