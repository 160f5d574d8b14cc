#!/usr/bin/env python3
"""Checks `strata report` as a user would meet it (ctest, tests/tools/CMakeLists.txt).

  check_report.py files   STRATA OUT PLOTS INPUT...   report from files: its files, PLOTS plots
  check_report.py run     STRATA OUT                  report --run of one quick benchmark
  check_report.py browser STRATA OUT CHROMIUM INPUT...  the page in headless Chromium

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
    else:
        fail(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
