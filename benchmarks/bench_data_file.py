"""asv benchmarks: a user data file is parsed once per run, quickly.

``DataFile.time_load_table``: :func:`dpbench.bench.datasets.load_table` of a 400 x 5000 numeric CSV
(pandas' C parser; the standard-library parser remains for irregular files and their error
messages). ``DataFile.time_compare_three_trials``: ``dpbench compare --methods dpsis --data``
on that file with 3 trials — the file is read once, not once per trial (issue 12: 15.9 s for
3 trials before, of which the selector took 0.02 s).

Run ``python benchmarks/bench_data_file.py`` to print medians.
"""

import shutil
import tempfile
import time
from pathlib import Path

N, P = 400, 5000


class DataFile:
    timeout = 600
    number = 1
    repeat = 3

    def setup(self):
        import numpy as np

        self.dir = Path(tempfile.mkdtemp())
        self.csv = self.dir / "wide.csv"
        X = np.random.default_rng(0).normal(size=(N, P + 1))
        header = ",".join(["y"] + [f"x{j}" for j in range(P)])
        np.savetxt(self.csv, X, delimiter=",", header=header, comments="", fmt="%.10g")

    def teardown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def time_load_table(self):
        from dpbench.core.datafiles import load_table

        load_table(self.csv, "y", "standardize")

    def time_compare_three_trials(self):
        from dpbench.core import datafiles as data_io
        from dpbench.cli.main import main

        data_io._TABLES.clear()  # a fresh run: the file is read (once) inside the timing
        out = self.dir / f"r-{time.perf_counter_ns()}.db"
        if main(["compare", "--methods", "dpsis", "--data", str(self.csv), "--target", "y", "--s", "5",
                 "--reference", "sis", "--trials", "3", "--draws", "10", "--out", str(out)]) != 0:
            raise RuntimeError("dpbench compare failed")


def main() -> None:
    import statistics

    b = DataFile()
    b.setup()
    try:
        for name in ("time_load_table", "time_compare_three_trials"):
            ts = []
            for _ in range(3):
                t = time.perf_counter()
                getattr(b, name)()
                ts.append(time.perf_counter() - t)
            print(f"{name}: median {statistics.median(ts):.2f} s ({N} x {P} CSV)")
    finally:
        b.teardown()


if __name__ == "__main__":
    main()
