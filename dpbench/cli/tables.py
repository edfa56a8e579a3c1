"""Summary tables of the tidy results frame: rich (terminal, readable in 100 columns),
Markdown and HTML, each keyed on every column that varies in the run."""

from __future__ import annotations

import html
import io
import math

from rich.markup import escape

from dpbench.bench.results.summary import constant_columns, display_columns

#: Short headers of identity columns (the full names are in the tidy frame).
HEADERS = {"method_label": "method", "epsilon": "ε", "rho": "ρ", "snr": "SNR", "lam": "Λ", "b_x": "b_x",
           "b_y": "b_y", "seed": "seed", "draws": "draws", "sensitivity_bound": "Δ bound"}


def _num(v, spec=".3f"):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "—"
    try:
        import pandas as pd

        if pd.isna(v):
            return "—"
    except (TypeError, ValueError):
        pass
    if isinstance(v, float):
        return format(v, spec)
    return str(v)


def _short(v, spec) -> str:
    """``_num`` with a ``g`` spec, but a value of 10 or more as a plain integer: ".1g" printed a
    10 s preparation as "1e+01" in the terminal table."""
    text = _num(v, spec)
    return f"{v:.0f}" if "e+" in text else text


def _cell(col, v):
    if col == "epsilon":
        return f"{v:g}"
    if isinstance(v, float):
        return f"{v:g}"
    return _num(v)


def _bound(v, spec, up: bool) -> str:
    """An interval bound rounded outwards at the precision of ``spec`` (a fixed-point spec).

    Rounding to nearest printed a Wilson upper bound of 0.004 as 0.00, so a rate of 0 read
    "0.00 [0.00, 0.00]", the "0 ± 0" the interval is there to avoid; outward rounding keeps
    the printed interval a superset of the computed one.
    """
    if v is None or (isinstance(v, float) and math.isnan(v)) or not spec.endswith("f"):
        return _num(v, spec)
    scale = 10 ** int(spec[1:-1])
    # the 1e-9 keeps a bound that is already on the grid (0.25 at .2f) from moving a step
    v = (math.ceil(v * scale - 1e-9) if up else math.floor(v * scale + 1e-9)) / scale
    return format(min(max(v, 0.0), 1.0), spec)


def rate_text(d, spec=".3f") -> str:
    """``rate [lo, hi]`` of a summary row's exact recovery (— when no ok trial); the interval
    is rounded outwards, so a rate of 0 shows a positive upper bound."""
    if d["recovery"] is None or math.isnan(d["recovery"]):
        return "—"
    return (f"{d['recovery']:{spec}} [{_bound(d['recovery_lo'], spec, False)}, "
            f"{_bound(d['recovery_hi'], spec, True)}]")


def _preprocessed(d) -> str | None:
    """The row's non-private preprocessing of real data (``--standardize`` other than none), or None."""
    mode = d.get("standardize")
    return mode if isinstance(mode, str) and mode != "none" else None


#: Marks a guarantee that holds only given a non-private preprocessing (:func:`preprocessing_note`).
PREPROCESSED_MARK = " †"


def dp_text(d) -> str:
    """The guarantee that holds for the row's trials (else the DP type), with ε' when it differs from ε.

    A guarantee on real data preprocessed with the data's own statistics (``--standardize``)
    holds for the selection given the preprocessed data only: it carries :data:`PREPROCESSED_MARK`,
    explained by :func:`preprocessing_note` (the reports of a stored run said "pure ε=1" with
    no word of it).
    """
    g = d.get("guarantee")
    if isinstance(g, str) and g:
        return g + (PREPROCESSED_MARK if _preprocessed(d) and not g.startswith("none") else "")
    dp = str(d.get("dp_type") or "")
    es = d.get("epsilon_spent")
    if es is not None and not (isinstance(es, float) and math.isnan(es)) and es != d["epsilon"]:
        dp += f" (ε'={es:.3g})"
    if isinstance(d.get("diagnostics"), str):  # what the selector declares (Selector.diagnostics)
        dp += f" ({d['diagnostics']})"
    return dp


def trials_text(d) -> str:
    """``k/N`` when the row holds k of the setting's N trials (the guarantee split), else ``k``."""
    total = d.get("total_trials", d["trials"])
    return f"{d['trials']}/{total}" if total != d["trials"] else str(d["trials"])


