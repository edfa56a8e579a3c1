"""The level-listing benchmark (benchmarks/bench_level_listing.py; not timed): its row counts the
node parts it times, stops at its work limit, and leaves the session class as it found it."""

from helpers.paths import benchmark_module


def test_a_short_listing_row_counts_its_parts_and_restores_the_session():
    bench = benchmark_module("bench_level_listing")
    from dpbench.core.oracle import OASession

    before = {name: getattr(OASession, name) for name in bench.PARTS}
    row = bench.run(300)
    assert row["status"] == "work_limit" and 300 <= row["nodes"] <= 301
    assert row["lower_bound"] < bench.THRESHOLD  # stopped early: nothing certified
    assert row["parts"]["relax_node"]["calls"] > 0
    assert all(getattr(OASession, name) is fn for name, fn in before.items())
