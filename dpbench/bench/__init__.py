"""Running a benchmark: the plugin registry, trials, configuration, the runner, evaluation, audits and results.

In the order of ``dpbench compare`` (docs/architecture.md): :mod:`~dpbench.bench.config`
builds and checks the :class:`~dpbench.bench.config.RunConfig`; :mod:`~dpbench.bench.run`
plans the trials and runs each (:func:`~dpbench.bench.run.run_trial`) on the backend of
:mod:`~dpbench.bench.backends`; a trial is a :class:`~dpbench.bench.trial.Trial` whose plugins
come from :mod:`~dpbench.bench.registry`; :mod:`~dpbench.bench.selection` runs one selector on
it; :mod:`~dpbench.bench.evaluation` scores the outputs; :mod:`~dpbench.bench.results` stores
and summarises the rows. Nothing here is imported by :mod:`dpbench.core`.
"""
