"""Real-data benchmark (issue 22): certified optimum and topr + mistakes preparation per data set.

Every shipped real data set (the 14 microarray sets of the DP-SIS paper, swope2024 Table 1,
khan included, plus the two small sets diabetes and hitters) at s = 5, Lambda in {10, 120}, both
standardizations (``standardize``, the ``dpbench compare`` default on real data, and
``dpsis``, the paper's centring and infinity-norm scaling), clipped to b_x = b_y = 0.5,
r = 1.1, solver ``highs`` with its default deterministic work limits: the trial is the one
``dpbench compare --dataset NAME --s 5 --lam LAM --standardize MODE`` builds.

Measured per (set, standardization, Lambda), in a fresh process each (optimum-only runs: one
process per data set for all its settings):

* ``optimum``: the certified best support S1 (seconds, CPU seconds, branch-and-bound nodes /
  master iterations, certified or not);
* ``topr`` and ``mistakes``: each selector's preparation (the top-R list, R = (p - s) s + 2;
  the level minima R_2 .. R_s) on the same trial after the optimum, as the runner does it
  (seconds, CPU seconds, oracle work summed over the outermost oracle calls, certified or not
  and the selector's reason when not);
* ``l0bnb`` (when the package is installed; it is not a dependency): L0BnB (Hazimeh,
  Mazumder & Saab 2022, Math. Program.) on the same clipped arrays, its l0 penalty bisected
  until it returns s features with its l2 penalty Lambda / 2 and big-M r (its objective is
  half of ours plus the l0 term), timed in the same process: the ratio of its seconds (the
  solve at the tuned penalty) to dpbench's optimum seconds, and whether its support is ours.

Seconds are wall clock; CPU seconds (``time.process_time`` of the child, all its threads, plus
the forked workers it reaped during the stage: topr's roots run on ``topr.workers`` processes)
are less distorted on a shared machine; the 1-minute load average is recorded with every row.
Node counts and certification are deterministic. Each process runs under a CPU-time cap
(``--cpu-cap``; CPU time, so that the cap means the same work whatever the machine's load), a
wall-clock cap (``--timeout``, default five times the CPU cap) and an address-space cap
(``--mem-gb``). The caps are the benchmark's safety net, not part of any result: a capped row
says "stopped at the cap" and the stages finished before it are kept.

    python benchmarks/bench_real_data.py [--sets khan,alon] [--lam 10,120]
        [--standardize standardize,dpsis] [--stages optimum,mistakes,topr,l0bnb]
        [--cpu-cap 120] [--timeout 600] [--mem-gb 6] [--out rows.json] [--before benchmarks/real_data_main.json]
    python benchmarks/bench_real_data.py --compare [--sets khan,alon] [--cpu-cap 120] [--out compare.json]
    python benchmarks/bench_real_data.py --report rows.json [--before benchmarks/real_data_main.json]

``--compare`` runs issue 22's main job instead, ``dpbench compare --methods topr,mistakes,mcmc
--dataset NAME --s 5 --trials 1 --draws 20 --delta 1e-6`` per set under the same caps, and reads
each method's preparation seconds and certification from its ``--json`` summary.
``--before`` names stored rows of an earlier version (``benchmarks/real_data_main.json``:
main before issue 22, with the date, commit and load of the measurement), printed side by
side. In asv: :class:`RealDataOptimum` (certified optimum, every set and setting) and
:class:`RealDataPreparation` (topr + mistakes preparation on the small sets).
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
from dpbench.bench.registry import PluginInstances

B, R_BOUND, S, SEED = 0.5, 1.1, 5, 0
#: The 14 microarray sets (datamicroarray 0.2.3; khan via ``shipped``) and the two small sets.
MICROARRAY = ("alon", "borovecki", "chowdary", "christensen", "golub", "gordon", "gravier", "khan", "shipp",
              "singh", "sorlie", "su", "subramanian", "west")
SETS = MICROARRAY + ("diabetes", "hitters")
LAMS = (10.0, 120.0)
STANDARDIZATIONS = ("standardize", "dpsis")
STAGES = ("optimum", "mistakes", "topr", "l0bnb")
#: Preparations measured, in this order: the order of the main job (``compare --methods topr,mistakes``),
#: so topr's lists give the level minima mistakes then reads (rows before session 4 of issue 22
#: measured mistakes first).
METHODS = ("topr", "mistakes")
BEFORE = Path(__file__).with_name("real_data_main.json")


# ----------------------------------------------------------------------------- measurement
def setting(name: str, standardize: str) -> dict:
    """The data setting of ``dpbench compare --dataset name --s 5 --standardize standardize``."""
    return {"dataset": name, "s": S, "standardize": standardize}


def make_trial(name: str, lam: float, standardize: str):
    """A fresh Trial (empty cache) of one real data set, as ``dpbench compare`` builds it."""
    from dpbench.bench.config import RunConfig, make_problem
    from dpbench.bench.trial import Trial

    st = setting(name, standardize)
    cfg = RunConfig(methods=["topr", "mistakes"], data=[st], seed=SEED, lam=lam, b_x=B, b_y=B, r=R_BOUND)
    prob = make_problem(cfg, st, 0)
    return Trial.from_problem(prob, cfg.privacy_setup, preprocessing="clip", solver=cfg.solver,
                              solver_params=cfg.solver_params, loss=cfg.loss, instances=PluginInstances())


class WorkCounter:
    """Sums the deterministic work (nodes / master iterations) of the outermost oracle calls.

    Wraps the public ``solve`` and ``supports_below`` of the trial's oracle session class
    (:class:`dpbench.core.contracts.oracle.OracleSession`); calls made inside another call (a tie
    check inside ``solve``) are not counted twice.
    """

    def __init__(self, session_cls):
        self.work, self.calls, self._depth = 0, 0, 0
        self._cls, self._saved = session_cls, {}
        for meth in ("solve", "supports_below"):
            if hasattr(session_cls, meth):
                self._saved[meth] = getattr(session_cls, meth)
                setattr(session_cls, meth, self._wrap(self._saved[meth]))

    def _wrap(self, fn):
        counter = self

        def wrapped(*args, **kw):
            counter._depth += 1
            try:
                res = fn(*args, **kw)
            finally:
                counter._depth -= 1
            if counter._depth == 0:
                counter.calls += 1
                counter.work += int(getattr(res, "nodes", 0) or getattr(res, "iterations", 0) or 0)
            return res

        return wrapped

    def restore(self):
        for meth, fn in self._saved.items():
            setattr(self._cls, meth, fn)


def _cpu_seconds():
    """CPU seconds of this process (all its threads) plus those of its children already reaped:
    topr's roots run on forked workers (``topr.workers``), whose work ``process_time`` misses."""
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + kids.ru_utime + kids.ru_stime


