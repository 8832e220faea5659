#!/usr/bin/env bash
# The chaos suite (issue 32): train_distributed under failures injected at
# random, per mode, beside the same run without them. On loopback, under
# `actorflow launch --max-restarts 100` (1 thread per process, 3 workers;
# async and sync add a ps task):
#   allreduce  --elastic, --min-workers 2; failures: kill -9 a worker, SIGSTOP
#              a worker for --stop S seconds then SIGCONT
#   async      failures: kill -9 a worker, SIGSTOP a worker, kill -9 the ps
#   sync       --backup-workers 1; the same failures
# and across simulated hosts (tests/netns/hosts.sh, where namespaces work: one
# worker per host, each under its own one-task `actorflow launch`):
#   link       allreduce --elastic; failures: a host's link down for --stop S
#              seconds (the launchers' pids are their hosts' own: no kills
#              here); each host's one-task launcher restarts its worker at
#              most 2 times (one cut off after the others finished fails its
#              rounds, 15 s each, 20 recoveries: minutes, within --bound)
# Every --interval seconds (uniformly 0.5x to 1.5x), one failure of the mode's
# kinds, on a random worker, from the start of training until a worker has
# finished (training is over then). One JSON row per mode ("chaos"):
#   failures        how many were injected, by kind
#   resume_ms       from a failure to the end of the cluster's first stall after it,
#                   before the next failure (a gap between steps, any worker's, over
#                   5x a worker's median gap without failures); none: to its next
#                   step: p50, max
#   steps_lost      global steps undone per failure (a checkpoint restore), the
#                   most of any worker: p50, max, sum; both also by kind
#   efficiency      the run's training time without failures / with them (the
#                   same work: --epochs of examples, or the same global steps)
#   accuracy        the test accuracy at the end, with failures (and without)
#   hangs           runs past the bound (--bound seconds; must be 0)
#   checkpoints     kept by the run with failures, and how many restore
#                   (bench/restore_checkpoints: every tensor read back)
# The peer, beside all-reduce:
#   torch      PyTorch DDP (gloo) under torchrun --max_restarts 100
#              (bench/peer_torch_elastic.py, the same model, data and
#              batches): torchrun restarts every worker when one fails, and
#              they resume from the last checkpoint (TorchElastic's way); the
#              same failures as allreduce (kill -9, SIGSTOP of a worker)
# (PyTorch has no parameter servers: no peer for async and sync.)
# The times come from the workers' --log-steps lines (each step's end and
# global step).
#   bench/chaos.sh [BUILD_DIR] [--modes allreduce,torch,async,sync,link] [--interval S] [--epochs N] [--stop S] [--bound S]
set -euo pipefail
cd "$(dirname "$0")/.."
build=build modes=allreduce,torch,async,sync,link interval=10 epochs=40 stop=5 bound=900 py=/usr/bin/python3
while [ $# -gt 0 ]; do
  case $1 in
    --modes | --interval | --epochs | --stop | --bound) printf -v "${1#--}" '%s' "$2"; shift 2 ;;
    *) build=$1; shift ;;
  esac
done
[ -e /usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz ] ||
  { echo '{"bench":"chaos","skipped":"dataset-fashion-mnist is not installed (setup.sh installs it)"}'; exit 0; }
work=$(mktemp -d /tmp/af_bench_chaos_XXXXXX)
launch_pids=()
hosts_up=""
cleanup() {
  for p in "${launch_pids[@]+"${launch_pids[@]}"}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${launch_pids[@]+"${launch_pids[@]}"}"; do wait "$p" 2>/dev/null || true; done
  if [ -n "$hosts_up" ]; then tests/netns/hosts.sh down "$hosts_up" >/dev/null 2>&1 || true; fi
  if [ -n "${KEEP_LOGS:-}" ]; then cp -r "$work" "$KEEP_LOGS" || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
free_port() { "$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
now_ms() { date +%s%3N; }
# The current pid of TASK ("worker:1", "ps:0") in launch log LOG.
task_pid() { grep -o "\[launch\] $2 started (pid [0-9]*" "$1" | tail -1 | grep -o '[0-9]*$' || true; }

# args MODE: train_distributed's arguments for MODE
args() {
  case $1 in
    allreduce | link) echo "--mode allreduce --elastic" ;;
    async) echo "--mode async" ;;
    sync) echo "--mode sync --backup-workers 1" ;;
  esac
}

