"""``dpbench report RESULTS --html report.html``: one self-contained, offline HTML file.

Everything is inline (CSS, figures as base64 PNG); the page loads nothing from the network,
so it opens on a cluster node, in an e-mail attachment or years later. It holds the summary
table (every varying column shown), the standard figures that apply to the run (recovery
against n, against ε, preparation time against p — each only when that column varies), the
run's configuration, the data provenance, the dpbench version and the machine.
"""

from __future__ import annotations

import base64
import hashlib
import html
import io
import os
import platform
import sys
import time
from pathlib import Path

from dpbench.cli.plot import NO_GUARANTEE

CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:2em auto;max-width:1150px;
color:#222;line-height:1.4;padding:0 1em}
.summary{width:calc(100vw - 3em);max-width:1360px;position:relative;left:50%;transform:translateX(-50%)}
.summary table{width:100%;table-layout:auto}.summary th{white-space:normal;vertical-align:bottom}
.summary td.text{white-space:normal;text-align:left;min-width:7em}
h1{font-size:1.5em;margin-bottom:.2em}h2{font-size:1.15em;border-bottom:1px solid #ccc;margin-top:1.6em}
table{border-collapse:collapse;font-size:.78em;margin:.6em 0}th,td{padding:.2em .4em;border-bottom:1px solid #e3e3e3;
text-align:right;white-space:nowrap}th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}
tr.warn td{background:#fff4e0}.kv td{text-align:left;white-space:normal}.kv td:first-child{font-weight:600;
width:14em}figure{margin:1em 0}figcaption{font-size:.85em;color:#555}img{max-width:100%}
.note{font-size:.85em;color:#555}.scroll{overflow-x:auto}
"""


def _figure_png(sf, **kw) -> str | None:
    """A figure as a base64 PNG data URI (None if matplotlib is missing or nothing to plot)."""
    from dpbench.core.errors import UserInputError
    from dpbench.cli.plot import make_figure

    try:
        fig, _ = make_figure(sf, **kw)
    except UserInputError:
        return None
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def standard_figures(sf) -> list[tuple[str, str]]:
    """(caption, data URI) of the figures that apply: recovery vs n and vs ε, time vs p."""
    from dpbench.bench.results.summary import display_columns

    vary = [c for c in display_columns(sf) if c != "method_label"
            and sf[c].astype("string").fillna("<NA>").nunique() > 1]
    out = []
    for x, metric, caption, extra in (
            ("n", "recovery", "Exact recovery against n", {}),
            ("n", "recovery_prob", "Analytic probability of exact recovery against n (symlog axis)", {"logy": True}),
            ("epsilon", "recovery", "Exact recovery against ε", {}),
            ("p", "prepare", "Preparation per trial against p (seconds; oracle work shared by methods of a trial "
                             "is charged to the first that needs it)", {"logy": True}),
            ("n", "utility_loss", "Utility loss of the private estimate against n (training rows)", {}),
            ("n", "test_mse", "Test MSE of the private estimate against n (training rows)", {}),
            ("epsilon", "utility_loss", "Utility loss of the private estimate against ε (the pair's budget)", {})):
        if x not in vary or (metric in sf and not sf[metric].notna().any()) or metric not in sf:
            continue
        facets = [c for c in vary if c != x]
        col = facets[0] if facets else None
        row = facets[1] if len(facets) > 1 else None
        data = sf
        if metric == "prepare" and "epsilon" in sf:  # ε-independent: one line per method, not per ε
            data = sf[sf["epsilon"] == sf["epsilon"].min()]
            facets = [c for c in facets if c != "epsilon"]
            col = facets[0] if facets else None
            row = facets[1] if len(facets) > 1 else None
        uri = _figure_png(data, x=x, metric=metric, col=col, row=row, **extra)
        if uri:
            facet_txt = "".join(f"; {w} by {c}" for w, c in (("columns", col), ("rows", row)) if c)
            bars = " Error bars: the table's interval." if metric == "recovery" else ""
            out.append((f"{caption}{facet_txt}.{bars}", uri))
    if not out:  # nothing varies along a standard axis: recovery per method and ε
        uri = _figure_png(sf, x="epsilon", metric="recovery")
        if uri:
            out.append(("Exact recovery per method.", uri))
    return out


def _sha256_file(path) -> str | None:
    try:
        h = hashlib.sha256()
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
        return h.hexdigest()
    except OSError:
        return None


def provenance(df) -> list[tuple[str, str]]:
    """Where each data setting's data came from: generator and seed, data set, or file and sha256."""
    rows = []
    seen = set()
    for r in df.drop_duplicates("data").to_dict("records"):
        if r.get("data_file") is not None and isinstance(r.get("data_file"), str):
            f = r["data_file"]
            if f in seen:
                continue
            seen.add(f)
            sha = _sha256_file(f)
            rows.append((f"file {r['data']}", f"{f} · sha256 {sha or 'file no longer readable'} · target "
                                              f"{r.get('target')} · standardize {r.get('standardize')}"))
        elif isinstance(r.get("dataset"), str):
            prov = ""
            try:
                from dpbench.bench.registry import registry

                p = registry().dataset(r["dataset"]).provenance
                prov = " · ".join(f"{k} {p[k]}" for k in ("source_package", "source_version", "sha256") if k in p)
            except Exception:  # noqa: BLE001 - the plugin may be gone; the name still says what was used
                pass
            rows.append((f"data set {r['dataset']}", prov or "(provenance not available)"))
        elif isinstance(r.get("generator"), str):
            seeds = ", ".join(str(s) for s in sorted(df["seed"].dropna().unique()))
            rows.append((f"generator {r['generator']}", f"simulated; data of each trial drawn from the stream "
                                                        f"named by (seed, setting, trial); run seed(s) {seeds}"))
    return rows


def machine() -> list[tuple[str, str]]:
    """dpbench version and the machine that wrote the report."""
    import numpy
    import pandas
    import scipy

    from dpbench.core.version import __version__

    return [("dpbench", __version__), ("Python", sys.version.split()[0]),
            ("numpy / scipy / pandas", f"{numpy.__version__} / {scipy.__version__} / {pandas.__version__}"),
            ("platform", platform.platform()), ("processor", platform.processor() or platform.machine()),
            ("CPUs", str(os.cpu_count())), ("host", platform.node()),
            ("report written", time.strftime("%Y-%m-%d %H:%M:%S %Z"))]


def run_versions(database) -> list[tuple[str, str]]:
    """The package versions each run that wrote the database recorded (``ResultStore.runs``)."""
    from dpbench.bench.results.store import ResultStore

    store = ResultStore(database, readonly=True)
    try:
        runs = store.runs()
    finally:
        store.close()
    if not runs:
        return [("(not recorded)", "the database was written before dpbench recorded package versions")]
    out, seen = [], set()
    for r in runs:
        text = " · ".join(f"{k} {v}" for k, v in sorted(r["versions"].items()))
        if text not in seen:  # one line per distinct set of versions, with its first run
            seen.add(text)
            out.append((time.strftime("%Y-%m-%d %H:%M", time.localtime(r["started"])), text))
    return out


def have_matplotlib() -> bool:
    """Whether matplotlib can be imported (the figures need it)."""
    import importlib.util

    return importlib.util.find_spec("matplotlib") is not None


MISSING_MATPLOTLIB = "matplotlib is not installed: the report has no figures; pip install 'dpbench[plot]'"


def _kv(rows) -> str:
    return ('<table class="kv">' + "".join(f"<tr><td>{html.escape(str(k))}</td><td>{html.escape(str(v))}</td></tr>"
                                           for k, v in rows) + "</table>")


def audit_section(database) -> str:
    """The privacy-audit section: the results ``dpbench audit --out DATABASE`` stored next to the
    database (``DATABASE.audit.json``), or nothing when there are none."""
    import json

    from dpbench.cli.audit import AUDIT_SUFFIX, worst_text

    path = Path(str(database) + AUDIT_SUFFIX)
    if not path.is_file():
        return ""
    try:
        audits = json.loads(path.read_text(encoding="utf-8"))["audits"]
    except (ValueError, KeyError, OSError):
        return f'<h2>Privacy audit</h2><p class="note">{html.escape(str(path))} is not an audit file.</p>'

    class _Row:  # worst_text reads attributes
        def __init__(self, d):
            self.__dict__.update(d)
            self.worst = type("W", (), d["worst"])() if d.get("worst") else None

    head = "".join(f"<th>{h}</th>" for h in ("selector", "DP type", "guarantee audited", "mode", "pairs",
                                              "worst pair", "verdict", "reproduce"))
    rows = "".join("<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in (
        a["method"], a["dp_type"], "; ".join(a["claims"]), a["mode"], a["pairs_tried"], worst_text(_Row(a)),
        a["verdict"], a["reproduce"])) + "</tr>" for a in audits)
    return (f'<h2>Privacy audit</h2><div class="scroll"><table><tr>{head}</tr>{rows}</table></div>'
            f'<p class="note">From {html.escape(path.name)}: each selector held to the guarantee its rows state '
            "on neighbouring pairs (exact: privacy loss and hockey-stick divergence; Monte-Carlo: a lower bound "
            "on ε). No finding is evidence on the pairs tried, not a proof of privacy.</p>")