def _stage(fn, counter):
    w0, c0 = counter.work, counter.calls
    t, c = time.perf_counter(), _cpu_seconds()
    out = fn()
    return out, {"seconds": time.perf_counter() - t, "cpu": _cpu_seconds() - c,
                 "nodes": counter.work - w0, "calls": counter.calls - c0}


def l0bnb_optimum(X, y, s: int, lam: float, r: float = R_BOUND, time_limit: float = 600.0, tries: int = 40):
    """L0BnB's support of size s on (X, y): its l0 penalty bisected until it returns s features.

    L0BnB minimises 0.5 ||y - X b||^2 + l0 ||b||_0 + l2 ||b||^2 subject to |b_i| <= M
    (Hazimeh, Mazumder & Saab 2022, problem (1)); with l2 = Lambda / 2 and M = r its smooth part
    is half the ridge score R(S) (our l2 ball ||b|| <= r is replaced by the box, which it implies).

    Returns
    -------
    dict
        ``support`` (sorted list or None), ``l0`` (the penalty used), ``seconds`` (the solve at
        that penalty), ``tuning_seconds`` (all solves), ``solves``, ``gap`` (L0BnB's own).
    """
    if "Inf" not in np.__dict__:  # l0bnb 1.0.0 (2021, its last release) uses np.Inf, removed in numpy 2
        np.Inf = np.inf
    from l0bnb import BNBTree

    tree_x, tree_y = np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.float64)
    # l0 at which a single feature stops paying: the largest one-feature ridge gain
    gain = (tree_x.T @ tree_y) ** 2 / (2 * (np.sum(tree_x ** 2, axis=0) + lam))
    lo, hi = 0.0, float(gain.max())
    l0, total, solves, found = hi / 2, 0.0, 0, None
    for _ in range(tries):
        t = time.perf_counter()
        sol = BNBTree(tree_x, tree_y).solve(l0, lam / 2, r, gap_tol=1e-4, time_limit=time_limit)
        sec = time.perf_counter() - t
        total, solves = total + sec, solves + 1
        k = int(np.count_nonzero(sol.beta))
        if k == s:
            found = {"support": sorted(int(j) for j in np.flatnonzero(sol.beta)), "l0": l0, "seconds": sec,
                     "gap": float(sol.gap)}
            break
        lo, hi = (lo, l0) if k < s else (l0, hi)  # fewer features: the penalty is too large
        l0 = (lo + hi) / 2
    return {**(found or {"support": None, "l0": l0, "seconds": float("nan"), "gap": float("nan")}),
            "tuning_seconds": total, "solves": solves}


