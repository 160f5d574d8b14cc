#!/usr/bin/env python3
"""Draws the plots of `strata report` and writes DIR/index.html (docs/bench.md).

`strata report` runs this script as `strata_report.py DATA.json DIR` after checking its
input: DATA.json holds the runs it read ({"runs": [{"source", "meta", "records",
"skipped"}], "report": {...}}). One figure per benchmark, PNG, embedded in the page as a
data URI (the page is one file that opens offline) and also kept in DIR/plots/:

* the ratio peer_s / strata_s of each comparison (> 1: Strata faster), with the spread of
  the side-by-side runs where the file has it (median, quartiles, min-max);
* absolute figures: throughput against the hardware bound where the line has `limit`
  (the fraction of the bound reached), else each side's time;
* scaling curves where a benchmark's variants differ in threads, sim devices, ranks (or,
  failing those, in problem size).
"""

import base64
import html
import io
import json
import math
import os
import platform
import re
import sys

try:
    import matplotlib
except ImportError:
    sys.stderr.write(
        f"strata report: matplotlib is missing for {sys.executable}; install Debian's "
        "python3-matplotlib (tools/install-deps.sh) or set STRATA_PYTHON to a python3 "
        "that has it\n")
    sys.exit(2)
matplotlib.use("Agg")  # no display: files only
import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)

# Names are text, not TeX: a `$` in a benchmark or variant name must not start math mode
# (a lone `$\frac$` stopped the whole report; "$5 and $" was drawn in italics).
if "text.parse_math" in plt.rcParams:
    plt.rcParams["text.parse_math"] = False
    PLAIN_DOLLARS = True
else:  # matplotlib before 3.6: escape the dollars instead
    PLAIN_DOLLARS = False
# Labels longer than this are cut (with "…"): a 10,000-character variant overflowed the
# rasterizer and lost every plot. The page's tables keep the full names.
MAX_LABEL = 60
# Rows drawn per figure: at 0.32 inch a row, 150 stay far below the 2^16-pixel limit
# (3,000 variants stopped the report). The page's table keeps every row.
MAX_ROWS = 150

STRATA_COLOR, PEER_COLOR, BOUND_COLOR = "#1f77b4", "#ff7f0e", "#222222"
RUN_COLORS = plt.rcParams["axes.prop_cycle"].by_key()["color"]
# Fields that say how many of something a variant ran on, in the order they are
# preferred as the x axis of a scaling curve.
SCALING_FIELDS = [("threads", "threads"), ("devices", "devices"),
                  ("sim_devices", "sim devices"), ("ranks", "ranks")]
# Fields whose scaling curve joins the runs (the best of any run at each x).
RUNS_JOINED = {"ranks"}


def plain_label(name):
    """A name as drawn: cut to MAX_LABEL characters, dollars literal."""
    # Control characters as \xNN (no font has a glyph for them).
    text = re.sub(r"[\x00-\x1f\x7f]", lambda m: f"\\x{ord(m.group()):02x}", str(name))
    if len(text) > MAX_LABEL:
        text = text[:MAX_LABEL - 1] + "…"
    return text if PLAIN_DOLLARS else text.replace("$", r"\$")


def has_spread(rec, side):
    return all(f"{side}_{q}" in rec for q in ("q1", "median", "q3", "max"))


def five(rec, side):
    """(min, q1, median, q3, max) of `side` ("ratio", "strata_s", "peer_s") or None."""
    if side == "ratio":
        if "ratio_min" in rec and has_spread(rec, "ratio"):
            return (rec["ratio_min"], rec["ratio_q1"], rec["ratio_median"], rec["ratio_q3"],
                    rec["ratio_max"])
        return None
    base = side[:-2]  # strata_s -> strata
    keys = [f"{base}_q1_s", f"{base}_median_s", f"{base}_q3_s", f"{base}_max_s"]
    if all(k in rec for k in keys):
        return (rec[side],) + tuple(rec[k] for k in keys)
    return None


def rate_of(recs):
    """(rate(rec, seconds), unit): a comparison's work per second in the benchmark's own
    unit. Both sides do the same work, so a run of t seconds reaches the Strata side's
    reported rate times strata_s / t; the bound is that rate over `limit` (the fraction of
    the bound reached), in the same unit."""
    for field, unit in (("strata_gbps", "GB/s"), ("strata_gflops", "GFLOP/s")):
        if all(field in r for r in recs):
            return (lambda rec, t, f=field: rec[f] * rec["strata_s"] / t), unit
    return (lambda rec, t: rec["size"] / t), "size units/s"


