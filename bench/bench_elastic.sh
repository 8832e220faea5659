#!/usr/bin/env bash
# Elastic all-reduce under failures (issue 32): three workers of
# train_distributed --mode allreduce --elastic under `actorflow launch
# --min-workers 2 --max-restarts 100`, 1 thread each, on loopback. First a run
# without failures, then the same run while a chaos loop kills (kill -9) a
# random worker every INTERVAL seconds; the launcher restarts it and it joins
# again. One JSON row per figure ("elastic"):
#   resume_ms     from a kill to the survivors' sync (their next step may run): p50, max
#   join_ms       from a restarted worker's session being ready to the survivors'
#                 sync with it (the group grown): p50, max
#   efficiency    examples/s of the cluster with failures / without (the chief's, from
#                 its 10th step to its last)
#   accuracy      the first live worker's test accuracy at the end, with failures
#   failures, recoveries (checkpoint restores: 0 expected), hangs (runs past the bound: 0)
# No peer runs here: torchrun restarts every worker on a failure (its ranks
# are not stable), which this measures nothing like; see the README.
#   bench/bench_elastic.sh [BUILD_DIR] [--interval S] [--epochs N]
set -euo pipefail
cd "$(dirname "$0")/.."
build=build interval=10 epochs=30
while [ $# -gt 0 ]; do
  case $1 in
    --interval) interval=$2; shift 2 ;;
    --epochs) epochs=$2; shift 2 ;;
    *) build=$1; shift ;;
  esac
done
py=/usr/bin/python3
if [ ! -e /usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz ]; then
  echo '{"bench":"elastic","skipped":"dataset-fashion-mnist is not installed (setup.sh installs it)"}'
  exit 0
fi
work=$(mktemp -d /tmp/af_bench_elastic_XXXXXX)
launch_pid=""
cleanup() {
  if [ -n "$launch_pid" ]; then kill -TERM "$launch_pid" 2>/dev/null || true; wait "$launch_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
free_port() { "$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
now_ms() { date +%s%3N; }

# run LABEL CHAOS: one training run; its log in $work/LABEL.log, kill times in $work/LABEL.kills
run() {
  local label=$1 chaos=$2 log="$work/$1.log" kills="$work/$1.kills" ws=""
  for _ in 1 2 3; do ws+="${ws:+, }\"127.0.0.1:$(free_port)\""; done
  : >"$kills"
  rm -rf "$work/ckpt"
  ACTORFLOW_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 timeout 900 "$build/actorflow" launch \
    --cluster "{\"worker\": [$ws]}" --min-workers 2 --max-restarts 100 -- \
    "$build/examples/train_distributed" --mode allreduce --elastic --epochs "$epochs" --save-every 1000000 \
    --dir "$work/ckpt" --report >"$log" 2>&1 &
  launch_pid=$!
  if [ "$chaos" = 1 ]; then
    # Once training is under way: every interval, kill -9 a random worker's current process.
    until grep -q "examples/s in the cluster" "$log" 2>/dev/null || ! kill -0 "$launch_pid" 2>/dev/null; do sleep 0.2; done
    while kill -0 "$launch_pid" 2>/dev/null; do
      sleep "$interval"
      kill -0 "$launch_pid" 2>/dev/null || break
      grep -q "trained [0-9]* steps" "$log" && break
      local w=$((RANDOM % 3)) pid
      pid=$(grep -o "\[launch\] worker:$w started (pid [0-9]*" "$log" | tail -1 | grep -o '[0-9]*$' || true)
      [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || continue
      echo "$(now_ms) $w" >>"$kills"
      kill -9 "$pid" 2>/dev/null || true
    done
  fi
  local rc=0
  wait "$launch_pid" || rc=$?
  launch_pid=""
  echo "$rc" >"$work/$label.rc"
}

run steady 0
run chaos 1
"$py" - "$work" "$interval" <<'PY'
import json, re, statistics, sys
work, interval = sys.argv[1], float(sys.argv[2])
def read(label):
    log = open(f"{work}/{label}.log").read()
    rc = int(open(f"{work}/{label}.rc").read().strip())
    m = re.search(r'"median":([0-9.]+)', log)
    acc = re.findall(r"\] trained [0-9]+ steps: test accuracy ([0-9.]+)%", log)
    return log, rc, float(m.group(1)) if m else None, float(acc[-1]) if acc else None
steady_log, steady_rc, steady, _ = read("steady")
log, rc, chaotic, accuracy = read("chaos")
kills = [tuple(map(int, l.split())) for l in open(f"{work}/chaos.kills") if l.strip()]
synced = [(int(t), int(old), int(new), w) for w, old, new, t in
          re.findall(r"\[(worker:\d)\] worker:\d: the group changed \((\d+) -> (\d+) workers.*?\[unix ms (\d+)\]", log)]
ready = [(int(t), w) for w, t in re.findall(r"\[(worker:\d)\] worker:\d: session ready: syncing with the live workers \[unix ms (\d+)\]", log)]
resume, join = [], []
for k, (at, victim) in enumerate(kills):
    until = kills[k + 1][0] if k + 1 < len(kills) else float("inf")
    shrink = [t for t, old, new, w in synced if at <= t < until and new < old]
    if shrink: resume.append(min(shrink) - at)
# A join: a restarted worker's session ready (after its kill), to the first
# sync after it that grew the group (a worker killed again before it joined: none).
first_kill = kills[0][0] if kills else float("inf")
for at, w in ready:
    if at < first_kill: continue  # the first start, not a join
    after = [t for t, _ in kills if t > at]
    until = min(after) if after else float("inf")
    grow = [t for t, old, new, s in synced if at <= t < until and new > old]
    if grow: join.append(min(grow) - at)
def pct(xs):
    return {"p50": statistics.median(xs), "max": max(xs), "n": len(xs)} if xs else None
recoveries = len(re.findall(r": recovering \(", log))
rows = [
    {"bench": "elastic", "params": {"workers": 3, "interval_s": interval}, "metric": "resume_ms", "unit": "ms", **(pct(resume) or {"error": "no resume seen"})},
    {"bench": "elastic", "params": {"workers": 3, "interval_s": interval}, "metric": "join_ms", "unit": "ms", **(pct(join) or {"error": "no join seen"})},
    {"bench": "elastic", "params": {"workers": 3, "interval_s": interval}, "metric": "efficiency", "unit": "ratio",
     "median": round(chaotic / steady, 3) if chaotic and steady else None, "with_failures": chaotic, "without": steady},
    {"bench": "elastic", "params": {"workers": 3, "interval_s": interval}, "metric": "accuracy", "unit": "%", "median": accuracy,
     "failures": len(kills), "recoveries": recoveries, "hangs": int(rc == 124 or steady_rc == 124), "exit": [steady_rc, rc]},
]
for r in rows: print(json.dumps(r))
PY