def prepare(trial, methods=None) -> dict:
    """``{method: Draws}``: each selector's default preparation on ``trial`` and one draw at eps = 1.

    The draw carries the selector's certification and its ``reason`` when uncertified.
    """
    from dpbench.bench.registry import registry

    out = {}
    for method in methods or METHODS:
        sel = registry().selector(method)()
        prep = sel.prepare(trial, np.random.default_rng(SEED))
        out[method] = sel.draw(trial, prep, 1.0, 1, np.random.default_rng(SEED + 1))
    return out


def measure(name: str, lam: float, standardize: str, stages=STAGES, emit=None) -> list[dict]:
    """Rows of one (data set, Lambda, standardization): one per stage, in stage order.

    ``emit(row)`` is called as each stage finishes (the script's child prints it at once, so a
    run stopped at the cap keeps its finished stages).
    """
    emit = emit or (lambda row: None)
    trial = make_trial(name, lam, standardize)
    base = {"set": name, "n": int(trial.n), "p": int(trial.p), "s": int(trial.s), "lam": float(lam),
            "standardize": standardize}
    counter = WorkCounter(type(trial.oracle()))
    rows = []

    def done(stage, info, **extra):
        row = {**base, "stage": stage, **info, **extra}
        rows.append(row)
        emit(row)

    try:
        opt, info = _stage(trial.optimum, counter)
        done("optimum", info, certified=bool(opt.certified), status=opt.status, objective=float(opt.objective),
             support=None if opt.support is None else [int(j) for j in opt.support])
        for method in METHODS:
            if method in stages:
                d, info = _stage(lambda: prepare(trial, (method,))[method], counter)
                done(method, info, certified=bool(d.certified), reason=d.diagnostics.get("reason"))
    finally:
        counter.restore()
    if "l0bnb" in stages and _has_l0bnb() and opt.certified:
        res = l0bnb_optimum(trial.problem.X, trial.problem.y, trial.s, lam)
        ours = rows[0]
        theirs = None if res["support"] is None else float(trial.score(np.asarray([res["support"]]))[0])
        done("l0bnb", {"seconds": res["seconds"], "cpu": float("nan"), "nodes": None, "calls": res["solves"]},
             certified=None, support=res["support"], objective=theirs, same_support=res["support"] == ours["support"],
             ratio=res["seconds"] / ours["seconds"] if ours["seconds"] > 0 else float("nan"),
             tuning_seconds=res["tuning_seconds"], l0=res["l0"], l0bnb_gap=res["gap"])
    return rows


def _has_l0bnb() -> bool:
    try:
        import l0bnb  # noqa: F401
    except ImportError:
        return False
    return True


