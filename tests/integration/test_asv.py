"""The asv suite imports, is well formed, and runs a benchmark through asv itself.

A broken benchmark module (import error, bad attribute, a benchmark that raises) fails
here rather than silently disappearing from the dashboard. The commands use
``--python=same``: the interpreter running pytest, with dpbench installed in it (editable
or not). asv writes its machine file to ``$HOME``; the test points ``HOME`` at a temporary
directory and uses a copy of ``asv.conf.json`` whose results / html / env directories are
temporary too, so nothing outside ``tmp_path`` is touched.
"""

import json
import os
import subprocess
import sys

import pytest
from helpers.paths import REPO, benchmark_module

ROOT = REPO
CONF = ROOT / "asv.conf.json"

asv_util = pytest.importorskip("asv.util")
pytestmark = pytest.mark.skipif(not CONF.exists() or not (ROOT / "benchmarks").is_dir(),
                                reason="needs a source checkout with asv.conf.json and benchmarks/")

#: Fast benchmarks run through asv (parameter combinations are selected by regex on
#: ``name(param, ...)``): one selector timing, one backend timing, one tracked recovery.
QUICK = [
    r"bench_selectors\.Selection\.time_selection\('dpsis', 'small'\)",
    r"bench_backends\.CertifiedOptimum\.time_certified\('highs', 1000\)",
    r"bench_selectors\.EmpiricalRecovery\.track_recovery_rate\('dpsis'\)",
]


@pytest.fixture(scope="module")
def asv_env(tmp_path_factory):
    """(run, config path): ``run(*args)`` runs ``python -m asv`` with HOME and all asv dirs in tmp."""
    tmp = tmp_path_factory.mktemp("asv")
    conf = asv_util.load_json(str(CONF), js_comments=True)
    assert conf["benchmark_dir"] == "benchmarks" and conf["environment_type"] == "virtualenv"
    conf.update(repo=str(ROOT), benchmark_dir=str(ROOT / "benchmarks"), results_dir=str(tmp / "results"),
                html_dir=str(tmp / "html"), env_dir=str(tmp / "env"))
    path = tmp / "asv.conf.json"
    path.write_text(json.dumps(conf))
    env = {**os.environ, "HOME": str(tmp)}

    def run(*args, timeout=300):
        return subprocess.run([sys.executable, "-m", "asv", *args, "--config", str(path)], cwd=tmp, env=env,
                              capture_output=True, text=True, timeout=timeout)

    out = run("machine", "--yes", "--machine", "dpbench-test")
    assert out.returncode == 0, out.stdout + out.stderr
    return run, path


def test_asv_check(asv_env):
    run, _ = asv_env
    out = run("check", "--python=same")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "No problems found" in out.stdout, out.stdout + out.stderr


def test_benchmarks_discovered():
    """Every family the suite promises is present (a module that fails to import drops out)."""
    from asv_runner.discovery import disc_benchmarks

    sys.path.insert(0, str(ROOT))
    try:
        names = {b.name for b in disc_benchmarks(str(ROOT / "benchmarks"))}
    finally:
        sys.path.remove(str(ROOT))
    for name in ("bench_selectors.Selection.time_selection",
                 "bench_selectors.PeakMemory.peakmem_selection",
                 "bench_selectors.AnalyticRecovery.track_recovery_probability",
                 "bench_selectors.EmpiricalRecovery.track_recovery_rate",
                 "bench_backends.CertifiedOptimum.time_certified",
                 "bench_backends.PeakMemoryOracle.peakmem_certified",
                 "bench_real_data.RealDataOptimum.time_optimum",
                 "bench_real_data.RealDataPreparation.time_preparation"):
        assert name in names, sorted(names)


def test_quick_benchmarks_run(asv_env):
    """A few fast benchmarks through ``asv run``: exit status 0 and a value for each."""
    run, _ = asv_env
    args = ["run", "--python=same", "--quick", "--show-stderr", "--machine", "dpbench-test"]
    for regex in QUICK:
        args += ["--bench", regex]
    out = run(*args)
    text = out.stdout + out.stderr
    assert out.returncode == 0, text
    assert "failed" not in text, text
    # asv prints one line per benchmark: the name (possibly shortened) and its value.
    assert "time_selection" in text and "time_certified" in text and "track_recovery_rate" in text, text
    assert "s\n" in text or "ms" in text, text


def test_recovery_values_in_range():
    """The tracked recovery numbers are probabilities (checked directly, cheap selectors only)."""
    b = benchmark_module("bench_selectors")
    value = b.recovery("dpsis")
    assert 0.0 < value < 1.0  # the setting is chosen to sit strictly inside (0, 1)
    assert b.recovery("dpsis") == value  # deterministic: fixed seeds
