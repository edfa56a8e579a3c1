"""The contracts a plugin implements, one module each (all re-exported by :mod:`dpbench.api`).

* :mod:`~dpbench.core.contracts.selector` -- :class:`Selector`, :class:`Draws`, the row
  guarantee (:func:`has_guarantee`), :data:`EXPONENTIAL_MECHANISM`, :class:`BatchLogProb`;
* :mod:`~dpbench.core.contracts.trial` -- :class:`TrialView`, what a selector reads of a trial;
* :mod:`~dpbench.core.contracts.oracle` -- :class:`Solver`, :class:`OracleSession`,
  :class:`OracleResult`, :class:`ThresholdResult`;
* :mod:`~dpbench.core.contracts.data` -- :class:`Generator`, :class:`Dataset`, :class:`DatasetArrays`;
* :mod:`~dpbench.core.contracts.loss` -- :class:`Loss`;
* :mod:`~dpbench.core.contracts.estimation` -- :class:`PrivateEstimator`, :class:`Estimates`.

Declared parameters (:class:`~dpbench.core.params.Param`) and typed preparations
(:mod:`dpbench.core.preparation`) sit beside them in :mod:`dpbench.core`. A plugin imports
all of these from :mod:`dpbench.api`, never from here.
"""