# ----------------------------------------------------------------------------- asv
class RealDataOptimum:
    """Certified optimum of every shipped real data set, s = 5, both standardizations, Lambda 10 / 120.

    Raises (so asv shows a failure, not a time) when the optimum is not certified within the
    oracle's default deterministic work limits.
    """

    params = [list(SETS), list(STANDARDIZATIONS), list(LAMS)]
    param_names = ["dataset", "standardize", "lam"]
    number = 1
    repeat = 1
    timeout = 900

    def setup(self, dataset, standardize, lam):
        self.trial = make_trial(dataset, lam, standardize)

    def time_optimum(self, dataset, standardize, lam):
        opt = self.trial.optimum()
        if not opt.certified:
            raise RuntimeError(f"{dataset} {standardize} Lambda={lam:g}: optimum not certified ({opt.status})")

    def track_optimum_nodes(self, dataset, standardize, lam):
        return int(self.trial.optimum().iterations)

    track_optimum_nodes.unit = "nodes"


class RealDataPreparation:
    """topr + mistakes preparation (after the optimum) at the defaults (``standardize``), s = 5.

    Khan and alon (the issue's examples) and the two small sets; the other sets are in the
    script mode (their preparations take minutes to hours on main). Raises unless both
    preparations are certified.
    """

    params = [["khan", "alon", "diabetes", "hitters"], list(LAMS)]
    param_names = ["dataset", "lam"]
    number = 1
    repeat = 1
    timeout = 1800

    def setup(self, dataset, lam):
        self.trial = make_trial(dataset, lam, "standardize")
        self.trial.optimum()

    def time_preparation(self, dataset, lam):
        bad = [m for m, d in prepare(self.trial).items() if not d.certified]
        if bad:
            raise RuntimeError(f"{dataset} Lambda={lam:g}: {', '.join(bad)} not certified")

    def track_preparation_nodes(self, dataset, lam):
        counter = WorkCounter(type(self.trial.oracle()))
        try:
            prepare(self.trial)
        finally:
            counter.restore()
        return counter.work

    track_preparation_nodes.unit = "nodes"


# ----------------------------------------------------------------------------- runs and report
def _load1() -> float:
    return round(os.getloadavg()[0], 2)


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=Path(__file__).parent, capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def run_capped(cmd, cpu_cap, timeout, mem_gb) -> dict:
    """Run ``cmd`` under CPU-time, wall-clock and address-space caps.

    Returns ``stdout``, ``stopped`` (None, or why the cap or a failure ended it) and the
    measurement context: ``load1_start`` / ``load1_end`` (1-minute load average),
    ``child_wall`` and ``child_cpu`` (user + system seconds of the child, ``RUSAGE_CHILDREN``,
    also when it was stopped), the caps and the date.
    """
    def limit():  # a run that needs more fails instead of swapping or hogging the shared machine
        cap = int(mem_gb * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
        resource.setrlimit(resource.RLIMIT_CPU, (int(cpu_cap), int(cpu_cap) + 5))  # SIGXCPU ends it

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    load0, t0 = _load1(), time.perf_counter()
    stopped = None
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, preexec_fn=limit)
        stdout = out.stdout
        if out.returncode == -signal.SIGXCPU:
            stopped = f"stopped at the {cpu_cap:g} CPU-s cap (benchmark safety net, not a result)"
        elif out.returncode:
            stopped = f"failed: {(out.stderr.strip().splitlines() or ['?'])[-1]}"
    except subprocess.TimeoutExpired as exc:
        stdout = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        stopped = f"stopped at the {timeout:g} s wall-clock cap (benchmark safety net, not a result)"
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"stdout": stdout, "stopped": stopped, "load1_start": load0, "load1_end": _load1(),
            "child_wall": time.perf_counter() - t0,
            "child_cpu": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
            "cap_s": timeout, "cpu_cap_s": cpu_cap, "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}


