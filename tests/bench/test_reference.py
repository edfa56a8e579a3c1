"""The bss reference: a certified optimum or one line that says what to change."""

import pytest

from dpbench.bench.evaluation.reference import compute_reference
from dpbench.core.errors import UserInputError

from helpers.exact import copies_problem, highs_trial


def test_an_uncertified_bss_reference_names_the_limit_to_raise():
    """Issue 22: the optimum stopped by its node limit stops the run with the option to raise."""
    trial = highs_trial(copies_problem(0, p=16, s=4), 2.0, enum_limit=0, leaf_limit=1, node_limit=1)
    res = trial.optimum()
    assert res.status == "work_limit" and "node_limit = 1 " in res.message, res
    with pytest.raises(UserInputError, match=r"--param highs\.node_limit=10\), use --reference lasso or sis"):
        compute_reference("bss", trial)
    certified = highs_trial(copies_problem(0, p=16, s=4), 2.0)
    assert compute_reference("bss", certified).tolist() == certified.optimum().support.tolist()
