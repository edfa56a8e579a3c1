"""asv benchmarks: adding an ε value to a finished run costs only the draws.

``Resume.time_first_run``: ``dpbench compare --methods topr,mistakes`` at p = 1 000
(n = 400, s = 3, 2 trials, 100 draws, ε = 1) into a new database — every trial's
ε-independent preparation (the oracle calls of the top-R list and the swap-level minima).

``Resume.time_add_epsilon``: the same command with ``--epsilon 1,4`` on the finished
database. The preparations are loaded from its artefact table, so only the ε = 4 draws run.
Target (issue 12): less than a tenth of the first run.

Run ``python benchmarks/bench_resume.py`` to print medians and their ratio.
"""

import shutil
import tempfile
import time
from pathlib import Path

ARGS = ["compare", "--methods", "topr,mistakes", "--n", "400", "--p", "1000", "--s", "3", "--trials", "2",
        "--draws", "100"]
TARGET_RATIO = 0.1


def _run(db, eps):
    from dpbench.cli.main import main

    if main(ARGS + ["--epsilon", eps, "--out", str(db)]) != 0:
        raise RuntimeError("dpbench compare failed")


class Resume:
    timeout = 900
    number = 1
    repeat = 1

    def setup(self):
        self.dir = Path(tempfile.mkdtemp())
        self.finished = self.dir / "finished.db"
        _run(self.finished, "1")

    def teardown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def time_first_run(self):
        _run(self.dir / f"new-{time.perf_counter_ns()}.db", "1")

    def time_add_epsilon(self):
        copy = self.dir / f"copy-{time.perf_counter_ns()}.db"
        shutil.copy(self.finished, copy)  # each timing adds ε = 4 to a run that has only ε = 1
        _run(copy, "1,4")


def main(repeat: int = 3) -> None:
    import statistics

    first, add = [], []
    for _ in range(repeat):
        b = Resume()
        t = time.perf_counter()
        b.setup()
        first.append(time.perf_counter() - t)
        t = time.perf_counter()
        b.time_add_epsilon()
        add.append(time.perf_counter() - t)
        b.teardown()
    f, a = statistics.median(first), statistics.median(add)
    print(f"p = 1000, topr+mistakes, 2 trials: first run median {f:.2f} s, adding one ε median {a:.2f} s, "
          f"ratio {a / f:.3f} (target < {TARGET_RATIO})")


if __name__ == "__main__":
    main()
