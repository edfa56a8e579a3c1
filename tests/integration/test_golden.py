"""A golden run: the same command and seed give the same supports as before the layout refactor.

``tests/golden/compare_small.json`` holds every row of a small ``dpbench compare`` written by
dpbench at commit ad3f1f0 (before the host was split into layers). Refactors must not change
a single support. A change that alters results on purpose (a bug fix) regenerates the file with
``python tests/integration/test_golden.py`` and says why in its commit message.
"""

import json
import math
import sqlite3
import sys
from pathlib import Path

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "compare_small.json"


def _run(db: Path) -> list[dict]:
    from dpbench.cli.main import main

    command = json.loads(GOLDEN.read_text())["command"]
    assert main(command.split()[1:] + ["--out", str(db)]) == 0
    con = sqlite3.connect(db)
    rows = con.execute("select setting, trial, method, epsilon, supports, recovery, recovery_prob, f1 "
                       "from results order by method, setting, trial, epsilon").fetchall()
    con.close()
    return [{"setting": json.loads(st), "trial": t, "method": m, "epsilon": e, "supports": json.loads(sup),
             "recovery": rec, "recovery_prob": rp, "f1": f1} for st, t, m, e, sup, rec, rp, f1 in rows]


def _key(r):
    return (r["method"], json.dumps(r["setting"], sort_keys=True), r["trial"], r["epsilon"])


def test_golden_run_gives_identical_supports(tmp_path):
    want = {_key(r): r for r in json.loads(GOLDEN.read_text())["rows"]}
    got = {_key(r): r for r in _run(tmp_path / "golden.db")}
    assert set(got) == set(want)
    for k, w in want.items():
        g = got[k]
        assert g["supports"] == w["supports"], k
        for field in ("recovery", "f1"):
            assert g[field] == w[field], (k, field)
        if w["recovery_prob"] is None:
            assert g["recovery_prob"] is None, k
        else:  # analytic probabilities: the same arithmetic, compared to rounding
            assert math.isclose(g["recovery_prob"], w["recovery_prob"], rel_tol=1e-9, abs_tol=1e-300), k


if __name__ == "__main__":  # regenerate after an intended change of results
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        data = json.loads(GOLDEN.read_text())
        data["rows"] = _run(Path(d) / "golden.db")
        data["written_by"] = sys.argv[1] if len(sys.argv) > 1 else "regenerated"
        GOLDEN.write_text(json.dumps(data, indent=0))