def has_rank_metrics(sf) -> bool:
    """True when some row has TOP / GREAT / GOOD rates (a reference with a full ranking: sis, lasso)."""
    return "rank_great" in sf and bool(sf["rank_great"].notna().any())


def rank_text(d, spec=".2f") -> str:
    """``TOP/GREAT/GOOD`` rates of a summary row (swope2024 Figure 8), — where not defined."""
    return "/".join(_num(d.get(f"rank_{m}"), spec) for m in ("top", "great", "good"))


def table_columns(sf) -> list[str]:
    return display_columns(sf)


#: Metrics of private estimation after selection: (summary column, header, format).
ESTIMATION_HEADS = (("utility_loss", "utility loss", ".2g"), ("test_mse", "test MSE", ".3g"),
                    ("test_accuracy", "test acc.", ".3f"))


def estimation_columns(sf) -> list[tuple[str, str, str]]:
    """The estimation metrics measured in some row of the summary (none without ``--estimate``)."""
    return [h for h in ESTIMATION_HEADS if h[0] in sf and sf[h[0]].notna().any()]


#: The terminal table's width (docs/user-guide/compare.md: "It fits in 100 columns") and the guarantee column's least width.
TABLE_WIDTH, GUARANTEE_WIDTH = 100, 13

#: Columns the terminal table leaves out, in this order, when the others and the guarantee do not
#: fit the console's width (an 80-column terminal): times first; the Markdown / HTML reports keep all.
OPTIONAL_HEADS = ("trial s", "prep s", "ms/ draw", "P exact")


def rich_table(sf, title="dpbench", level=0.95, width=TABLE_WIDTH):
    """A rich Table of a :func:`~dpbench.bench.results.summary.summary_frame` (user text escaped).

    Parameters
    ----------
    sf : pandas.DataFrame
        Summary frame.
    width : int
        Columns available (the console's width; 100 outside a terminal). The method / data
        labels fold to at least 10 characters and then the :data:`OPTIONAL_HEADS` columns are
        left out (named in the caption), so that the guarantee column is never cropped. Numbers
        never wrap: a table that still does not fit keeps its natural width
        (:func:`print_table` prints it wider than the console rather than cutting it).
    """
    from rich import box
    from rich.table import Table

    ident = display_columns(sf)
    extra = estimation_columns(sf)
    table = Table(title=title, header_style="bold", box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 0, 0, 0))
    # TOP / GREAT / GOOD are in the Markdown / HTML tables and plots: this one stays within 100 columns;
    # with estimation metrics the per-trial time of all methods makes room for them
    times = ["prep s", "ms/ draw"] if extra else ["prep s", "trial s", "ms/ draw"]
    heads = [HEADERS.get(c, c) for c in ident] + ["trials", f"recovery [{level:.0%} CI]", "P exact", "F1"] + [
        h for _, h, _ in extra] + times + ["fail/ unc.", "guarantee"]
    body, widths = [], [1] * len(heads)
    for d in sf.to_dict("records"):
        plain = [_cell(c, d[c]) for c in ident]
        if "method_label" in ident and d.get("guaranteed") is False:  # the guarantee column says why
            plain[ident.index("method_label")] = str(d["method_label"]).replace(" (no guarantee)", " (no DP)")
        plain += [trials_text(d), rate_text(d, ".2f").replace(", ", ","), _num(d["recovery_prob"], ".2g"),
                  _num(d["f1"], ".2f")] + [_num(d[k], spec) for k, _, spec in extra] + [_short(d["prepare_s"], ".1g")] + (
                  [] if extra else [_short(d["trial_prepare_all_s"], ".1g")]) + [_short(d["draw_ms"], ".2g"), f"{d['failed']}/{d['uncertified']}", dp_text(d)]
        widths = [max(w, len(t)) for w, t in zip(widths, plain)]
        cells = [escape(t) for t in plain]
        if d["uncertified"]:
            cells[-2] = f"{d['failed']}/[red]{d['uncertified']}[/red]"
        body.append(cells)
    # cells never wrap (a column is at least as wide as its widest cell, up to 24); headers and
    # the DP text wrap
    widths = [max(min(24, w), max(len(word) for word in h.split())) for h, w in zip(heads, widths)]
    labels = [i for i, c in enumerate(ident) if c in ("method_label", "data")]
    # a label wraps at its spaces only, never inside a word: "exhaustive(limit=2000000" over ")" read as
    # another number
    longest = {i: max([len(w) for row in body for w in row[i].split()] or [1]) for i in labels}
    for i in labels:
        widths[i] = max(widths[i], longest[i])
    keep = list(range(len(heads)))

    def excess():
        # rich crops or drops the last column when the fixed ones leave it no room ("pure ε=0.5"
        # printed as "pur"; on an 80-column terminal the whole column vanished and numbers wrapped
        # into two lines, "0.38" over "8"): the box puts one separator between the columns plus
        # its two edges, and the guarantee column needs its min_width
        fixed = sum(widths[i] for i in keep[:-1]) + len(keep) + 1
        return fixed + max(10, min(GUARANTEE_WIDTH, widths[-1])) - width

    for i in labels:  # first narrow (fold) the label columns, down to 10 characters or their longest word
        cut = max(min(excess(), widths[i] - max(10, longest[i])), 0)
        widths[i] -= cut
    dropped = []
    for h in OPTIONAL_HEADS:  # then leave out the least important numbers
        if excess() > 0 and h in heads:
            keep.remove(heads.index(h))
            dropped.append(h.replace("/ ", "/"))
    for i in keep:
        h, w = heads[i], widths[i]
        left = i < len(ident) and ident[i] in ("method_label", "data") or h == "guarantee"
        table.add_column(h, justify="left" if left else "right", overflow="fold",
                         **({"min_width": 10} if h == "guarantee" else {"width": w}))
    if dropped:
        table.caption = f"not shown in {width} columns: {', '.join(dropped)} (dpbench report --markdown has all)"
        table.caption_justify = "left"
    recs = sf.to_dict("records")
    for i, cells in enumerate(body):
        d, nxt = recs[i], recs[i + 1] if i + 1 < len(recs) else None
        dim = d.get("guaranteed") is False
        # a rule after each setting's guaranteed rows and after its no-guarantee rows
        end = nxt is not None and "guaranteed" in d and (d["guaranteed"] != nxt["guaranteed"])
        table.add_row(*[cells[j] for j in keep], style="dim" if dim else None, end_section=end)
    return table


