"""The relaxation replay benchmark (benchmarks/bench_relaxation_replay.py; not timed).

Replayed by the code that recorded them, khan's first relaxations give bitwise the recorded
bounds: the replay hands each relaxation exactly what the search gave it (F, C, m, the parent's
warm start, the bar), which is what makes two versions comparable on it.
"""

import pickle

from helpers.paths import benchmark_module


def test_replay_by_the_recording_code_gives_the_recorded_bounds(tmp_path):
    bench = benchmark_module("bench_relaxation_replay")
    doc = bench.record("khan", 10.0, 40, 20_000)
    assert 10 <= len(doc["calls"]) <= 40
    assert any(c[3] is not None for c in doc["calls"])  # warm starts from parents are recorded
    path = tmp_path / "khan.pkl"
    path.write_bytes(pickle.dumps(doc))
    assert bench.main(["--replay", str(path), "--repeats", "1"]) == 0
    ms, equal, rel = bench.replay(doc, 1)
    assert ms > 0 and equal == len(doc["calls"]) and rel == 0.0
