#!/usr/bin/env bash
# The runtime's own figures at this checkout beside the same figures at
# another revision, measured in one run, alternating round by round (these
# shared machines are noisy: compare within a run, by ratio):
#   executor_chain, executor_fanout, session_run_one_node (bench_executor),
#   train_step mlp64, mlp256, softmax32 at 2 threads (bench_train),
#   the tensor transport between two processes (bench_transport: throughput
#   by size, on the same-host path and over TCP, and latency), a step whose
#   partitions sit in two processes beside two devices of one process
#   (bench_transport steps, an `actorflow server` as the other), and all-reduce
#   among 2 ranks (bench_allreduce --ranks 2, actorflow's and gloo's).
#   bench/compare_rev.sh REV [ROUNDS]   # REV: any commit, e.g. HEAD~1; ROUNDS default 3
# REV is built (Release, benchmarks only) from a git worktree in build-rev/.
# Prints every figure as a JSON line with "rev", then one summary line per
# figure: the median over rounds at each revision and their ratio
# (this checkout / REV; above 1 is faster here for throughputs, slower for times).
set -euo pipefail
cd "$(dirname "$0")/.."
rev=${1:?usage: bench/compare_rev.sh REV [ROUNDS]}
rounds=${2:-3}
sha=$(git rev-parse --short "$rev")
src=build-rev/src-$sha
if [ ! -d "$src" ]; then
  git worktree add --detach "$src" "$sha" >/dev/null
fi
cmake -S "$src" -B "build-rev/build-$sha" -DCMAKE_BUILD_TYPE=Release -DAF_BUILD_TESTS=OFF >/dev/null
targets="bench_executor bench_train bench_transport bench_allreduce actorflow_cli"
cmake --build "build-rev/build-$sha" -j2 --target $targets >/dev/null
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j2 --target $targets >/dev/null

tag() { /usr/bin/python3 -c '
import json, sys
for line in sys.stdin:
    line = line.strip()
    if line.startswith("{"):
        d = json.loads(line); d["rev"] = sys.argv[1]; print(json.dumps(d), flush=True)
' "$1"; }

run_at() {  # run_at LABEL BUILD_DIR
  ACTORFLOW_NUM_THREADS=2 "$2/bench/bench_executor" | tag "$1"
  for figure in mlp64 mlp256 softmax32; do
    ACTORFLOW_NUM_THREADS=2 "$2/bench/bench_train" $figure | tag "$1"
  done
  ACTORFLOW_NUM_THREADS=1 "$2/bench/bench_transport" | tag "$1"
  ACTORFLOW_NUM_THREADS=1 "$2/bench/bench_transport" steps "$2/actorflow" | tag "$1"
  ACTORFLOW_NUM_THREADS=1 "$2/bench/bench_allreduce" --ranks 2 --rounds 5 | tag "$1"
}

for round in $(seq "$rounds"); do
  # Alternate which goes first, so neither always runs on a warmer machine.
  if [ $((round % 2)) -eq 1 ]; then
    run_at here build; run_at "$sha" "build-rev/build-$sha"
  else
    run_at "$sha" "build-rev/build-$sha"; run_at here build
  fi
done | tee /dev/stderr | /usr/bin/python3 -c '
import json, statistics, sys
rev = sys.argv[1]
figs = {}
for line in sys.stdin:
    d = json.loads(line)
    if "median" not in d:  # all-reduce: one line per size with the time of each impl; else the ratios of the bench
        for k, v in d.items():
            if k.endswith("_ms"):
                key = d["bench"] + " " + json.dumps(dict(d.get("params", {}), impl=k[:-3]), sort_keys=True)
                figs.setdefault(key, {}).setdefault(d["rev"], []).append(v)
                figs[key]["unit"] = "ms"
        continue
    key = d["bench"] + " " + json.dumps(d.get("params", {}), sort_keys=True)
    figs.setdefault(key, {}).setdefault(d["rev"], []).append(d["median"])
    figs[key]["unit"] = d["unit"]
for key, by in figs.items():
    if "here" not in by or rev not in by: continue
    a, b = statistics.median(by["here"]), statistics.median(by[rev])
    print(json.dumps({"compare": key, "unit": by["unit"], "here": a, rev: b, "ratio_here_over_rev": round(a / b, 3)}))
' "$sha" 2>/dev/null