def row_keys(rows):
    """Distinct (variant, peer) comparisons in order, a repeat in one run numbered."""
    keys, seen = [], {}
    for run, rec in rows:
        base = f"{rec['variant']} vs {rec['peer']}"
        n = seen.get((run, base), 0)
        seen[(run, base)] = n + 1
        key = base if n == 0 else f"{base} #{n + 1}"
        rec["_key"] = key
        if key not in keys:
            keys.append(key)
    return keys


def y_of(keys, runs_in_bench, run, key):
    """Row position; several runs of one comparison sit side by side within its row."""
    y = len(keys) - 1 - keys.index(key)
    if len(runs_in_bench) > 1:
        i = runs_in_bench.index(run)
        y += (i - (len(runs_in_bench) - 1) / 2) * 0.7 / len(runs_in_bench)
    return y


def draw_spread(ax, y, lo, q1, q3, hi, color):
    ax.plot([lo, hi], [y, y], color=color, lw=1, zorder=2)
    ax.plot([q1, q3], [y, y], color=color, lw=5, alpha=0.45, solid_capstyle="butt", zorder=2)


class labels_once:
    """A legend entry the first time a name is drawn, none after (matplotlib repeats them)."""

    def __init__(self):
        self.seen = set()

    def __call__(self, name):
        if name is None or name in self.seen:
            return None
        self.seen.add(name)
        return plain_label(name)


def run_color(runs_in_bench, run, default):
    if len(runs_in_bench) == 1:
        return default
    return RUN_COLORS[runs_in_bench.index(run) % len(RUN_COLORS)]


def ratio_panel(ax, keys, rows, runs_in_bench, run_label):
    values, label = [], labels_once()
    for run, rec in rows:
        y = y_of(keys, runs_in_bench, run, rec["_key"])
        color = run_color(runs_in_bench, run, STRATA_COLOR)
        s = five(rec, "ratio")
        if s:
            draw_spread(ax, y, s[0], s[1], s[3], s[4], color)
            ax.plot(s[2], y, "o", mfc="white", mec=color, ms=5, zorder=3)
            values += [s[0], s[4]]
        ax.plot(rec["ratio"], y, "D", color=color, ms=5, zorder=4,
                label=label(run_label(run)) if len(runs_in_bench) > 1 else None)
        values.append(rec["ratio"])
    ax.axvline(1.0, color="#888888", ls="--", lw=1, zorder=1)
    lo, hi = min(values + [1.0]), max(values + [1.0])
    if hi / lo > 8:
        ax.set_xscale("log")
    ax.set_yticks(range(len(keys)))
    ax.set_yticklabels([plain_label(k) for k in reversed(keys)], fontsize=8)
    ax.set_ylim(-0.6, len(keys) - 0.4)
    ax.set_xlabel("peer time / Strata time  (> 1: Strata faster)")
    ax.set_title("ratio: ◆ of the minima, ○ median, bar IQR, line min–max", fontsize=8)
    ax.grid(axis="x", alpha=0.3)
    if len(runs_in_bench) > 1:
        ax.legend(fontsize=7, loc="best")


SIDES = (("strata", "Strata", STRATA_COLOR, "o", 0.12), ("peer", "peer", PEER_COLOR, "s", -0.12))


def absolute_panel(ax, keys, rows, runs_in_bench):
    recs = [r for _, r in rows]
    with_limit = any(r.get("limit") is not None for r in recs)
    rate, unit = rate_of(recs)
    label = labels_once()
    for run, rec in rows:
        y0 = y_of(keys, runs_in_bench, run, rec["_key"])
        for side, name, side_color, marker, offset in SIDES:
            color = run_color(runs_in_bench, run, side_color)
            y = y0 + offset / len(runs_in_bench)
            s = five(rec, f"{side}_s")
            if with_limit:  # throughput: slower runs give less, so the order flips
                x = rate(rec, rec[f"{side}_s"])
                if s:
                    s = tuple(rate(rec, t) for t in reversed(s))
            else:
                x = rec[f"{side}_s"]
            if s:
                draw_spread(ax, y, s[0], s[1], s[3], s[4], color)
            # With several runs the colours are the runs'; the shapes still tell the sides.
            ax.plot(x, y, marker, color=color, ms=5, zorder=3,
                    label=label(name if len(runs_in_bench) == 1 else f"{marker}: {name}"))
        if with_limit and rec.get("limit"):
            bound = rate(rec, rec["strata_s"]) / rec["limit"]
            ax.plot(bound, y0, "|", color=BOUND_COLOR, ms=16, mew=2.5, zorder=4,
                    label=label("hardware bound"))
    if with_limit:
        ax.set_xlabel(f"throughput ({unit}), bound from `limit`")
        ax.set_xlim(0, ax.get_xlim()[1] * 1.06)  # room for the markers at the bound
        ax.set_title("absolute: best run, bar IQR, line min–max; | the bound", fontsize=8)
    else:
        ax.set_xscale("log")
        ax.set_xlabel("seconds as reported (lower is better)")
        ax.set_title("absolute: best run, bar IQR, line min–max", fontsize=8)
    ax.grid(axis="x", alpha=0.3)
    ax.tick_params(labelleft=False)
    ax.legend(fontsize=7, loc="best")


