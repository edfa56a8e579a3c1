"""The public surface for plugin authors: everything a plugin may import from dpbench.

A plugin -- built-in or third-party -- imports dpbench names from this module only
(``from dpbench.api import Selector, Param, hookimpl``); the built-in plugins in ``plugins/``
are held to it by ``tests/api/test_layers.py``. What is here:

* **the contracts** a plugin implements, one per hook of :mod:`dpbench.hookspecs`:
  :class:`Selector` (and what it returns, :class:`Draws`), :class:`Generator`,
  :class:`Dataset` (:class:`PackagedDataset` for data shipped in a Python package),
  :class:`Solver` with its :class:`OracleSession`, :class:`Loss`, :class:`PrivateEstimator`;
  the :class:`TrialView` a selector reads; declared parameters (:class:`Param`); typed
  preparations (:class:`Memo`, :class:`EpsilonCache`); the guarantee vocabulary
  (:data:`DP_TYPES`, :data:`REPLACE_ONE`, :data:`EXPONENTIAL_MECHANISM`, ...) and
  :data:`hookimpl`;
* **the host's tools** that a plugin legitimately shares rather than re-implements: the
  ridge score and its block solves, the sensitivities, the log-space exponential mechanism,
  the private top-k mechanisms, the (ε, δ) accountant, support utilities, the certified
  oracle's entry points for solver backends, and the swap levels / top-R list of ``topr`` and
  ``mistakes`` (``toplist``).

Anything else in dpbench is internal and may change without notice. The mathematics behind
each tool is in ``docs/`` (one page per method; ``docs/methods/score.md`` for the score).
"""

from dpbench.bench.registry import registry as _registry
from dpbench.core import toplist
from dpbench.core.contracts.data import Dataset, DatasetArrays, Generator
from dpbench.core.contracts.oracle import ORACLE_STATUSES, OracleResult, OracleSession, Solver, ThresholdResult
from dpbench.core.contracts.selector import (AGGREGATES, DP_TYPES, EXPONENTIAL_MECHANISM, NO_GUARANTEE, PREPROCESSING,
                                             REPLACE_ONE, BatchLogProb, Diagnostic, Draws, Selector, has_guarantee)
from dpbench.core.contracts.estimation import Estimates, PrivateEstimator
from dpbench.core.contracts.loss import Loss
from dpbench.core.contracts.trial import TrialView
from dpbench.core.packaged import PackagedDataset
from dpbench.core.errors import SolverLimitError, UnknownNameError, UserInputError
from dpbench.core.oracle import (MASTER_NODE_LIMIT, OA_PARAMS, OA_SPLIT, ConstraintSet, MasterResult, OASolver,
                                 ThresholdByCalls, break_ties, lexmin, tie_bar)
from dpbench.core.oracle.generic import GenericSession
from dpbench.core.params import Configurable, Param, int_or_inf
from dpbench.core.preparation import EpsilonCache, Memo, prepared_from_state, prepared_state
from dpbench.core.privacy.accounting import ACCOUNTANTS, accounting_diagnostics, calibrate
from dpbench.core.privacy.exponential import (check_epsilon, em_log_weights, gumbel_argmax, log_normalize,
                                              decided_by_bounds, inverse_cdf, probability_bounds, sample_log_weights)
from dpbench.core.privacy.joint_topk import joint_log_normaliser, joint_log_prob, joint_sample, joint_table
from dpbench.core.privacy.lipschitz import sample_members, select_class, utility_classes
from dpbench.core.privacy.sensitivity import (correlation_sensitivity, gradient_sensitivity, l1_sensitivity,
                                              sensitivity, vote_sensitivity)
from dpbench.core.privacy.topk import (LAPLACE_LAW_MAX_P, PNF_LAW_MAX_P, MarginalTopK, check_k,
                                       exponential_noise_peeling, gumbel_top_k, laplace_top_k, laplace_top_k_log_prob,
                                       marginal_scores, peeling_log_prob, pnf_peeling_log_prob, scale_for,
                                       set_log_prob, sorted_rows)
from dpbench.core.problem import Problem, add_noise_at_snr
from dpbench.core.score import RidgeScore, solve_blocks
from dpbench.core.score.gram import GRAM_MAX, GramProducts, gram_products
from dpbench.core.score.kendall import KendallRanks, concordance, kendall_ranks, strict_ranks
from dpbench.core.score.l1 import solve_l1_blocks
from dpbench.core.score.loss import Hinge, LeastSquares
from dpbench.core.supports import (iter_supports, log_binom, n_supports, support_ids, support_index,
                                   uniform_supports, unrank_support)
from dpbench.hookspecs import hookimpl


def dataset(name: str) -> type[Dataset]:
    """The registered data set class ``name`` (for a generator that plants a signal on a real design).

    Raises
    ------
    UnknownNameError
        If no data set of that name is registered (the message lists the known ones).
    """
    return _registry().dataset(name)


__all__ = [
    "ACCOUNTANTS", "AGGREGATES", "DP_TYPES", "EXPONENTIAL_MECHANISM", "GRAM_MAX", "LAPLACE_LAW_MAX_P",
    "MASTER_NODE_LIMIT", "NO_GUARANTEE", "OA_PARAMS", "OA_SPLIT", "ORACLE_STATUSES", "PNF_LAW_MAX_P", "PREPROCESSING",
    "REPLACE_ONE", "BatchLogProb", "Configurable", "ConstraintSet", "Dataset", "DatasetArrays", "Diagnostic", "Draws",
    "EpsilonCache", "Estimates", "GenericSession", "Generator", "GramProducts", "Hinge", "KendallRanks",
    "LeastSquares", "Loss", "MarginalTopK", "MasterResult", "Memo", "OASolver", "OracleResult", "OracleSession",
    "PackagedDataset", "Param", "PrivateEstimator", "Problem", "RidgeScore", "Selector", "Solver", "SolverLimitError",
    "ThresholdByCalls", "ThresholdResult", "TrialView", "UnknownNameError", "UserInputError", "accounting_diagnostics",
    "add_noise_at_snr", "break_ties", "calibrate", "check_epsilon", "check_k", "concordance", "correlation_sensitivity",
    "dataset", "decided_by_bounds", "em_log_weights", "exponential_noise_peeling", "gradient_sensitivity", "gram_products",
    "gumbel_argmax", "gumbel_top_k", "has_guarantee", "hookimpl", "int_or_inf", "inverse_cdf", "iter_supports", "joint_log_normaliser",
    "joint_log_prob", "joint_sample", "joint_table", "kendall_ranks", "l1_sensitivity", "laplace_top_k",
    "laplace_top_k_log_prob", "lexmin", "log_binom", "log_normalize", "marginal_scores", "n_supports",
    "peeling_log_prob", "pnf_peeling_log_prob", "prepared_from_state", "prepared_state", "probability_bounds", "sample_log_weights",
    "sample_members", "scale_for", "select_class", "sensitivity", "set_log_prob", "solve_blocks", "solve_l1_blocks",
    "sorted_rows", "strict_ranks", "support_ids", "support_index", "tie_bar", "toplist", "uniform_supports",
    "unrank_support", "utility_classes", "vote_sensitivity",
]
