#!/usr/bin/env python3
"""Checks `strata report` as a user would meet it (ctest, tests/tools/CMakeLists.txt).

  check_report.py files   STRATA OUT PLOTS INPUT...   report from files: its files, PLOTS plots
  check_report.py run     STRATA OUT                  report --run of one quick benchmark
  check_report.py browser STRATA OUT CHROMIUM INPUT...  the page in headless Chromium
  check_report.py scaling STRATA OUT INPUT...   strong-scaling tables over the inputs' ranks
  check_report.py ranks   STRATA OUT            `strata bench --ranks 1,2` into one report
  check_report.py names   STRATA OUT TEMPLATE   awkward benchmark names (from a line of TEMPLATE)

The scaling check computes the tables from the input lines itself (each side's minimum
per problem, peer and rank count; efficiency against the smallest count) and compares
report-data.json and the page's cells with them, then makes the report again and
requires the same bytes (the page's date of making aside).

The browser check reads the marker the page's own script sets once every image has loaded
(body data-images="decoded/total"), and first proves on a copy with one image broken that
it would see a missing plot. Exit 77 (ctest: skipped) only when Chromium is absent.
"""

import base64
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def fail(message):
    sys.stderr.write(f"FAIL: {message}\n")
    sys.exit(1)


def make_report(strata, out, args):
    shutil.rmtree(out, ignore_errors=True)
    cmd = [strata, "report", *args, "-o", out]
    print("running:", " ".join(cmd), flush=True)
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
    print(done.stdout, done.stderr, sep="\n", flush=True)
    if done.returncode != 0:
        fail(f"strata report exited {done.returncode}")
    return done


def check_files(out, plots):
    index = os.path.join(out, "index.html")
    if not os.path.isfile(index):
        fail(f"{index} was not written")
    for name in ("report-data.json",):
        if not os.path.isfile(os.path.join(out, name)):
            fail(f"{name} was not written")
    with open(index, encoding="utf-8") as f:
        page = f.read()
    uris = re.findall(r"<img[^>]* src='data:image/png;base64,([A-Za-z0-9+/=]+)'", page)
    if len(uris) != plots:
        fail(f"index.html has {len(uris)} embedded plots, expected {plots}")
    for i, data in enumerate(uris):
        png = base64.b64decode(data)
        if not png.startswith(PNG_MAGIC) or len(png) < 10000:
            fail(f"embedded plot {i} is not a real PNG ({len(png)} bytes)")
    files = sorted(os.listdir(os.path.join(out, "plots")))
    if len(files) != plots or not all(f.endswith(".png") for f in files):
        fail(f"plots/ holds {files}, expected {plots} PNG files")
    for section in ("<h2 id=machine>Machine</h2>", "<h2 id=software>Software</h2>",
                    "<h2>Summary</h2>"):
        if section not in page:
            fail(f"index.html lacks {section}")
    return page


def without_ranks(variant):
    parts = [p for p in variant.split("/") if not re.fullmatch(r"ranks\d+", p)]
    return "/".join(parts) or variant


def expected_scaling(inputs):
    """{bench: {(problem, peer): {ranks: row}}} for benchmarks spanning 2+ rank counts,
    computed from the input lines, independently of `strata report`."""
    points, counts = {}, {}
    for path in inputs:
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                rec = json.loads(line) if line.strip() else {}
                if "ranks" not in rec:
                    continue
                ranks = int(rec["ranks"])
                counts.setdefault(rec["bench"], set()).add(ranks)
                key = (without_ranks(rec["variant"]), rec["peer"])
                row = points.setdefault(rec["bench"], {}).setdefault(key, {}).setdefault(
                    ranks, {"lines": 0})
                row["lines"] += 1
                for side in ("strata", "peer"):
                    if f"{side}_s" not in row or rec[f"{side}_s"] < row[f"{side}_s"]:
                        row[f"{side}_s"] = rec[f"{side}_s"]
                        row[f"{side}_gflops"] = rec.get(f"{side}_gflops")
                        row[f"{side}_from"] = f"{os.path.basename(path)}:{n}"
    tables = {}
    for bench, by_key in points.items():
        if len(counts[bench]) < 2:
            continue
        for key, rows in by_key.items():
            if len(rows) < 2:
                continue
            p0 = min(rows)
            for p, row in rows.items():
                for side in ("strata", "peer"):
                    row[f"{side}_efficiency"] = rows[p0][f"{side}_s"] * p0 / (row[f"{side}_s"] * p)
                row["ratio"] = row["peer_s"] / row["strata_s"]
            tables.setdefault(bench, {})[key] = rows
    return tables


def close(a, b):
    return abs(a - b) <= 1e-12 * max(abs(a), abs(b))