def strip_count(name):
    return re.sub(r"/\d+$", "", name)


def strip_ranks(name):
    """"1024/natural/ranks2" -> "1024/natural" (the dist-* benchmarks name their count)."""
    return re.sub(r"(^|/)ranks\d+(?=/|$)", "", name).lstrip("/") or name


def mask_numbers(name):
    return re.sub(r"\d+", "N", name)


def strip_size(name):
    return re.sub(r"/[0-9.]+\s*[KMGT]?i?B$", "", name)


def scaling_axis(rows):
    """(x of each row or None, axis name, variant prefix function), or Nones if none scales."""
    def varies(xs, prefix, across_runs=False):
        by_series = {}
        for (run, rec), x in zip(rows, xs):
            if x is not None:
                series = prefix(rec["variant"])
                by_series.setdefault(series if across_runs else (run, series), set()).add(x)
        return any(len(v) >= 2 for v in by_series.values())

    for field, name in SCALING_FIELDS:
        xs = [rec.get(field) for _, rec in rows]
        # Rank counts are usually measured one run each (`--ranks 1,2,4`): one curve
        # joins the runs.
        across = field in RUNS_JOINED
        # The count may sit inside the name too ("host+2sim", "n2048/ranks2"): then that
        # part is dropped, or failing that, every number is masked.
        for prefix in (strip_count, strip_ranks, mask_numbers):
            if varies(xs, prefix, across):
                return xs, name, prefix
    # A trailing /N in the variant: a count the line has no field for.
    xs = [float(m.group(1)) if (m := re.search(r"/(\d+)$", rec["variant"])) else None
          for _, rec in rows]
    if varies(xs, strip_count):
        return xs, "count (from the variant)", strip_count
    xs = [rec["size"] for _, rec in rows]
    if varies(xs, strip_size):
        return xs, "size", strip_size
    return None, None, None


def scaling_panel(ax, rows, xs, xlabel, prefix, runs_in_bench, run_label):
    """Best run of each Strata variant and of each peer at every x."""
    recs = [r for _, r in rows]
    with_limit = any(r.get("limit") is not None for r in recs)
    rate, unit = rate_of(recs)
    # A Strata variant's best over the peers it met; a peer per Strata variant, as the
    # variant names the problem too (spmv: the matrix).
    joined = xlabel in {label for field, label in SCALING_FIELDS if field in RUNS_JOINED}
    best = {}  # (run, variant, side, name) -> {x: (seconds, y)}; run -1 where joined
    for (run, rec), x in zip(rows, xs):
        if x is None:
            continue
        vprefix = prefix(rec["variant"])
        for side, name in (("strata", "Strata " + vprefix),
                           ("peer", f"{prefix(rec['peer'])} (vs {vprefix})")):
            points = best.setdefault((-1 if joined else run, vprefix, side, name), {})
            t = rec[f"{side}_s"]
            if x not in points or t < points[x][0]:
                points[x] = (t, rate(rec, t) if with_limit else t)
    several = len(runs_in_bench) > 1 and not joined
    drawn = 0
    for (run, vprefix, side, name), points in sorted(best.items(), key=str):
        if len(points) < 2:
            continue
        color = RUN_COLORS[drawn % len(RUN_COLORS)]
        drawn += 1
        px = sorted(points)
        py = [points[x][1] for x in px]
        style = "o-" if side == "strata" else "s--"
        ax.plot(px, py, style, color=color, ms=4,
                lw=1.5 if side == "strata" else 1,
                label=plain_label(name + (f" [{run_label(run)}]" if several else "")))
    if xlabel == "size":
        ax.set_xscale("log")
    else:
        ax.set_xticks(sorted({x for x in xs if x is not None}))
    ax.set_xlabel(xlabel)
    if with_limit:
        bounds = [rate(r, r["strata_s"]) / r["limit"] for r in recs if r.get("limit")]
        if bounds:
            ax.axhline(max(bounds), color=BOUND_COLOR, lw=1, ls=":", label="hardware bound")
        ax.set_ylabel(f"throughput ({unit})")
        ax.set_ylim(bottom=0)
    else:
        ax.set_yscale("log")
        ax.set_ylabel("seconds as reported")
    ax.set_title("scaling: solid Strata, dashed peer (best "
                 + ("of all runs" if joined else "run") + " at each x)", fontsize=8)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=6, loc="best")