def print_table(out, table) -> None:
    """Print a :func:`rich_table` on the console ``out``, wider than the console when it needs to
    be: rich would otherwise drop its last column (the guarantee) or wrap numbers inside cells."""
    from rich.console import Console
    from rich.measure import Measurement
    from rich.segment import Segments

    need = Measurement.get(out, out.options.update(width=10_000), table).minimum
    if need <= out.width:
        out.print(table)
        return
    # laid out on a console as wide as the table, then printed without wrapping or cropping
    wide = Console(width=need, file=io.StringIO(), force_terminal=out.is_terminal, color_system=out.color_system)
    out.print(Segments(wide.render(table, wide.options)), soft_wrap=True)


def constants_text(sf) -> str:
    """One line with the settings that are the same for every row."""
    const = constant_columns(sf)
    return " · ".join(f"{HEADERS.get(k, k)}={v:g}" if isinstance(v, float) else f"{HEADERS.get(k, k)}={v}"
                      for k, v in const.items())


FOOTNOTE = ("trials: k/N when the row holds k of the setting's N trials (the guarantee split them) · "
            "exact recovery: pooled rate over all draws of the ok trials with its {interval} interval · "
            "P(exact): the mechanism's analytic probability (— where not available) · prep s: median per-trial "
            "preparation of this method (ε-independent; oracle work shared by methods of a trial is charged to the "
            "first that needs it) · trial s: median preparation of all methods of a trial (shared work once) "
            "· ms/draw: median time per private draw · fail/unc.: failed and uncertified trials, never "
            "averaged in")

#: Appended to :data:`FOOTNOTE` only when a row has the rates (a ranked reference: sis or lasso).
RANK_NOTE = (" · TOP/GREAT/GOOD (Markdown and HTML tables): share of draws that are the reference top-s / hold "
             "its top s/10 with the rest in its top 11s/10 / hold its top s/100 with the rest in its top 3s/2 "
             "(swope2024 Figure 8)")