def render(df, database: str, interval: str = "wilson") -> str:
    """The report page for the tidy frame ``df`` (see :func:`write_report`)."""
    from dpbench.bench.results.summary import constant_columns, display_columns, summary_frame
    from dpbench.cli.tables import HEADERS, footnote, html_table

    sf = summary_frame(df, interval)
    vary = [c for c in display_columns(sf) if sf[c].astype("string").fillna("<NA>").nunique() > 1]
    config = [(HEADERS.get(k, k), f"{v:g}" if isinstance(v, float) else v) for k, v in constant_columns(sf).items()]
    # "m (no guarantee)" is a split of method m's trials (its guarantee did not hold), not a method
    config += [(f"{HEADERS.get(c, c)} (varies)", ", ".join(
        sorted({f"{v:g}" if isinstance(v, float) else str(v) for v in sf[c].dropna()
                if not (c == "method_label" and str(v).endswith(NO_GUARANTEE))}))) for c in vary]
    params = [c for c in df.columns if c.startswith("param.")]
    for m in sorted(df["method"].dropna().unique()):
        sub = df[df["method"] == m]
        given = {c[6:]: sub[c].dropna().unique().tolist() for c in params if sub[c].notna().any()}
        config.append((f"method {m}", ", ".join(f"{k}={'/'.join(map(str, v))}" for k, v in given.items())
                       or "default parameters"))
    n_rows, n_failed = len(df), int((df["status"] == "failed").sum())
    n_unc = int((df["status"] == "uncertified").sum())
    figs = "".join(f'<figure><img alt="{html.escape(c)}" src="{u}"><figcaption>{html.escape(c)}</figcaption></figure>'
                   for c, u in standard_figures(sf))
    no_figs = (MISSING_MATPLOTLIB if not have_matplotlib() else
               "No setting varies along n, ε or p: no figures (the table holds every result).")
    title = f"dpbench report: {Path(database).name}"
    from dpbench.cli.shared import GUARANTEE_NOTE

    note = GUARANTEE_NOTE + " · " if "guaranteed" in df else ""
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<meta name="viewport" content="width=device-width,initial-scale=1"><style>{CSS}</style></head>
<body><h1>{html.escape(title)}</h1>
<p class="note">{n_rows} results ({n_failed} failed, {n_unc} uncertified — counted, never averaged in) from
{html.escape(str(database))}. Neighbouring data sets: replace-one. Self-contained page: no network access.</p>
<h2>Figures</h2>{figs or f'<p class="note">{html.escape(no_figs)}</p>'}
<h2>Summary</h2><div class="summary">{html_table(sf)}</div>
<p class="note">{html.escape(note + footnote(sf, interval))}</p>
{audit_section(database)}
<h2>Configuration</h2>{_kv(config)}
<h2>Data provenance</h2>{_kv(provenance(df))}
<h2>Software and machine</h2>{_kv(machine())}
<h2>Package versions of the runs</h2>{_kv(run_versions(database))}
</body></html>
"""


def write_report(database, output, interval: str = "wilson") -> None:
    """Write the self-contained HTML report of a results database.

    Parameters
    ----------
    database : str or Path
        Results database written by ``dpbench compare --out``.
    output : str or Path
        The HTML file to write (UTF-8).
    interval : {"wilson", "clopper-pearson", "bootstrap"}
        Interval of the recovery rate in the table and the error bars.

    Raises
    ------
    UserInputError
        Missing or invalid database, or a database without results.
    """
    from dpbench.core.errors import UserInputError
    from dpbench.bench.results.frame import load_results

    df = load_results(database)
    if df.empty:
        raise UserInputError(f"{database} holds no results yet; run `dpbench compare --out {database}` first")
    if not have_matplotlib():  # the page says so too; the terminal must not say nothing (exit 0)
        import warnings

        warnings.warn(MISSING_MATPLOTLIB, stacklevel=2)
    Path(output).write_text(render(df, str(database), interval), encoding="utf-8")