def run_config(configs, stages, cpu_cap, timeout, mem_gb) -> list[dict]:
    """Measure configurations ``[(name, lam, standardize), ...]`` one after another in a fresh,
    capped child process (one process per data set saves its start-up, ~4 CPU-s); rows of the
    finished stages.

    The caps are per configuration (the child's caps are ``len(configs)`` times them). A child
    stopped at a cap or failing adds a row ``{"stage": <first stage not done>, "stopped": why}``.
    Every row carries the context of :func:`run_capped` (load, child CPU seconds, caps, date).
    """
    configs = [(str(nm), float(lam), str(std)) for nm, lam, std in configs]
    spec = json.dumps([configs, list(stages)])
    k = len(configs)
    run = run_capped([sys.executable, os.path.abspath(__file__), "--child", spec], cpu_cap * k, timeout * k, mem_gb)
    stdout, stopped = run.pop("stdout"), run.pop("stopped")
    rows = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
    if stopped:
        done = {key(r) for r in rows}
        order = ["optimum"] + [st for st in (*METHODS, "l0bnb") if st in stages]
        todo = [(nm, std, lam, st) for nm, lam, std in configs for st in order if (nm, std, lam, st) not in done]
        nm, std, lam, st = todo[0] if todo else (*configs[-1][::2], configs[-1][1], "?")
        rows.append({"set": nm, "lam": lam, "standardize": std, "stage": st, "stopped": stopped})
    return [{**r, **run} for r in rows]


#: The main job of issue 22's "Done when", per data set (defaults: Lambda 10, ``standardize``).
COMPARE = ("compare --methods topr,mistakes,mcmc --dataset {name} --s 5 --trials 1 --draws 20 --delta 1e-6 "
           "--out {db} --json {js}")


def run_compare(name, cpu_cap, timeout, mem_gb, workdir) -> dict:
    """One ``dpbench compare`` (:data:`COMPARE`) in a capped child: seconds, CPU and per-method rows.

    Returns a row with ``stage = "compare"``: the command's wall and CPU seconds, and per method
    its preparation seconds (``prep_s``: the summary's median per-trial preparation), guarantee
    and uncertified count, read from the command's ``--json`` summary.
    """
    db, js = Path(workdir) / f"{name}.db", Path(workdir) / f"{name}.json"
    for f in (db, js):
        f.unlink(missing_ok=True)
    args = COMPARE.format(name=name, db=db, js=js)
    run = run_capped([sys.executable, "-m", "dpbench.cli", *args.split()], cpu_cap, timeout, mem_gb)
    run.pop("stdout")
    row = {"set": name, "standardize": "standardize", "lam": 10.0, "stage": "compare",
           "command": "dpbench " + args.split(" --out")[0], **run}
    if row["stopped"] is None and js.exists():
        for r in json.loads(js.read_text()):  # a method may have a row with and one without guarantee
            m = row.setdefault(r["method"], {"prep_s": 0.0, "guarantee": [], "uncertified": 0, "failed": 0})
            m["prep_s"] = max(m["prep_s"], r["time_median_s"] or 0.0)
            m["guarantee"].append(r["guarantee"])
            m["uncertified"] += r["uncertified"]
            m["failed"] += r["failed"]
    return row


def compare_report(rows: list[dict]) -> str:
    """A Markdown table of :func:`run_compare` rows, with the median and worst topr + mistakes time."""
    lines = ["| set | command s | CPU s | mistakes prep s | topr prep s | topr + mistakes s | certified | load |",
             "|" + "---|" * 8]
    both = []
    for r in rows:
        if r.get("stage") != "compare":
            continue
        if r["stopped"]:
            lines.append(f"| {r['set']} | > {r['child_wall']:.0f} ({r['stopped'].split('(')[0].strip()}) | "
                         f"{r['child_cpu']:.0f} | | | | no | {r['load1_start']:.1f} |")
            continue
        m, tp = r.get("mistakes", {}), r.get("topr", {})
        cert = bool(m and tp and not m["uncertified"] and not tp["uncertified"] and not m["failed"] + tp["failed"])
        total = m.get("prep_s", float("nan")) + tp.get("prep_s", float("nan"))
        if cert:
            both.append(total)
        lines.append(f"| {r['set']} | {r['child_wall']:.1f} | {r['child_cpu']:.1f} | {m.get('prep_s', float('nan')):.1f} | "
                     f"{tp.get('prep_s', float('nan')):.1f} | {total:.1f} | {'yes' if cert else 'NO'} | "
                     f"{r['load1_start']:.1f} |")
    if both:
        lines.append(f"\ncertified on {len(both)} sets: topr + mistakes preparation median {np.median(both):.1f} s, "
                     f"worst {max(both):.1f} s (targets: <= 60 s median, <= 180 s worst, all certified)")
    return "\n".join(lines)