ESTIMATION_NOTE = (" · with --estimate: ε is the budget of the pair (support, coefficients), split into "
                   "ε_select = (1 − f) ε for the selection (recovery, F1 and P(exact) are at ε_select) and "
                   "ε_estimate = f ε for the estimate; the guarantee is their basic composition, or the selection's own "
                   "accountant's composition when tighter (diagnostic composition); rows are the 70 % "
                   "training part of each trial (n) · utility loss: the estimate's objective minus the certified "
                   "best-subset optimum on the training rows (least squares: divided by 2n) · test MSE / test acc.: "
                   "on the 30 % held-out rows, unclipped; all three are means over draws and trials")


def preprocessing_note(sf) -> str:
    """``† <notice>`` for each non-private preprocessing among the rows that carry the mark ('' when
    none does: a row whose guarantee is ``none: ...`` claims nothing the notice could qualify)."""
    from dpbench.core.datafiles import not_private_notice

    if sf is None or "standardize" not in sf:
        return ""
    marked = [d for d in sf.to_dict("records") if dp_text(d).endswith(PREPROCESSED_MARK)]
    modes = sorted({m for m in (_preprocessed(d) for d in marked) if m})
    return "".join(f"†{' --standardize ' + m if len(modes) > 1 else ''}: {not_private_notice(m)} · "
                   for m in modes)


def footnote(sf, interval: str) -> str:
    """The table's footnote: the preprocessing note (†) first when a row has one, the
    TOP/GREAT/GOOD legend when a row has those rates, and the estimation note when the
    summary has estimation metrics."""
    return (preprocessing_note(sf) + FOOTNOTE.format(interval=interval)
            + (RANK_NOTE if has_rank_metrics(sf) else "")
            + (ESTIMATION_NOTE if estimation_columns(sf) else ""))


def _report_table(sf, level, html_cells: bool):
    """Header and per-row (record, cells) of the Markdown / HTML report tables, which differ only
    in two headers and in the HTML table's F1 interval."""
    ident = display_columns(sf)
    ranked = has_rank_metrics(sf)
    extra = estimation_columns(sf)
    head = [HEADERS.get(c, c) for c in ident] + ["trials", f"exact recovery [{level:.0%} CI]",
                                                 "P(exact)" if html_cells else "P(exact) analytic",
                                                 "F1 [CI]" if html_cells else "F1",
                                                 *(["top-k", "TOP/GREAT/GOOD"] if ranked else []),
                                                 *[h for _, h, _ in extra], "prep s",
                                                 "trial prep s", "ms/draw", "guarantee", "failed", "uncertified"]
    rows = []
    for d in sf.to_dict("records"):
        f1 = _num(d["f1"])
        if html_cells:
            f1 = f"{_num(d['f1'])} [{_num(d['f1_lo'])}, {_num(d['f1_hi'])}]" if not math.isnan(d["f1"]) else "—"
        cells = [_cell(c, d[c]) for c in ident] + [
            trials_text(d), rate_text(d), _num(d["recovery_prob"], ".3g"), f1,
            *([_num(d["topk"]), rank_text(d, ".3f")] if ranked else []),
            *[_num(d[k], spec) for k, _, spec in extra], _num(d["prepare_s"], ".3g"),
            _num(d["trial_prepare_all_s"], ".3g"), _num(d["draw_ms"], ".3g"), dp_text(d), str(d["failed"]),
            str(d["uncertified"])]
        rows.append((d, cells))
    return head, rows


def markdown_table(sf, level=0.95) -> str:
    """The summary frame as a GitHub-flavoured Markdown table."""
    head, rows = _report_table(sf, level, html_cells=False)
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for _, cells in rows:
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines) + "\n"


def html_table(sf, level=0.95) -> str:
    """The summary frame as an HTML table (every cell escaped)."""
    head, rows = _report_table(sf, level, html_cells=True)
    # text columns (labels, the guarantee) may wrap between words (class "text"); numbers never do
    text = {HEADERS.get(c, c) for c in ("method_label", "data", "dataset", "data_file")} | {"guarantee"}
    tds = ['<td class="text">' if h in text else "<td>" for h in head]
    out = ["<table><thead><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in head) + "</tr></thead><tbody>"]
    for d, cells in rows:
        cls = ' class="warn"' if d["uncertified"] or d["failed"] or d.get("guaranteed") is False else ""
        out.append(f"<tr{cls}>" + "".join(f"{td}{html.escape(c)}</td>" for td, c in zip(tds, cells)) + "</tr>")
    out.append("</tbody></table>")
    return "\n".join(out)
