"""bench/chaos.sh's figures for one mode: reads WORK/MODE.{steady,chaos}.*
(the workers' --log-steps lines "unix_ms global_step position members rank",
the injected failures "unix_ms kind target", the launchers' logs and exit
codes, bench/restore_checkpoints' line) and prints one JSON row ("chaos").

  python3 bench/chaos_report.py WORK MODE INTERVAL EPOCHS BOUND
"""
import glob
import json
import re
import statistics
import sys


def steps(work, label):
    """Every step line of every worker: (unix ms, global step), by time."""
    out = []
    for f in glob.glob(f"{work}/{label}.steps.worker_*"):
        for line in open(f):
            parts = line.split()
            if len(parts) >= 2:
                out.append((int(parts[0]), int(parts[1])))
    return sorted(out)


def logs(work, label):
    return "".join(open(f).read() for f in sorted(glob.glob(f"{work}/{label}*.log")))


def accuracy(log):
    found = re.findall(r"\] trained [0-9]+ steps: test accuracy ([0-9.]+)%", log)
    return float(found[-1]) if found else None


def rc(work, label):
    try:
        return int(open(f"{work}/{label}.rc").read().strip())
    except (OSError, ValueError):
        return None


def spread(xs):
    return {"p50": statistics.median(xs), "max": max(xs), "n": len(xs)} if xs else None


def main():
    work, mode, interval, epochs, bound = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
    steady, chaos = steps(work, f"{mode}.steady"), steps(work, f"{mode}.chaos")
    events = []
    for line in open(f"{work}/{mode}.chaos.events"):
        parts = line.split()
        if len(parts) == 3:
            events.append((int(parts[0]), parts[1], parts[2]))
    kinds = {}
    for _, kind, _ in events:
        kinds[kind] = kinds.get(kind, 0) + 1
    resume, lost, by_kind = [], [], {}
    for at, kind, target in events:
        before = [s for t, s in chaos if t < at]
        after = [(t, s) for t, s in chaos if t >= at]
        if not after:
            continue  # training ended before a step after it
        first = after[0][0]
        resume.append(first - at)
        mine = by_kind.setdefault(kind, {"resume_ms": [], "steps_lost": []})
        mine["resume_ms"].append(first - at)
        # Undone: the highest step before it down to the lowest made soon after it resumed.
        soon = [s for t, s in after if t <= first + 2000]
        if before and soon:
            lost.append(max(0, max(before) - min(soon) + 1))
            mine["steps_lost"].append(lost[-1])
    span = lambda xs: (xs[-1][0] - xs[0][0]) / 1000.0 if len(xs) > 1 else None
    t_steady, t_chaos = span(steady), span(chaos)
    restore = {}
    try:
        restore = json.loads(open(f"{work}/{mode}.chaos.restore").read())
    except (OSError, ValueError):
        pass
    codes = [rc(work, f"{mode}.steady"), rc(work, f"{mode}.chaos")]
    row = {
        "bench": "chaos",
        "params": {"mode": mode, "workers": 3, "interval_s": interval, "epochs": epochs},
        "metric": "efficiency",
        "unit": "ratio",
        "median": round(t_steady / t_chaos, 3) if t_steady and t_chaos else None,
        "train_s": {"without": t_steady, "with": t_chaos},
        "failures": {"total": len(events), **kinds},
        "resume_ms": spread(resume),
        "steps_lost": dict(spread(lost) or {}, sum=sum(lost)) if lost else None,
        "by_kind": {k: {"resume_ms": spread(v["resume_ms"]), "steps_lost": spread(v["steps_lost"])}
                    for k, v in by_kind.items()},
        "accuracy": {"with": accuracy(logs(work, f"{mode}.chaos")), "without": accuracy(logs(work, f"{mode}.steady"))},
        "hangs": sum(1 for c in codes if c == 124),
        "exit": codes,
        "checkpoints": {"kept": restore.get("checkpoints"), "restored": restore.get("restored"),
                        "errors": restore.get("errors")},
    }
    print(json.dumps(row))


if __name__ == "__main__":
    main()