def key(row) -> tuple:
    return row["set"], row["standardize"], float(row["lam"]), row["stage"]


def _cell(r) -> str:
    if r is None:
        return "—"
    if "stopped" in r:
        if "CPU-s cap" in r["stopped"]:
            return f"> {r['cpu_cap_s']:g} cpu-s cap"
        return f"> {r['cap_s']:g} s cap" if "cap" in r["stopped"] else "failed"
    if r["stage"] == "l0bnb":
        if r.get("support") is None:
            return "no s-support"
        same = "same S" if r["same_support"] else "other S"
        return f"{r['seconds']:.2f} s ({r['ratio']:.1f}x ours), {same}"
    cert = "cert" if r["certified"] else "UNCERT"
    return f"{r['seconds']:.2f} s / {r['cpu']:.2f} cpu, {r['nodes']} n, {cert}"


def report(rows: list[dict], before: list[dict] | None = None) -> str:
    """A Markdown table: per (set, standardization, Lambda) and stage, now and before side by side."""
    now = {key(r): r for r in rows}
    old = {key(r): r for r in (before or [])}
    configs = list(dict.fromkeys(k[:3] for k in now))
    head = "| set | standardize | Λ | stage | now | before | load now / before |"
    lines = [head, "|" + "---|" * 7]
    for cfg in configs:
        for stage in STAGES:
            r, b = now.get((*cfg, stage)), old.get((*cfg, stage))
            if r is None and b is None:
                continue
            loads = " / ".join(f"{x['load1_start']:.1f}" if x and "load1_start" in x else "—" for x in (r, b))
            lines.append(f"| {cfg[0]} | {cfg[1]} | {cfg[2]:g} | {stage} | {_cell(r)} | "
                         f"{_cell(b) if stage != 'l0bnb' else ''} | {loads} |")
    return "\n".join(lines)


def summary(rows: list[dict]) -> dict:
    """Median / worst seconds of the optimum and of topr + mistakes per setting, and counts."""
    out = {}
    by = {key(r): r for r in rows}
    for std in STANDARDIZATIONS:
        for lam in LAMS:
            sets = sorted({r["set"] for r in rows if r["standardize"] == std and float(r["lam"]) == lam})
            if not sets:
                continue
            opt = [by.get((nm, std, lam, "optimum")) for nm in sets]
            prep = [(by.get((nm, std, lam, "topr")), by.get((nm, std, lam, "mistakes"))) for nm in sets]
            ok_opt = [r for r in opt if r and "stopped" not in r and r["certified"]]
            ok_prep = [(a["seconds"] + b["seconds"]) for a, b in prep
                       if a and b and "stopped" not in a and "stopped" not in b and a["certified"] and b["certified"]]
            out[f"{std} lam={lam:g}"] = {
                "sets": len(sets), "optimum_certified": len(ok_opt),
                "optimum_median_s": float(np.median([r["seconds"] for r in ok_opt])) if ok_opt else None,
                "optimum_worst_s": max((r["seconds"] for r in ok_opt), default=None),
                "prep_certified": len(ok_prep),
                "prep_median_s": float(np.median(ok_prep)) if ok_prep else None,
                "prep_worst_s": max(ok_prep, default=None)}
    return out


def _child(spec: str) -> None:
    configs, stages = json.loads(spec)
    for name, lam, standardize in configs:
        measure(name, float(lam), standardize, tuple(stages), emit=lambda row: print(json.dumps(row), flush=True))


