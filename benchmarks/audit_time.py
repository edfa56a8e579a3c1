"""Wall time of `dpbench audit` on the seven built-ins, default budget and --quick (issue 23).

    python benchmarks/audit_time.py [--quick-only]

Prints the seconds of each run next to the machine's load (`uptime`), and the exit status
(0 expected: no finding beyond any row's stated guarantee).
"""

import os
import subprocess
import sys
import time

METHODS = "exhaustive,topr,mistakes,mistakes-ptr,dpsis,sampagg,mcmc"


def run(extra):
    cmd = [sys.executable, "-m", "dpbench.cli", "audit", "--methods", METHODS, "--delta", "1e-6", *extra]
    t = time.perf_counter()
    res = subprocess.run(cmd, capture_output=True, text=True)
    return time.perf_counter() - t, res.returncode, res.stdout


if __name__ == "__main__":
    for extra in (["--quick"],) if "--quick-only" in sys.argv else (["--quick"], []):
        load = os.getloadavg()
        sec, code, out = run(extra)
        print(out)
        print(f"dpbench audit {' '.join(extra) or '(default budget)'}: {sec:.1f} s, exit {code}, "
              f"load before {load[0]:.2f}, after {os.getloadavg()[0]:.2f}, {os.cpu_count()} CPUs")
