"""Reads bench_train's and peer_torch_train.py's JSON lines from stdin (rounds
of one figure each: actorflow at 1 and 2 threads, then the peer), passes them
through, and prints one line per model and batch: actorflow's best thread
setting over the peer's best, per round, and the median of those ratios.

Only ratios within a round mean much: this machine's speed drifts by tens of
percent over minutes, so a figure and its peer are measured back to back."""
import json
import statistics
import sys

rounds = {}  # (model, batch) -> list of {"actorflow": best, "pytorch": best}
current = {}
for line in sys.stdin:
    sys.stdout.write(line)
    try:
        d = json.loads(line)
    except ValueError:
        continue
    if d.get("bench") != "train_step":
        continue
    p = d["params"]
    key = (p["model"], p["batch"])
    best = current.setdefault(key, {})
    best[p["impl"]] = max(best.get(p["impl"], 0.0), d["median"])
    if p["impl"] == "pytorch":  # the peer ends a round of this figure
        rounds.setdefault(key, []).append(current.pop(key))
sys.stdout.flush()

for key in sorted(rounds):
    ratios = [r["actorflow"] / r["pytorch"] for r in rounds[key] if r.get("actorflow") and r.get("pytorch")]
    if not ratios:
        continue
    print(json.dumps({"bench": "train_step_ratio", "params": {"model": key[0], "batch": key[1]},
                      "metric": "actorflow/pytorch examples/s", "unit": "ratio",
                      "median": statistics.median(ratios), "min": min(ratios), "max": max(ratios),
                      "rounds": [round(x, 3) for x in ratios]}))
