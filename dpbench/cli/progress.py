"""Progress of ``dpbench compare``: a live bar on a terminal, plain log lines otherwise.

On a terminal: trials done / total, elapsed, time remaining, and the current data setting,
trial and method (updated within a trial, before each method's preparation and draws, so a
multi-second preparation shows what it is doing). The bar stays on screen at the end.
When stderr is not a terminal (batch jobs, nohup, SLURM): one plain line per finished
trial with its setting, duration, counts and the estimated time remaining.
In both modes, as soon as a trial finishes with a method uncertified (its preparation stopped
at a deterministic work limit), one line per method says why and which ``--param`` work limit
to raise (:func:`dpbench.bench.uncertified.uncertified_advice`), so the user need not wait for
the end of the run, nor guess.
"""

from __future__ import annotations

import time

from rich.markup import escape

from dpbench.bench.uncertified import uncertified_advice


def setting_text(setting: dict) -> str:
    """Compact ``name k=v ...`` of a data setting (the generator or data set first)."""
    if not isinstance(setting, dict):
        return str(setting)
    head = setting.get("generator") or setting.get("dataset") or str(setting.get("data", "data")).rsplit("/", 1)[-1]
    rest = " ".join(f"{k}={v}" for k, v in setting.items() if k not in ("generator", "dataset", "data"))
    return f"{head} {rest}".strip()


def _hms(seconds: float) -> str:
    seconds = int(round(seconds))
    h, r = divmod(seconds, 3600)
    m, s = divmod(r, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class RunProgress:
    """Context manager reporting a run's progress on ``console`` (stderr)."""

    def __init__(self, console, total: int, jobs: int = 1, backend: str = "serial"):
        self.console = console
        self.total = total
        self.done = 0
        self.live = console.is_terminal
        self.parallel = jobs > 1 or backend != "serial"
        self.t0 = time.perf_counter()
        self.progress = None

    def __enter__(self):
        if self.live and self.total:
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                                       TimeRemainingColumn)

            self.progress = Progress(TextColumn("[bold]trials"), BarColumn(bar_width=24), MofNCompleteColumn(),
                                     TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn(),
                                     TextColumn("{task.description}"), console=self.console, transient=False)
            self.progress.__enter__()
            self.bar = self.progress.add_task("running in parallel" if self.parallel else "", total=self.total)
        return self

    def __exit__(self, *exc):
        if self.progress is not None:
            self.progress.__exit__(*exc)
        return False

    def event(self, task, method: str, stage: str) -> None:
        """Called by the runner before a method's preparation and its draws (serial runs)."""
        if self.progress is not None:
            text = f"{setting_text(task.setting)} · trial {task.trial} · {method} {stage}"
            # what the bar, counts and times leave (their columns and the spaces between them): a
            # longer text made rich shrink the times instead ("0:… eta 0:0…" on 80 columns)
            room = max(10, self.console.width - (54 + 2 * len(str(self.total))))
            if len(text) > room:
                text = text[:room - 1] + "…"
            self.progress.update(self.bar, description=escape(text))

    def task_done(self, rows, method_params: dict | None = None) -> None:
        """Called with a finished trial's rows (``method_params``: the run's ``--param`` values)."""
        self.done += 1
        self.advise(rows, method_params)
        if self.progress is not None:
            self.progress.advance(self.bar)
            return
        elapsed = time.perf_counter() - self.t0
        eta = elapsed / self.done * (self.total - self.done)
        if rows:
            r = rows[0]
            methods = sorted({x["method"] for x in rows})
            failed = sum(x["status"] == "failed" for x in rows)
            where = f"{setting_text(r['setting'])} trial {r['trial']}: {','.join(methods)}, {len(rows)} rows"
            if failed:
                where += f", {failed} failed"
        else:
            where = "no rows"
        self.console.print(f"{time.strftime('%H:%M:%S')} dpbench: trial {self.done}/{self.total} done "
                           f"({where}) · elapsed {_hms(elapsed)} · remaining ~{_hms(eta)}",
                           markup=False, highlight=False, soft_wrap=True)

    def advise(self, rows, method_params: dict | None = None) -> None:
        """One line per uncertified method of a finished trial: why, and which work limit to raise;
        one line when the trial's bss reference is uncertified (its rows have no recovery)."""
        seen = set()
        missing = next((r for r in rows or () if (r.get("diagnostics") or {}).get("reference_uncertified")), None)
        if missing is not None:
            where = f"{setting_text(missing.get('setting') or missing.get('data'))} trial {missing.get('trial')}"
            self.console.print(f"{time.strftime('%H:%M:%S')} dpbench: {where}: no reference to score against, so "
                               f"exact recovery, F1, top-k and Hamming are undefined for its rows (kept, not "
                               f"averaged in): {missing['diagnostics']['reference_uncertified']}",
                               style="yellow", markup=False, highlight=False, soft_wrap=True)
        for row in rows or ():
            label = row.get("label") or row.get("method")
            where = f"{setting_text(row.get('setting') or row.get('data'))} trial {row.get('trial')}"
            text = uncertified_advice(row, method_params, where)
            if text is None or label in seen:  # one line per method, not per epsilon
                continue
            seen.add(label)
            self.console.print(f"{time.strftime('%H:%M:%S')} dpbench: {text}", style="yellow", markup=False,
                               highlight=False, soft_wrap=True)