def check_scaling(out, inputs):
    with open(os.path.join(out, "report-data.json"), encoding="utf-8") as f:
        data = json.load(f)
    with open(os.path.join(out, "index.html"), encoding="utf-8") as f:
        page = f.read()
    want = expected_scaling(inputs)
    got = {e["bench"]: e for e in data.get("scaling", [])}
    if sorted(got) != sorted(want):
        fail(f"scaling tables for {sorted(got)}, expected {sorted(want)}")
    cells = 0
    for bench, tables in want.items():
        got_tables = {(t["problem"], t["peer"]): t for t in got[bench]["tables"]}
        if sorted(got_tables) != sorted(tables):
            fail(f"{bench}: tables {sorted(got_tables)}, expected {sorted(tables)}")
        for key, rows in tables.items():
            t = got_tables[key]
            if [r["ranks"] for r in t["rows"]] != sorted(rows):
                fail(f"{bench} {key}: rows {[r['ranks'] for r in t['rows']]}, expected "
                     f"{sorted(rows)} in order")
            # The page's table: its caption, then one <tr> per rank count.
            m = re.search(re.escape(f"<caption>{key[0]} vs {key[1]} ") + r".*?</table>",
                          page)
            if not m:
                fail(f"index.html has no scaling table for {bench} {key}")
            page_rows = re.findall(r"<tr><td>(\d+)</td>(.*?)</tr>", m.group(0))
            if [int(r[0]) for r in page_rows] != sorted(rows):
                fail(f"index.html's table for {bench} {key} has rows {page_rows}")
            for got_row, (_, html_row) in zip(t["rows"], page_rows):
                row = rows[got_row["ranks"]]
                for field in ("strata_s", "peer_s", "strata_efficiency", "peer_efficiency",
                              "ratio"):
                    if not close(got_row[field], row[field]):
                        fail(f"{bench} {key} ranks {got_row['ranks']}: {field} is "
                             f"{got_row[field]}, expected {row[field]}")
                for field in ("strata_gflops", "peer_gflops"):
                    if (got_row[field] is None) != (row[field] is None) or (
                            row[field] is not None and not close(got_row[field], row[field])):
                        fail(f"{bench} {key} ranks {got_row['ranks']}: {field} is "
                             f"{got_row[field]}, expected {row[field]}")
                if got_row["lines"] != row["lines"]:
                    fail(f"{bench} {key} ranks {got_row['ranks']}: {got_row['lines']} lines, "
                         f"expected {row['lines']}")
                # After the ranks: Strata s, GFLOP/s, efficiency | peer s, GFLOP/s,
                # efficiency | ratio | from
                text = [re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<td>(.*?)</td>",
                                                                      html_row)]
                shown = {"strata_efficiency": text[2], "peer_efficiency": text[5],
                         "ratio": text[6]}
                for field, cell in shown.items():
                    if cell != f"{row[field]:.3f}":
                        fail(f"{bench} {key} ranks {got_row['ranks']}: the page shows "
                             f"{field} {cell!r}, expected {row[field]:.3f}")
                for i, field in ((1, "strata_gflops"), (4, "peer_gflops")):
                    expect = "-" if row[field] is None else f"{row[field]:.4g}"
                    if text[i] != expect:
                        fail(f"{bench} {key} ranks {got_row['ranks']}: the page shows "
                             f"{field} {text[i]!r}, expected {expect!r}")
                if row["lines"] > 1 and not text[7].startswith(f"best of {row['lines']}: "
                                                               f"Strata {row['strata_from']}, "
                                                               f"peer {row['peer_from']}"):
                    fail(f"{bench} {key} ranks {got_row['ranks']}: the page does not say "
                         f"which lines gave the best of {row['lines']}: {text[7]!r}")
                cells += 1
    return data, page, cells


def images_in_browser(chromium, html_path):
    """(decoded, total) images as headless Chromium sees the page."""
    with tempfile.TemporaryDirectory(prefix="strata-chromium-") as profile:
        # A profile of its own: another Chromium on the machine must not share its lock.
        cmd = [chromium, "--headless", "--disable-gpu", "--no-sandbox", "--no-first-run",
               "--disable-dev-shm-usage", f"--user-data-dir={profile}",
               "--virtual-time-budget=30000", "--dump-dom",
               "file://" + os.path.abspath(html_path)]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    m = re.search(r'<body[^>]*data-images="(\d+)/(\d+)"', done.stdout)
    if not m:
        sys.stderr.write(done.stderr[-3000:])
        fail(f"no data-images marker in Chromium's DOM of {html_path} (exit {done.returncode})")
    return int(m.group(1)), int(m.group(2))


