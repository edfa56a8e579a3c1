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


def test_pair_leaves_replace_relaxations_in_a_short_optimum_row():
    """300 optimum nodes relax less with pair leaves (nodes with two features left scanned whole)
    than without them, and scan more. The first nodes keep nearly all 2 905 features, so the limit
    here covers every pair (2^23)."""
    bench = benchmark_module("bench_level_listing")
    on, off = bench.run(300, pair_leaf_limit=2**23, optimum=True), bench.run(300, pair_leaf_limit=0, optimum=True)
    assert on["search"] == off["search"] == "optimum" and on["status"] == off["status"] == "work_limit"
    assert on["parts"]["relax_node"]["calls"] < off["parts"]["relax_node"]["calls"]
    assert on["parts"]["scan_completions"]["calls"] > off["parts"]["scan_completions"]["calls"]
