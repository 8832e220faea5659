#!/usr/bin/env python3
"""The dated record of a GPU run: which machine, which suites passed, were
skipped or failed, and the figures beside their peers, as one Markdown file
for bench/results/ (YYYY-MM-DD-<gpu>.md).

bench/device_run.sh calls it at the end of a run; it reads only logs, so it
runs anywhere on logs kept from a run:

  bench/device_summary.py [--machine machine.log] [--tests tests.log] [--ctest ctest.log]
      [--commit REV] [--date YYYY-MM-DD] [--command TEXT] [--source TEXT]
      [--out-dir DIR]... [FIGURE_LOG...]

  --tests   device_run.sh's tests.log: each suite's output between "== NAME"
            and the line "@@ suite NAME rc=N seconds=S" the script writes
  --ctest   the output of ctest (its "N/M Test #K: NAME ... Passed" lines)
  FIGURE_LOG  files holding the benchmarks' JSON lines
              ({"bench", "params": {..., "impl"}, "unit", "median"})
  --out-dir   where to write the file (several: a copy in each); none: stdout only
  bench/device_summary.py --self-test   checks the parsers on sample logs

A suite passed when it exited 0 (and ran a test: Catch2's "No tests ran" is a
failure), was skipped when it exited 77 (no GPU: CTest's SKIP_RETURN_CODE),
and failed otherwise (124: killed at its time limit). The file is printed too.
"""
import argparse
import collections
import datetime
import json
import os
import re
import sys

SKIP_RC = 77


def parse_machine(path):
    info = {}
    if not path or not os.path.exists(path):
        return info
    for line in open(path, errors="replace"):
        line = line.strip()
        m = re.match(r"GPU \d+: (.*?)( \(UUID:.*)?$", line)
        if m and "gpu" not in info:
            info["gpu"] = m.group(1)
        m = re.match(r"Model name:\s*(.*)", line)
        if m:
            info["cpu"] = m.group(1)
        m = re.match(r"CPU\(s\):\s*(\d+)", line)
        if m:
            info["cores"] = m.group(1)
        if line.startswith("torch "):
            v = line[len("torch "):].split()
            info["torch"] = v[0] + ("" if v[1:] == ["True"] else " (no CUDA)") if v else "?"
        if line.startswith("cublas: "):
            info["cublas"] = line[len("cublas: "):]
    return info


def catch2_detail(lines):
    """The last line of Catch2's summary in a suite's output, if any."""
    detail = ""
    for line in lines:
        if re.match(r"(All tests passed|test cases:|No tests ran|Filters:)", line.strip()):
            detail = line.strip()
    return detail


def parse_tests(path):
    """device_run.sh's tests.log -> [(suite, result, rc, seconds, detail)]."""
    suites = []
    body = []
    for line in open(path, errors="replace"):
        line = line.rstrip("\n")
        m = re.match(r"@@ suite (\S+) rc=(\d+)(?: seconds=(\d+))?", line)
        if m:
            name, rc = m.group(1), int(m.group(2))
            detail = catch2_detail(body)
            if rc == 0:
                result = "failed" if detail.startswith("No tests ran") else "passed"
            elif rc == SKIP_RC:
                result = "skipped"
            else:
                result = "failed"
                if rc == 124:
                    detail = ("killed at its time limit; " + detail).rstrip("; ")
            suites.append((name, result, rc, m.group(3), detail))
            body = []
        elif line.startswith("== "):
            body = []
        else:
            body.append(line)
    return suites


CTEST_LINE = re.compile(r"^\s*\d+/\d+ Test\s+#\d+: (\S+) \.*\s*(\*\*\*)?(.*?)\s+([\d.]+) sec\s*$")


def parse_ctest(path):
    suites = []
    for line in open(path, errors="replace"):
        m = CTEST_LINE.match(line.rstrip("\n"))
        if not m:
            continue
        name, status, secs = m.group(1), m.group(3).strip(), m.group(4)
        if status == "Passed":
            result = "passed"
        elif status.startswith("Skipped") or status.startswith("Not Run"):
            result = "skipped"
        else:
            result = "failed"
        suites.append((name, result, None, secs, "" if result == "passed" else status))
    return suites


# Params that say which implementation or variant ran, not which figure it is.
VARIANT_KEYS = ("impl", "mode", "gemm", "sync", "nodes_on_gpu", "capture")


def parse_figures(paths):
    """JSON lines -> {(bench, params text, unit): [(label, median)]}, in order of appearance."""
    rows = collections.OrderedDict()
    errors = []
    for path in paths:
        if not os.path.exists(path):
            continue
        for line in open(path, errors="replace"):
            line = line.strip()
            if not line.startswith("{"):
                continue
            try:
                d = json.loads(line)
            except ValueError:
                continue
            if "bench" not in d:
                continue
            p = dict(d.get("params", {}))
            if "error" in d:
                errors.append("%s %s: %s" % (d["bench"], json.dumps(p, sort_keys=True), d["error"]))
                continue
            if "median" not in d:
                continue
            impl = str(p.get("impl", "?"))
            label = " ".join(str(p[k]) for k in ("impl", "mode", "gemm", "sync") if k in p) or impl
            if "capture" in p:  # "replayed", or why its steps were not captured
                label += " captured" if p["capture"] == "replayed" else " uncaptured"
            if "nodes_on_gpu" in p:
                p.pop("nodes", None)  # the step's node count, not a shape
            key_params = ",".join("%s=%s" % (k, v) for k, v in p.items() if k not in VARIANT_KEYS)
            key = (d["bench"], key_params, d.get("unit", ""))
            rows.setdefault(key, []).append((label, d["median"]))
    return rows, errors