def main():
    mode, strata, out = sys.argv[1], sys.argv[2], sys.argv[3]
    if mode == "files":
        plots, inputs = int(sys.argv[4]), sys.argv[5:]
        make_report(strata, out, inputs)
        check_files(out, plots)
        with open(os.path.join(out, "report-data.json"), encoding="utf-8") as f:
            data = json.load(f)
        runs = data["runs"]
        print(f"ok: {plots} plots from {len(runs)} runs")
    elif mode == "names":
        # Names users write: TeX dollars (a lone `$\\frac$` stopped the report), names that
        # fold to one file name ("a b", "a_b", "a/b" shared a plot and an anchor), a
        # hidden-file name, control characters, a 10,000-character variant (the plot
        # overflowed), and 400 comparisons in one benchmark (more rows than a figure draws).
        with open(sys.argv[4], encoding="utf-8") as f:
            template = json.loads(f.readlines()[1])
        benches = ["cost $\\frac$ x", "price $5 and $", "a b", "a_b", "a/b", "..",
                   "ctl\x00\x1b"]
        recs = [dict(template, bench=b, variant="v $x$ \x1b") for b in benches]
        recs.append(dict(template, bench="long", variant="x" * 10000))
        recs += [dict(template, bench="many", variant=f"v{i}") for i in range(400)]
        path = out + ".jsonl"
        with open(path, "w", encoding="utf-8") as f:
            f.writelines(json.dumps(r) + "\n" for r in recs)
        plots = len(benches) + 2
        make_report(strata, out, [path])
        page = check_files(out, plots)
        files = os.listdir(os.path.join(out, "plots"))
        if any(name.startswith(".") for name in files):
            fail(f"hidden plot files: {files}")
        ids = re.findall(r"<section id='([^']*)'", page)
        links = re.findall(r"<a href='#([^']*)'", page)
        if len(set(ids)) != plots or sorted(ids) != sorted(links):
            fail(f"sections {ids} and summary links {links}: expected {plots} distinct")
        if "\x00" in page or "\x1b" in page:
            fail("a control character reached the page raw")
        for text in ("cost $\\frac$ x", "price $5 and $", "v399", "x" * 10000):
            if text not in page:
                fail(f"the page lacks {text[:40]!r}")
        print(f"ok: {plots} plots under distinct names")
    elif mode == "run":
        make_report(strata, out, ["--run", "--quick", "--bench", "copy", "--repeats", "3"])
        page = check_files(out, 1)
        with open(os.path.join(out, "bench.jsonl"), encoding="utf-8") as f:
            lines = [json.loads(line) for line in f if line.strip()]
        meta = lines[0].get("meta")
        if not meta or not all(meta.get(k) for k in ("commit", "compiler", "flags", "date",
                                                   "machine", "libraries")):
            fail(f"bench.jsonl's first line is not complete run metadata: {lines[0]}")
        for rec in lines[1:]:
            for key in ("bench", "variant", "size", "strata_s", "peer", "peer_s", "ratio",
                        "limit", "strata_median_s", "peer_median_s", "ratio_median",
                        "strata_q1_s", "strata_q3_s", "strata_max_s", "peer_q1_s",
                        "peer_q3_s", "peer_max_s", "ratio_q1", "ratio_q3", "repeats"):
                if key not in rec:
                    fail(f"bench.jsonl line lacks {key}: {rec}")
        if meta["commit"] not in page:
            fail("the page does not show the run's commit")
        print(f"ok: --run made a report of {len(lines) - 1} comparisons")
    elif mode == "browser":
        chromium, inputs = sys.argv[4], sys.argv[5:]
        if not chromium or not shutil.which(chromium):
            print("SKIPPED: no Chromium (Debian package chromium, tools/install-deps.sh)")
            sys.exit(77)
        make_report(strata, out, inputs)
        index = os.path.join(out, "index.html")
        with open(index, encoding="utf-8") as f:
            page = f.read()
        expected = len(re.findall(r"<img ", page))
        if expected == 0:
            fail("the page has no images")
        ok, total = images_in_browser(chromium, index)
        if (ok, total) != (expected, expected):
            fail(f"Chromium decoded {ok} of {total} images, expected {expected}/{expected}")
        # The check must see a plot that does not load: break one in a copy.
        broken = os.path.join(out, "broken.html")
        with open(broken, "w", encoding="utf-8") as f:
            f.write(re.sub(r"data:image/png;base64,[A-Za-z0-9+/=]+",
                           "data:image/png;base64,bm90IGEgcG5n", page, count=1))
        ok_broken, _ = images_in_browser(chromium, broken)
        if ok_broken != expected - 1:
            fail(f"with one image broken Chromium reports {ok_broken}/{expected}, expected "
                 f"{expected - 1}/{expected}: the check could not see a missing plot")
        print(f"ok: Chromium decoded all {ok} plots (and saw the broken one in a copy)")
    elif mode == "scaling":
        inputs = sys.argv[4:]
        make_report(strata, out, inputs)
        data, page, rows = check_scaling(out, inputs)
        # Known figures of tests/tools/report/scaling-*.jsonl, in case the check's own
        # computation went wrong the same way: dist-summa vs ScaLAPACK takes 8.0 s at 1
        # rank, best 4.2 s at 2 (second file; the peer's best 4.6 s from the first), 2.5 s
        # at 4.
        if inputs and all(os.path.basename(i).startswith("scaling-") for i in inputs):
            t = next(t for e in data["scaling"] if e["bench"] == "dist-summa"
                     for t in e["tables"] if t["peer"] == "scalapack-pdgemm")
            known = [(1, 1.0, 8.0, 9.0), (2, 8.0 / (2 * 4.2), 4.2, 4.6),
                     (4, 8.0 / (4 * 2.5), 2.5, 2.4)]
            for r, (ranks, eff, ts, tp) in zip(t["rows"], known):
                if r["ranks"] != ranks or not close(r["strata_efficiency"], eff) or \
                        r["strata_s"] != ts or r["peer_s"] != tp:
                    fail(f"dist-summa vs scalapack-pdgemm row {r}, expected ranks {ranks}, "
                         f"efficiency {eff}, strata_s {ts}, peer_s {tp}")
            # dist-spmv has 2 and 4 ranks only: its efficiency is against 2 ranks.
            t = next(t for e in data["scaling"] if e["bench"] == "dist-spmv"
                     for t in e["tables"])
            eff = 0.0010 * 2 / (0.0006 * 4)
            if t["base_ranks"] != 2 or [r["ranks"] for r in t["rows"]] != [2, 4] or \
                    not close(t["rows"][1]["strata_efficiency"], eff):
                fail(f"dist-spmv's table {t}, expected 2 and 4 ranks, efficiency {eff} at 4")
            if not any(e["bench"] == "dist-fft" and
                       "2048/natural vs fftw_mpi_plan_dft_2d (4 ranks)" in e["one_count"]
                       for e in data["scaling"]):
                fail("dist-fft's 2048 problem (4 ranks only) is not listed as one count")
            if any(e["bench"] == "dist-latency" for e in data["scaling"]) or \
                    "<caption>8B" in page:
                fail("dist-latency (one rank count) has a scaling table")
        # Same input, same bytes: the page and its data but for the date of making.
        again = out + "-again"
        make_report(strata, again, inputs)
        texts = []
        for d in (out, again):
            with open(os.path.join(d, "index.html"), encoding="utf-8") as f:
                page_text = re.sub(r"Made \d{4}-\d\d-\d\dT[0-9:]+Z", "Made DATE", f.read())
            with open(os.path.join(d, "report-data.json"), encoding="utf-8") as f:
                made = json.load(f)
            made["report"]["date"] = "DATE"
            texts.append((page_text, made))
        if texts[0][0] != texts[1][0]:
            fail("index.html differs between two reports of the same input")
        if texts[0][1] != texts[1][1]:
            fail("report-data.json differs between two reports of the same input")
        for png in sorted(os.listdir(os.path.join(out, "plots"))):
            with open(os.path.join(out, "plots", png), "rb") as f1, \
                    open(os.path.join(again, "plots", png), "rb") as f2:
                if f1.read() != f2.read():
                    fail(f"plots/{png} differs between two reports of the same input")
        print(f"ok: {rows} scaling rows as computed from the input, twice the same page")
    elif mode == "ranks":
        # `strata bench --ranks 1,2` writes both counts into one output, which the report
        # turns into a table.
        os.makedirs(out, exist_ok=True)
        jsonl = os.path.join(out, "bench.jsonl")
        cmd = [strata, "bench", "--ranks", "1,2", "dist-spmv", "--quick", "--repeats", "2",
               "--json"]
        print("running:", " ".join(cmd), flush=True)
        with open(jsonl, "w", encoding="utf-8") as f:
            done = subprocess.run(cmd, stdout=f, stderr=subprocess.PIPE, text=True,
                                  timeout=240)
        print(done.stderr, flush=True)
        if done.returncode != 0:
            fail(f"strata bench --ranks 1,2 exited {done.returncode}")
        with open(jsonl, encoding="utf-8") as f:
            lines = [json.loads(line) for line in f if line.strip()]
        metas = sum(1 for line in lines if "meta" in line)
        ranks = sorted({int(line["ranks"]) for line in lines if "ranks" in line})
        if metas != 2 or ranks != [1, 2]:
            fail(f"bench.jsonl holds {metas} runs with ranks {ranks}, expected 2 runs, 1 and 2")
        make_report(strata, os.path.join(out, "report"), [jsonl])
        _, _, rows = check_scaling(os.path.join(out, "report"), [jsonl])
        if rows == 0:
            fail("no scaling rows from a run at 1 and 2 ranks")
        print(f"ok: --ranks 1,2 gave {len(lines) - metas} lines and {rows} scaling rows")
    else:
        fail(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
