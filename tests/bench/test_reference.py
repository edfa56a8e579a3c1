"""The bss reference: a certified optimum, or a reason that says what to change."""

import pytest

from dpbench.bench.evaluation.reference import UncertifiedReference, compute_reference
from dpbench.core.errors import UserInputError

from helpers.exact import copies_problem, highs_trial


def test_an_uncertified_bss_reference_names_the_limit_to_raise():
    """Issue 22: the optimum stopped by its node limit gives no reference, and says what to raise.

    Not a UserInputError (exit 2): the run goes on and keeps the trial's rows."""
    trial = highs_trial(copies_problem(0, p=16, s=4), 2.0, enum_limit=0, leaf_limit=1, pair_leaf_limit=0, node_limit=1)
    res = trial.optimum()
    assert res.status == "work_limit" and "node_limit = 1 " in res.message, res
    with pytest.raises(UncertifiedReference, match=r"--param highs\.node_limit=10\), use --reference lasso or sis") as exc:
        compute_reference("bss", trial)
    assert not isinstance(exc.value, UserInputError)
    certified = highs_trial(copies_problem(0, p=16, s=4), 2.0)
    assert compute_reference("bss", certified).tolist() == certified.optimum().support.tolist()


def test_an_unknown_reference_is_bad_input():
    with pytest.raises(UserInputError, match="unknown reference 'best'"):
        compute_reference("best", highs_trial(copies_problem(0, p=16, s=4), 2.0))
