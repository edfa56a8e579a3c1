"""The runner: plans the trials of a configuration, runs them on a backend and stores each row.

:func:`plan` lists the trial tasks not yet in the database (resume skips finished work);
:func:`execute` hands them to the backend (:func:`dpbench.bench.backends.backend_results`),
which runs the worker :func:`dpbench.bench.worker.run_trial` on each, and writes every
trial's rows as soon as it finishes. Only this (coordinating) process writes to the database.
"""

from __future__ import annotations

import contextlib
from dataclasses import asdict

from dpbench.bench.backends import backend_results
from dpbench.bench.config import RunConfig
from dpbench.bench.keys import artefact_key, row_key
from dpbench.bench.signals import held
from dpbench.bench.worker import TrialTask, run_trial


def plan(cfg: RunConfig, done: set[str] = frozenset()) -> list[TrialTask]:
    """All trial tasks with rows not yet in ``done`` (resume skips finished work)."""
    tasks = []
    for setting in cfg.data:
        for t in range(cfg.trials):
            jobs = []
            for m in cfg.methods:
                eps = [e for e in cfg.epsilons if row_key(cfg, setting, t, m, e) not in done]
                if eps:
                    jobs.append((m, eps))
            if jobs:
                tasks.append(TrialTask(setting, t, jobs))
    return tasks


def execute(cfg: RunConfig, store, tasks, on_task_done=None, jobs: int = 1, backend: str = "serial",
            scheduler: str | None = None, on_event=None) -> int:
    """Run ``tasks`` and write each trial's rows to ``store`` as soon as it finishes.

    Only this (coordinating) process writes to the database. Returns the number of rows
    written. ``jobs > 1`` runs trials in parallel with joblib (loky); ``backend="dask"``
    sends them to a dask.distributed cluster (``scheduler`` address, or a LocalCluster of
    ``jobs`` workers). ``on_event`` is forwarded to :func:`run_trial` in serial runs.
    """
    written = 0

    def with_prepared(t):
        # stored preparations travel with the task, so workers never read the database
        for method, _ in t.jobs if hasattr(store, "artefact") else ():
            if method not in t.prepared:
                state = store.artefact(artefact_key(cfg, t.setting, t.trial, method))
                if state is not None:
                    t.prepared[method] = {"optimum": state.pop("__optimum__", None), "state": state}
        return t

    serial = backend != "dask" and jobs <= 1
    if not serial:  # the database connection stays in this thread: load before dispatching
        tasks = [with_prepared(t) for t in tasks]
    results = backend_results(run_trial, cfg, tasks, jobs, backend, scheduler, on_event,
                              with_prepared if serial else None)
    # closing(): on an interrupt the generator is closed here, not when the traceback is freed, so
    # joblib terminates its workers and the dask LocalCluster is closed before the command returns
    with contextlib.closing(results):
        for rows in results:
            with held():  # a signal during the commit is raised after it: the finished trial is kept
                if hasattr(store, "write_artefacts"):
                    store.write_artefacts(getattr(rows, "artefacts", []))
                store.write(rows)
            written += len(rows)
            if on_task_done:
                on_task_done(rows)
    return written


def config_dict(cfg: RunConfig) -> dict:
    """The configuration as a plain dict (for JSON summaries and reports)."""
    return asdict(cfg)