def _csv(text: str, allowed=None, cast=str) -> list:
    items = [cast(x) for x in text.split(",") if x]
    bad = [x for x in items if allowed is not None and x not in allowed]
    if bad:
        raise SystemExit(f"bench_real_data: unknown {bad[0]!r}; choose from {', '.join(map(str, allowed))}")
    return items


def main(argv=None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default=",".join(SETS), help="comma-separated data sets (default: all 16 shipped)")
    ap.add_argument("--lam", default="10,120", help="Lambda values (default 10,120)")
    ap.add_argument("--standardize", default=",".join(STANDARDIZATIONS), help="standardize,dpsis (default both)")
    ap.add_argument("--stages", default=",".join(STAGES), help="optimum,topr,mistakes,l0bnb (optimum always runs)")
    ap.add_argument("--cpu-cap", type=float, default=120.0, help="CPU-time cap per configuration, s (default 120)")
    ap.add_argument("--timeout", type=float, help="wall-clock cap per configuration, s (default 5 x --cpu-cap)")
    ap.add_argument("--mem-gb", type=float, default=6.0, help="address-space cap per configuration, GiB (default 6)")
    ap.add_argument("--out", help="write the rows (JSON, rewritten after each configuration)")
    ap.add_argument("--before", help=f"stored rows of an earlier version, side by side (e.g. {BEFORE.name})")
    ap.add_argument("--report", help="print the table of stored rows (JSON) instead of measuring")
    ap.add_argument("--compare", action="store_true",
                    help="instead: run issue 22's main job (dpbench compare topr,mistakes,mcmc, 1 trial, 20 draws, "
                         "the defaults) per set, under the same caps")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        _child(a.child)
        return 0
    before = json.loads(Path(a.before).read_text())["rows"] if a.before else None
    if a.report:
        doc = json.loads(Path(a.report).read_text())
        if any(r.get("stage") == "compare" for r in doc["rows"]):
            print(compare_report(doc["rows"]))
            return 0
        print(report(doc["rows"], before))
        print(json.dumps(summary(doc["rows"]), indent=1))
        return 0
    timeout = a.timeout or 5 * a.cpu_cap
    sets = _csv(a.sets, SETS)
    lams = _csv(a.lam, cast=float)
    stds = _csv(a.standardize, STANDARDIZATIONS)
    stages = _csv(a.stages, STAGES)
    doc = {"date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), "commit": _commit(),
           "cores": os.cpu_count(), "load1_start": _load1(), "cpu_cap_s": a.cpu_cap, "cap_s": timeout, "rows": []}
    if a.compare:
        import tempfile

        with tempfile.TemporaryDirectory() as work:
            for name in sets:
                row = run_compare(name, a.cpu_cap, timeout, a.mem_gb, work)
                doc["rows"].append(row)
                print(compare_report([row]).splitlines()[2], flush=True)
                if a.out:
                    doc["load1_end"] = _load1()
                    Path(a.out).write_text(json.dumps(doc, indent=1))
        print(compare_report(doc["rows"]))
        return 0
    # one child per data set (all its settings) when only the optimum is measured, else per setting
    settings = [(std, lam) for std in stds for lam in lams]
    batches = ([[(nm, lam, std) for std, lam in settings] for nm in sets] if set(stages) == {"optimum"}
               else [[(nm, lam, std)] for std, lam in settings for nm in sets])
    for batch in batches:
        rows = run_config(batch, stages, a.cpu_cap, timeout, a.mem_gb)
        doc["rows"] += rows
        for r in rows:
            print(f"{r['set']:12s} {r['standardize']:11s} lam={r['lam']:<4g} {r['stage']:9s} {_cell(r)}  "
                  f"(load {r['load1_start']:.1f}, child cpu {r['child_cpu']:.1f} s)", flush=True)
        if a.out:
            doc["load1_end"] = _load1()
            Path(a.out).write_text(json.dumps(doc, indent=1))
    print(report(doc["rows"], before))
    print(json.dumps(summary(doc["rows"]), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
