"""Identity of results and stored preparations: the hashed keys a resume compares.

A row's key holds everything that determines it (data setting, trial, selector and its
parameters, the run options of :func:`method_config`, seed, ε); a preparation's key the same
without ε, the draws and the reference. Work budgets (:data:`BUDGET_PARAMS`) stay out of row
keys, so an uncertified row can be re-run with a larger budget in place. ``cfg`` is a
:class:`dpbench.bench.config.RunConfig` throughout (not imported: the configuration builds on
these keys).
"""

from __future__ import annotations

import hashlib
import json

from dpbench.bench.registry import registry
from dpbench.core.score.loss import DEFAULT_LOSS



def _canon(obj) -> str:
    return json.dumps(obj, sort_keys=True, default=str)


def setting_label(setting: dict) -> str:
    """Short display name of a data setting (generator or data-set name)."""
    if "data" in setting:
        return str(setting["data"]).rsplit("/", 1)[-1]
    return setting.get("generator") or setting.get("dataset") or "data"


def artefact_key(cfg, setting: dict, trial: int, method: str) -> str:
    """Identity of one (trial, selector configuration)'s ε-independent preparation.

    Everything :meth:`Selector.prepare` can depend on: the data setting, the trial, the method
    (a label of ``cfg.methods``) and its parameters, clipping, Λ, the sensitivity bound, the solver, the run seed (the
    ``prepare`` random stream) and the selector's ``prepared_version``; not ε, the number of
    draws or the reference support.
    """
    conf = {k: v for k, v in method_config(cfg, method).items() if k not in ("draws", "reference")}
    # An (uncertified) preparation depends on the work budgets: they are part of its key, so
    # --retry-uncertified with a larger budget recomputes it instead of reloading it.
    conf.update(params=cfg.method_params.get(method, {}), solver_params=cfg.solver_params)
    name = selector_name(method)  # a variant's label: its parameters are in conf, as in row_key
    version = getattr(registry().selector(name), "prepared_version", 1)
    ident = {"artefact": "prepared", "setting": setting, "trial": trial, "method": name, **conf,
             "seed": cfg.seed, "version": version}
    return hashlib.sha256(_canon(ident).encode()).hexdigest()[:32]


def selector_name(label: str) -> str:
    """The registered selector of a method label (``topr(R=300)`` -> ``topr``)."""
    return label.split("(", 1)[0]


def variant_label(method: str, params: dict) -> str:
    """A method's label: its name followed by the parameters that differ from their defaults.

    Parameters
    ----------
    method : str
        Registered selector name.
    params : dict
        The parameters given (command-line strings are converted with the selector's
        :class:`~dpbench.api.Param` before comparing with the default).

    Returns
    -------
    str
        ``"topr"`` when every given value is the default, else e.g. ``"topr(R=300)"``
        (parameters in name order; floats with ``:g``).

    Raises
    ------
    UserInputError
        An unknown selector or a parameter it refuses.
    """
    if not params:
        return method
    cls = registry().selector(method)
    conf = cls(**params).config
    shown = {k: conf[k] for k in sorted(params) if conf[k] != cls.params[k].default}
    if not shown:
        return method
    return method + "(" + ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}"
                                    for k, v in shown.items()) + ")"


def row_key(cfg, setting: dict, trial: int, method: str, epsilon: float) -> str:
    """Identity of one stored row: a hash of everything that determines it.

    ``method`` is a label of ``cfg.methods``; the hash holds its selector name and its
    parameters, so a variant's rows are the rows of a run with those parameters alone.
    """
    ident = {
        "setting": setting, "trial": trial, "method": selector_name(method), "epsilon": float(epsilon),
        **method_config(cfg, method), "seed": cfg.seed,
    }
    return hashlib.sha256(_canon(ident).encode()).hexdigest()[:32]


#: Plugin parameters that only bound the work of a computation (deterministic counts, or the
#: wall-clock safety net of the oracle). A certified result is exact and canonical (ties broken
#: by TIE_RTOL), so it does not depend on them: they are left out of a row's identity, and
#: ``dpbench compare --retry-uncertified`` can re-run the uncertified rows with a larger
#: budget while the certified rows stay as they are.
BUDGET_PARAMS = frozenset({"node_limit", "master_iterations", "master_node_limit", "safety_time_limit",
                           "max_calls", "max_count"})


#: Plugin parameters that only say where the work runs: processes for a level's roots
#: (``topr.workers``, ``mistakes.workers``) and for the parts of a long oracle search
#: (``SOLVER.workers``, ``split_parts``, ``split_after``; dpbench.core.oracle.split). The answers,
#: node counts and certification do not depend on ``workers``; the split changes node counts
#: only, and a certified result is the same with it or without it. So they are left out of a
#: row's identity too: a resumed run with other values keeps the rows it has.
EXECUTION_PARAMS = frozenset({"workers", "split_parts", "split_after"})


def _without_budget(params: dict) -> dict:
    return {k: v for k, v in params.items() if k not in BUDGET_PARAMS and k not in EXECUTION_PARAMS}


def method_config(cfg, method: str) -> dict:
    """The run options that change a method's results (everything but data, trial, seed, epsilon,
    the work budgets of :data:`BUDGET_PARAMS` and where the work runs, :data:`EXECUTION_PARAMS`).

    The loss is named only when it is not the default, and the estimator only with
    ``--estimate``, so that the keys of rows written before either existed stay valid (a
    resumed old database is not recomputed).
    """
    conf = {
        "params": _without_budget(cfg.method_params.get(method, {})), "draws": cfg.draws,
        "b_x": cfg.b_x, "b_y": cfg.b_y, "r": cfg.r, "lam": cfg.lam, "sensitivity": cfg.sensitivity_bound,  # the stored key of existing databases
        "solver": cfg.solver, "solver_params": _without_budget(cfg.solver_params), "reference": cfg.reference,
        "delta": cfg.delta,
    }
    if cfg.loss != DEFAULT_LOSS:
        conf["loss"] = cfg.loss
    if cfg.estimate is not None:
        conf.update(estimate=cfg.estimate, estimate_fraction=cfg.estimate_fraction)
        if cfg.estimate_params:
            conf["estimate_params"] = cfg.estimate_params
    return conf
