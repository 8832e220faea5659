"""Sums ncu's --csv output (metric gpu__time_duration.sum, one row per kernel
launch) by kernel name: launches, total and mean microseconds, largest first.
Used by bench/device_run.sh (part ncu)."""
import collections
import csv
import sys

rows = []
with open(sys.argv[1], newline="") as f:
    lines = [line for line in f if line.startswith('"')]  # ncu's own messages are not CSV
for r in csv.DictReader(lines):
    if r.get("Metric Name") != "gpu__time_duration.sum":
        continue
    value = float(r["Metric Value"].replace(",", ""))
    unit = r.get("Metric Unit", "nsecond")
    scale = {"nsecond": 1e-3, "usecond": 1.0, "msecond": 1e3, "second": 1e6}.get(unit, 1e-3)
    rows.append((r["Kernel Name"][:120], value * scale))
total = collections.defaultdict(float)
count = collections.Counter()
for name, us in rows:
    total[name] += us
    count[name] += 1
print("%d launches, %.1f us in all" % (len(rows), sum(total.values())))
for name in sorted(total, key=total.get, reverse=True):
    print("%8.1f us %4d x %7.1f  %s" % (total[name], count[name], total[name] / count[name], name))