def fmt(x):
    return "%.4g" % x if isinstance(x, (int, float)) else str(x)


def gpu_slug(gpu):
    if not gpu:
        return "nogpu"
    s = re.sub(r"^nvidia\s+", "", gpu.strip(), flags=re.I).lower()
    return re.sub(r"[^a-z0-9]+", "-", s).strip("-") or "gpu"


def render(args, machine, suites, figures, figure_errors):
    counts = collections.Counter(r for _, r, _, _, _ in suites)
    out = []
    gpu = machine.get("gpu", "no GPU found")
    out.append("# GPU run %s: %s" % (args.date, gpu))
    out.append("")
    out.append("- commit: %s" % (args.commit or "unknown"))
    m = []
    if machine.get("cpu"):
        m.append("%s CPU cores (%s)" % (machine.get("cores", "?"), machine["cpu"]))
    if machine.get("torch"):
        m.append("torch %s" % machine["torch"])
    if machine.get("cublas"):
        m.append("cuBLAS %s" % machine["cublas"])
    out.append("- machine: %s" % "; ".join([gpu] + m))
    if args.command:
        out.append("- command: `%s`" % args.command)
    if args.source:
        out.append("- source: %s" % args.source)
    out.append("")
    out.append("## Suites: %d passed, %d skipped, %d failed" % (counts["passed"], counts["skipped"], counts["failed"]))
    out.append("")
    if suites:
        out.append("| suite | result | exit | seconds | detail |")
        out.append("|---|---|---|---|---|")
        for name, result, rc, secs, detail in suites:
            out.append("| %s | %s | %s | %s | %s |" % (name, result, "" if rc is None else rc, secs or "",
                                                      detail.replace("|", "/")))
    else:
        out.append("(no suite ran)")
    out.append("")
    out.append("## Figures (medians), beside their peers")
    out.append("")
    if figures:
        out.append("| bench | params | unit | actorflow | peers |")
        out.append("|---|---|---|---|---|")
        for (bench, params, unit), vals in figures.items():
            ours = [v for v in vals if v[0].split()[0] == "actorflow"]
            peers = [v for v in vals if v[0].split()[0] != "actorflow"]
            cell = lambda vs: ", ".join(("%s %s" % (l, fmt(x)) if l != "actorflow" else fmt(x)) for l, x in vs)
            out.append("| %s | %s | %s | %s | %s |" % (bench, params, unit, cell(ours) or "-", cell(peers) or "-"))
    else:
        out.append("(no figure)")
    for e in figure_errors:
        out.append("- error: %s" % e)
    out.append("")
    return "\n".join(out)


SELF_TEST_TESTS = """== a_test
All tests passed (12 assertions in 3 test cases)
@@ suite a_test rc=0 seconds=2
== b_test
@@ suite b_test rc=77 seconds=0
== c_test
test cases: 3 | 2 passed | 1 failed
@@ suite c_test rc=1 seconds=1
== d_test
No tests ran
@@ suite d_test rc=0 seconds=0
"""
SELF_TEST_CTEST = """1/3 Test #1: e_test ..........................   Passed    0.01 sec
2/3 Test #2: f_test ........................***Skipped   0.00 sec
3/3 Test #3: g_test ........................***Timeout   1.00 sec
"""


def self_test():
    """Checks the parsers on logs in both formats; exit 0 when right."""
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        t, c = os.path.join(d, "tests.log"), os.path.join(d, "ctest.log")
        open(t, "w").write(SELF_TEST_TESTS)
        open(c, "w").write(SELF_TEST_CTEST)
        got = [(n, r) for n, r, _, _, _ in parse_tests(t) + parse_ctest(c)]
    want = [("a_test", "passed"), ("b_test", "skipped"), ("c_test", "failed"), ("d_test", "failed"),
            ("e_test", "passed"), ("f_test", "skipped"), ("g_test", "failed")]
    if got != want:
        print("device_summary self-test FAILED: %s != %s" % (got, want))
        return 1
    print("device_summary self-test: ok")
    return 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--machine")
    ap.add_argument("--tests")
    ap.add_argument("--ctest")
    ap.add_argument("--commit", default="")
    ap.add_argument("--date", default=datetime.datetime.utcnow().strftime("%Y-%m-%d"))
    ap.add_argument("--command", default="")
    ap.add_argument("--source", default="")
    ap.add_argument("--out-dir", action="append", default=[])
    ap.add_argument("figure_logs", nargs="*")
    args = ap.parse_args()
    machine = parse_machine(args.machine)
    suites = []
    if args.tests and os.path.exists(args.tests):
        suites += parse_tests(args.tests)
    if args.ctest and os.path.exists(args.ctest):
        suites += parse_ctest(args.ctest)
    figures, figure_errors = parse_figures(args.figure_logs)
    text = render(args, machine, suites, figures, figure_errors)
    name = "%s-%s.md" % (args.date, gpu_slug(machine.get("gpu")))
    for d in args.out_dir:
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, name)
        n = 2
        while os.path.exists(path):  # a second run that day: its own file
            path = os.path.join(d, "%s-%s-%d.md" % (args.date, gpu_slug(machine.get("gpu")), n))
            n += 1
        with open(path, "w") as f:
            f.write(text)
        print("device_summary: wrote %s" % path, file=sys.stderr)
    sys.stdout.write(text)
    # A failed suite, or a benchmark or peer that failed (an error row), fails the run.
    return 1 if any(r == "failed" for _, r, _, _, _ in suites) or figure_errors else 0


if __name__ == "__main__":
    sys.exit(main())