def figure_for(bench, rows, run_label):
    keys = row_keys(rows)
    if len(keys) > MAX_ROWS:
        title = (f"{plain_label(bench)}: the first {MAX_ROWS} of {len(keys)} comparisons "
                 "(all in the table)")
        shown = set(keys[:MAX_ROWS])
        keys = keys[:MAX_ROWS]
        rows = [(run, rec) for run, rec in rows if rec["_key"] in shown]
    else:
        title = plain_label(bench)
    runs_in_bench = sorted({run for run, _ in rows})
    xs, xlabel, prefix = scaling_axis(rows)
    panels = 3 if xs else 2
    height = max(2.8, 0.32 * len(keys) * max(1, len(runs_in_bench) ** 0.5) + 1.5)
    fig = plt.figure(figsize=(5.2 * panels + 1.5, height), layout="constrained")
    grid = fig.add_gridspec(1, panels, width_ratios=[1.25, 1, 1.1][:panels])
    ax_ratio = fig.add_subplot(grid[0])
    ax_abs = fig.add_subplot(grid[1], sharey=ax_ratio)
    ratio_panel(ax_ratio, keys, rows, runs_in_bench, run_label)
    absolute_panel(ax_abs, keys, rows, runs_in_bench)
    if xs:
        scaling_panel(fig.add_subplot(grid[2]), rows, xs, xlabel, prefix, runs_in_bench,
                      run_label)
    fig.suptitle(title, fontsize=11, fontweight="bold")
    png = io.BytesIO()
    # No software/date metadata in the PNG: the same data gives the same bytes.
    fig.savefig(png, format="png", dpi=110, metadata={"Software": None})
    plt.close(fig)
    return png.getvalue(), bool(xs)


def fmt_s(v):
    return "" if v is None else f"{v:.4g}"


def slug(name, used):
    """A file and anchor name for `name`, distinct from those in `used` (which it joins):
    "a b", "a_b" and "a/b" would all be "a_b"; "" and ".." would be hidden files."""
    base = re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip(".") or "bench"
    s, n = base, 1
    while s in used:
        n += 1
        s = f"{base}-{n}"
    used.add(s)
    return s


def esc(v):
    # Control characters (NUL, ESC, ...) as \xNN: html.escape leaves them raw.
    return re.sub(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]", lambda m: f"\\x{ord(m.group()):02x}",
                  html.escape(str(v)))


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def fmt_cell(v, spec):
    return "-" if v is None else format(v, spec)


def from_text(where):
    """"/path/to/run.jsonl:4" -> "run.jsonl:4", as the runs are labelled."""
    path, _, line = where.rpartition(":")
    return f"{os.path.basename(path)}:{line}"


