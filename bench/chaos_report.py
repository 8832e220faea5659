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
    """Each worker's step lines: {worker file: [(unix ms, global step)]}, by time."""
    out = {}
    for f in glob.glob(f"{work}/{label}.steps.worker_*"):
        lines = []
        for line in open(f):
            parts = line.split()
            if len(parts) >= 2:
                lines.append((int(parts[0]), int(parts[1])))
        out[f] = sorted(lines)
    return out


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
    steady_by, chaos_by = steps(work, f"{mode}.steady"), steps(work, f"{mode}.chaos")
    steady = sorted(x for lines in steady_by.values() for x in lines)
    chaos = sorted(x for lines in chaos_by.values() for x in lines)
    events = []
    for line in open(f"{work}/{mode}.chaos.events"):
        parts = line.split()
        if len(parts) == 3:
            events.append((int(parts[0]), parts[1], parts[2]))
    kinds = {}
    for _, kind, _ in events:
        kinds[kind] = kinds.get(kind, 0) + 1
    # A stall: a gap between the cluster's steps (any worker's) over 5x the
    # run without failures' median gap (and 50 ms at least).
    # (each worker's median gap: in all-reduce every worker logs a step at once)
    gaps = [b[0] - a[0] for lines in steady_by.values() for a, b in zip(lines, lines[1:])]
    stall = max(50, 5 * statistics.median(gaps)) if gaps else 50
    resume, lost, by_kind = [], [], {}
    for i, (at, kind, target) in enumerate(events):
        until = events[i + 1][0] if i + 1 < len(events) else at + 30000
        after = [t for t, _ in chaos if t >= at]
        if not after:
            continue  # training ended before a step after it
        # Time to resume: to the end of the first stall within 30 s after it
        # (none: the cluster never paused; its next step).
        resumed = after[0]
        prev = at
        for t in after:
            if t > min(until, at + 30000):  # the next failure's stall is its own
                break
            if t - prev > stall:
                resumed = t
                break
            prev = t
        resume.append(resumed - at)
        mine = by_kind.setdefault(kind, {"resume_ms": [], "steps_lost": []})
        mine["resume_ms"].append(resumed - at)
        # Steps undone, per worker: its last step before it down to its
        # first after the cluster resumed (a restore goes back), the most of any worker.
        undone = 0
        for lines in chaos_by.values():
            before = [s for t, s in lines if t < at]
            later = [s for t, s in lines if t >= resumed]
            if before and later:
                undone = max(undone, before[-1] - later[0] + 1)
        lost.append(undone)
        mine["steps_lost"].append(undone)
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