# inject MODE LABEL: a random failure of MODE's kinds, logged to $work/LABEL.events as "ms kind target"
inject() {
  local mode=$1 label=$2 log="$work/$2.log" kinds w pid
  case $mode in
    allreduce | torch) kinds=(kill9_worker stop_worker) ;;
    async | sync) kinds=(kill9_worker stop_worker kill9_ps) ;;
    link) kinds=(link_down) ;;
  esac
  local kind=${kinds[$((RANDOM % ${#kinds[@]}))]}
  w=$((RANDOM % 3))
  case $kind in
    kill9_worker | stop_worker)
      pid=$(task_pid "$log" "worker:$w")
      [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 0
      echo "$(now_ms) $kind worker:$w" >>"$work/$label.events"
      if [ "$kind" = kill9_worker ]; then kill -9 "$pid" 2>/dev/null || true
      else kill -STOP "$pid" 2>/dev/null || true; sleep "$stop"; kill -CONT "$pid" 2>/dev/null || true; fi ;;
    kill9_ps)
      pid=$(task_pid "$log" "ps:0")
      [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 0
      echo "$(now_ms) $kind ps:0" >>"$work/$label.events"
      kill -9 "$pid" 2>/dev/null || true ;;
    link_down)
      echo "$(now_ms) $kind host:$w" >>"$work/$label.events"
      tests/netns/hosts.sh link "$hosts_up" "$w" down
      sleep "$stop"
      tests/netns/hosts.sh link "$hosts_up" "$w" up ;;
  esac
}

# finished LABEL: whether the run's evaluation line is out, a worker has
# finished (training is over for the launcher, --min-workers: a task that
# fails from then on is not restarted, so a chief killed before its
# evaluation would leave the run without one), or every launcher exited
finished() {
  grep -q "trained [0-9]* steps" "$work/$1"*.log 2>/dev/null && return 0
  grep -q "\[launch\] worker:[0-9]* finished" "$work/$1"*.log 2>/dev/null && return 0
  for p in "${launch_pids[@]+"${launch_pids[@]}"}"; do kill -0 "$p" 2>/dev/null && return 1; done
  return 0
}

# run MODE CHAOS: one training run, logs in $work/MODE.{steady,chaos}.*
run() {
  local mode=$1 chaos=$2 label="$1.$([ "$2" = 1 ] && echo chaos || echo steady)" ws="" pss="" cluster
  : >"$work/$label.events"
  rm -rf "$work/$label.ckpt"
  local common=(--epochs "$epochs" --save-every 300 --dir "$work/$label.ckpt" --log-steps "$work/$label.steps")
  launch_pids=()
  if [ "$mode" = link ]; then
    local h ips=()
    for h in 0 1 2; do ips+=("$(tests/netns/hosts.sh ip "$hosts_up" "$h")"); ws+="${ws:+, }\"${ips[h]}:2222\""; done
    cluster="{\"worker\": [$ws]}"
    for h in 2 1 0; do
      ACTORFLOW_MIN_WORKERS=2 ACTORFLOW_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 timeout "$bound" \
        tests/netns/hosts.sh exec "$hosts_up" "$h" "$build/actorflow" launch \
        --cluster "{\"cluster\": $cluster, \"task\": {\"type\": \"worker\", \"index\": $h}}" \
        --bind "${ips[h]}" --insecure --max-restarts 2 -- \
        "$build/examples/train_distributed" $(args "$mode") "${common[@]}" >"$work/$label.w$h.log" 2>&1 &
      launch_pids+=($!)
    done
  elif [ "$mode" = torch ]; then
    OMP_NUM_THREADS=1 timeout "$bound" "$py" -m torch.distributed.run --standalone --nproc_per_node 3 \
      --max_restarts 100 --monitor_interval 1 --redirects 1 --tee 1 bench/peer_torch_elastic.py "${common[@]}" \
      >"$work/$label.log" 2>&1 &
    launch_pids+=($!)
  else
    for _ in 1 2 3; do ws+="${ws:+, }\"127.0.0.1:$(free_port)\""; done
    if [ "$mode" = allreduce ]; then cluster="{\"worker\": [$ws]}"
    else cluster="{\"ps\": [\"127.0.0.1:$(free_port)\"], \"worker\": [$ws]}"; fi
    ACTORFLOW_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 timeout "$bound" "$build/actorflow" launch --cluster "$cluster" \
      --min-workers 2 --max-restarts 100 -- "$build/examples/train_distributed" $(args "$mode") "${common[@]}" \
      >"$work/$label.log" 2>&1 &
    launch_pids+=($!)
  fi
  if [ "$chaos" = 1 ]; then
    # Once training is under way: a failure every interval (0.5x to 1.5x).
    until grep -qs "examples/s in the cluster" "$work/$label"*.log || finished "$label"; do sleep 0.2; done
    while ! finished "$label"; do
      sleep "$("$py" -c "import random; print(round($interval * random.uniform(0.5, 1.5), 2))")"
      finished "$label" && break
      inject "$mode" "$label"
    done
  fi
  local rc=0 p code
  for p in "${launch_pids[@]}"; do  # a launcher past the bound (124) is a hang, whatever the others say
    code=0
    wait "$p" || code=$?
    if [ "$code" = 124 ] || [ "$rc" = 0 ]; then [ "$rc" = 124 ] || rc=$code; fi
  done
  launch_pids=()
  echo "$rc" >"$work/$label.rc"
  if [ "$chaos" = 1 ] && [ "$mode" = torch ]; then
    "$py" -c 'import json, sys, torch
try:
    s = torch.load(sys.argv[1] + "/latest.pt"); ok = int("model" in s and "opt" in s); err = []
except Exception as e:
    ok, err = 0, [str(e)]
print(json.dumps({"checkpoints": 1, "restored": ok, "errors": err}))' "$work/$label.ckpt" >"$work/$label.restore" || true
  elif [ "$chaos" = 1 ]; then
    "$build/bench/restore_checkpoints" "$work/$label.ckpt" >"$work/$label.restore" || true
  fi
}

IFS=, read -r -a mode_list <<<"$modes"
for mode in "${mode_list[@]}"; do
  if [ "$mode" = link ]; then
    if ! why=$(tests/netns/hosts.sh check 2>&1); then
      printf '{"bench":"chaos","params":{"mode":"link"},"skipped":"no simulated hosts here: %s"}\n' \
        "$(echo "$why" | tail -1 | tr -d '"\\')"
      continue
    fi
    tests/netns/hosts.sh prune >/dev/null 2>&1 || true
    hosts_up=afch$$
    tests/netns/hosts.sh up "$hosts_up" 3 --rate 1gbit --owner $$ >/dev/null
  fi
  if [ "$mode" = torch ] && ! "$py" -c "import torch.distributed.run" 2>/dev/null; then
    echo '{"bench":"chaos","params":{"mode":"torch"},"skipped":"no torch.distributed here (python3-torch)"}'
    continue
  fi
  run "$mode" 0
  run "$mode" 1
  if [ "$mode" = link ]; then tests/netns/hosts.sh down "$hosts_up" >/dev/null 2>&1 || true; hosts_up=""; fi
  "$py" bench/chaos_report.py "$work" "$mode" "$interval" "$epochs" "$bound"
done