def scaling_tables_html(entry):
    """The strong-scaling tables `strata report` computed (report-data.json "scaling")."""
    parts = ["<h3>strong scaling</h3><p>One row per rank count, from every run read. "
             "Efficiency is t<sub>min</sub> &middot; P<sub>min</sub> / (t<sub>P</sub> "
             "&middot; P), against the smallest count present (1 = perfect scaling); "
             "GFLOP/s as the lines report them (- where they report none). Where several "
             "lines give one count, each side's minimum time is taken (<b>best of "
             "N</b>).</p>"]
    for t in entry["tables"]:
        rows = []
        for r in t["rows"]:
            if r["lines"] > 1:
                src = (f"best of {r['lines']}: Strata {esc(from_text(r['strata_from']))}, "
                       f"peer {esc(from_text(r['peer_from']))}")
            else:
                src = esc(from_text(r["strata_from"]))
            rows.append(
                f"<tr><td>{r['ranks']}</td><td>{fmt_s(r['strata_s'])}</td>"
                f"<td>{fmt_cell(r['strata_gflops'], '.4g')}</td>"
                f"<td><b>{r['strata_efficiency']:.3f}</b></td><td>{fmt_s(r['peer_s'])}</td>"
                f"<td>{fmt_cell(r['peer_gflops'], '.4g')}</td>"
                f"<td>{r['peer_efficiency']:.3f}</td><td>{r['ratio']:.3f}</td>"
                f"<td>{src}</td></tr>")
        parts.append(
            f"<table class=scaling><caption>{esc(t['problem'])} vs {esc(t['peer'])} "
            f"(efficiency against {t['base_ranks']} rank(s))</caption><tr><th>ranks</th>"
            "<th>Strata s</th><th>Strata GFLOP/s</th><th>Strata efficiency</th>"
            "<th>peer s</th><th>peer GFLOP/s</th><th>peer efficiency</th>"
            "<th>peer_s / strata_s</th><th>from</th></tr>" + "".join(rows) + "</table>")
    if entry["one_count"]:
        parts.append("<p>Measured at one rank count only (no table): "
                     + ", ".join(esc(x) for x in entry["one_count"]) + ".</p>")
    return "".join(parts)


def software_table(run):
    meta = run.get("meta")
    if not meta:
        return ("<p>This file has no metadata line (written before `strata bench` recorded "
                "its run): compiler, flags and commit of the run are unknown.</p>")
    rows = []
    for key in ("strata_version", "commit", "compiler", "build_type", "flags", "date", "host",
                "command", "repeats", "quick", "sim_devices"):
        if key in meta:
            rows.append(f"<tr><th>{esc(key)}</th><td><code>{esc(meta[key])}</code></td></tr>")
    for name, version in (meta.get("libraries") or {}).items():
        rows.append(f"<tr><th>{esc(name)}</th><td>{esc(version)}</td></tr>")
    return "<table class=kv>" + "".join(rows) + "</table>"


def main():
    if len(sys.argv) != 3:
        sys.stderr.write("usage: strata_report.py DATA.json DIR (run by `strata report`)\n")
        return 2
    data_path, out = sys.argv[1], sys.argv[2]
    with open(data_path, encoding="utf-8") as f:
        data = json.load(f)
    runs, report = data["runs"], data["report"]
    scaling_of = {entry["bench"]: entry for entry in data.get("scaling", [])}
    os.makedirs(os.path.join(out, "plots"), exist_ok=True)

    def run_label(i):
        meta = runs[i].get("meta") or {}
        name = os.path.basename(runs[i]["source"])
        same_file = sum(1 for r in runs if r["source"] == runs[i]["source"]) > 1
        label = f"{name} #{i + 1}" if same_file else name
        return f"{label} ({meta['date']})" if meta.get("date") else label

    # Benchmarks in the order they first appear; each with its comparisons of every run.
    benches = {}
    for i, run in enumerate(runs):
        for rec in run["records"]:
            benches.setdefault(rec["bench"], []).append((i, rec))

    sections, summary = [], []
    plots = 0
    slugs = set()
    for bench, rows in benches.items():
        png, scaling = figure_for(bench, rows, run_label)
        name = slug(bench, slugs)
        with open(os.path.join(out, "plots", name + ".png"), "wb") as f:
            f.write(png)
        plots += 1
        uri = "data:image/png;base64," + base64.b64encode(png).decode("ascii")
        ratios = [r["ratio"] for _, r in rows]
        summary.append(
            f"<tr><td><a href='#{esc(name)}'>{esc(bench)}</a></td><td>{len(rows)}</td>"
            f"<td>{geomean(ratios):.3f}</td><td>{min(ratios):.3f}</td><td>{max(ratios):.3f}</td>"
            f"<td>{'yes' if any(r.get('limit') is not None for _, r in rows) else ''}</td>"
            f"<td>{'yes' if scaling or bench in scaling_of else ''}</td></tr>")
        table = []
        for run, r in rows:
            spread = five(r, "ratio")
            med = f"{spread[2]:.3f} [{spread[1]:.3f}, {spread[3]:.3f}]" if spread else "–"
            table.append(
                f"<tr><td>{esc(run_label(run))}</td><td>{esc(r['variant'])}</td>"
                f"<td>{esc(r['peer'])}</td><td>{fmt_s(r['size'])}</td>"
                f"<td>{fmt_s(r['strata_s'])}</td><td>{fmt_s(r['peer_s'])}</td>"
                f"<td><b>{r['ratio']:.3f}</b></td><td>{med}</td>"
                f"<td>{fmt_s(r.get('limit'))}</td><td>{esc(r.get('note', ''))}</td></tr>")
        sections.append(
            f"<section id='{esc(name)}'><h2>{esc(bench)}</h2>"
            f"<img class=plot src='{uri}' alt='plots of {esc(bench)}'>"
            + (scaling_tables_html(scaling_of[bench]) if bench in scaling_of else "") +
            "<details><summary>numbers</summary><table class=data><tr><th>run</th>"
            "<th>variant</th><th>peer</th><th>size</th><th>strata_s</th><th>peer_s</th>"
            "<th>ratio</th><th>median [IQR]</th><th>limit</th><th>note</th></tr>"
            + "".join(table) + "</table></details></section>")

    skipped = [(i, s) for i, run in enumerate(runs) for s in run["skipped"]]
    skipped_html = "".join(f"<li><b>{esc(s['bench'])}</b> ({esc(run_label(i))}): "
                           f"{esc(s['reason'])}</li>" for i, s in skipped)

    machines = []
    for i, run in enumerate(runs):
        meta = run.get("meta") or {}
        if meta.get("machine"):
            machines.append(f"<h3>{esc(run_label(i))}</h3><pre>{esc(meta['machine'])}</pre>")
    if report.get("machine"):
        machines.append(
            "<h3>the machine this report was made on</h3><p>Some inputs carry no machine "
            "description (no metadata line); this is where the report ran, which may not be "
            f"where they were measured.</p><pre>{esc(report['machine'])}</pre>")

    python_versions = (f"Python {platform.python_version()}, matplotlib "
                       f"{matplotlib.__version__}")
    software = "".join(f"<h3>{esc(run_label(i))}</h3>{software_table(run)}"
                       for i, run in enumerate(runs))
    made = (f"strata {esc(report['strata_version'])} (commit {esc(report['commit'])}, "
            f"{esc(report['compiler'])}, {esc(report['build_type'])}); {esc(python_versions)}")

    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>Strata benchmark report</title>
