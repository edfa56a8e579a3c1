"""asv benchmarks: loading the shipped data sets, drawing planted problems, reading user CSVs.

Targets (2-core machine): every shipped data set loads (sha256 + decompress) in under
0.1 s; one planted nci60 trial (64 x 6830) in under 0.1 s after the first load; a
1000 x 200 CSV parses in under 1 s. Run ``python benchmarks/bench_datasets.py`` to print
medians next to the targets.
"""

import tempfile
from pathlib import Path

import numpy as np

try:  # as a module of the asv suite (package ``benchmarks``) or as a script
    from ._timing import median_seconds
except ImportError:
    from _timing import median_seconds

TARGETS = {"time_load_khan": 0.1, "time_load_nci60": 0.1, "time_planted_nci60": 0.1,
           "time_load_table_csv": 1.0}


def _dataset(name):
    from dpbench.bench.registry import registry

    return registry().dataset(name)


def time_load_khan():
    _dataset("khan")().load()


def time_load_nci60():
    _dataset("nci60")().load()


def _build_registry():
    """asv setup: import every plugin once, so the load timings exclude it (about 1 s)."""
    _dataset("khan")


time_load_khan.setup = _build_registry
time_load_nci60.setup = _build_registry


class TimePlanted:
    def setup(self):
        from dpbench.bench.registry import registry

        self.gen = registry().generator("planted")(design="nci60", s=5, snr=5.0)
        self.gen.generate(np.random.default_rng(0))  # the design is cached after the first load

    def time_planted_nci60(self):
        self.gen.generate(np.random.default_rng(1))


class TimeLoadTable:
    def setup(self):
        self.dir = tempfile.TemporaryDirectory()
        rng = np.random.default_rng(0)
        M = rng.normal(size=(1000, 201))
        self.path = Path(self.dir.name) / "d.csv"
        header = ",".join([f"x{j}" for j in range(200)] + ["y"])
        np.savetxt(self.path, M, delimiter=",", header=header, comments="")

    def teardown(self):
        self.dir.cleanup()

    def time_load_table_csv(self):
        from dpbench.core.datafiles import load_table

        load_table(self.path, "y", standardize="standardize")




if __name__ == "__main__":
    p, t = TimePlanted(), TimeLoadTable()
    p.setup()
    t.setup()
    _dataset("khan")  # build the plugin registry outside the timings
    measured = {"time_load_khan": median_seconds(time_load_khan), "time_load_nci60": median_seconds(time_load_nci60),
                "time_planted_nci60": median_seconds(p.time_planted_nci60),
                "time_load_table_csv": median_seconds(t.time_load_table_csv)}
    t.teardown()
    for k, v in measured.items():
        print(f"{k:24s} median {v * 1000:8.1f} ms   target < {TARGETS[k] * 1000:.0f} ms   "
              f"{'ok' if v < TARGETS[k] else 'MISSED'}")