<style>
body {{ font-family: sans-serif; margin: 1.5em auto; max-width: 1500px; color: #222; }}
table {{ border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0; }}
td, th {{ border: 1px solid #ccc; padding: 2px 6px; text-align: left; }}
table.scaling td {{ text-align: right; }}
caption {{ text-align: left; font-weight: bold; padding: 2px 0; }}
img.plot {{ max-width: 100%; border: 1px solid #eee; }}
pre {{ background: #f6f6f6; padding: 0.6em; font-size: 0.8em; overflow-x: auto; }}
section {{ margin-bottom: 2em; }}
</style></head>
<body>
<h1>Strata benchmark report</h1>
<p>Made {esc(report['date'])} by {made}, from {len(runs)} run(s):
{", ".join(esc(run_label(i)) for i in range(len(runs)))}.
Each comparison ran both sides in one process, interleaved; <b>ratio</b> is peer time /
Strata time of the best runs (&gt; 1: Strata is faster), and where the file has the spread
of the runs, the median ratio of runs taken side by side and its quartiles are shown too.
<b>limit</b> is the fraction of the hardware bound reached (e.g. STREAM bandwidth).</p>
<h2>Summary</h2>
<table><tr><th>benchmark</th><th>comparisons</th><th>geometric mean ratio</th><th>min</th>
<th>max</th><th>bound</th><th>scaling</th></tr>{"".join(summary)}</table>
{"<h2>Skipped</h2><ul>" + skipped_html + "</ul>" if skipped else ""}
{"".join(sections)}
<h2 id=machine>Machine</h2>{"".join(machines) or "<p>No machine description.</p>"}
<h2 id=software>Software</h2>{software}
<script>
// A marker for tests/tools/report: how many of the plots the browser decoded.
window.addEventListener("load", function () {{
  var images = Array.prototype.slice.call(document.images);
  var ok = images.filter(function (i) {{ return i.complete && i.naturalWidth > 0; }}).length;
  document.body.setAttribute("data-images", ok + "/" + images.length);
}});
</script>
</body></html>
"""
    with open(os.path.join(out, "index.html"), "w", encoding="utf-8") as f:
        f.write(page)
    print(f"strata report: {os.path.join(out, 'index.html')}: {plots} plots, "
          f"{len(skipped)} skipped benchmark(s)")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except OSError as e:  # DIR/index.html a folder, DIR/plots a file, a full disk
        sys.stderr.write(f"strata report: cannot write {e.filename}: {e.strerror}\n")
        sys.exit(1)
