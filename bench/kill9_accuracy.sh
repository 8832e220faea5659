#!/usr/bin/env bash
# Test accuracy of examples/train_distributed after `kill -9` of one task, in
# every mode the README names: async and sync (1 ps + 2 workers), allreduce
# (2 workers, no ps). Each run is one `actorflow launch --max-restarts 3` on
# loopback; once the chief's progress line says --at percent of the steps are
# done and the chief has saved a checkpoint, the victim's current process gets
# SIGKILL (ps: the ps task; worker: worker 1; chief: worker 0). The launcher
# restarts it, the supervisors recover (README, "Supervision"), and the chief
# prints the test accuracy at the end. One table row per run.
#   bench/kill9_accuracy.sh [--build DIR] [--epochs N] [--modes "async sync allreduce"]
#                           [--victims "none ps worker chief"] [--at PERCENT] [--limit SECONDS]
# Defaults: build, 12 epochs (the example's default), all three modes, victims
# none (a run without a kill, to compare), ps, worker and chief, at 40%, each
# run bounded at 600 s. Every process is ended by PID when its run ends. Exits 1
# when a run failed (an exit other than 0, no accuracy printed, or no kill made).
set -uo pipefail
cd "$(dirname "$0")/.."
build=build epochs=12 modes="async sync allreduce" victims="none ps worker chief" at=40 limit=600
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=$2 ;;
    --epochs) epochs=$2 ;;
    --modes) modes=$2 ;;
    --victims) victims=$2 ;;
    --at) at=$2 ;;
    --limit) limit=$2 ;;
    *) sed -n 2,16p "$0" >&2; exit 2 ;;
  esac
  shift 2
done
for p in "$build/actorflow" "$build/examples/train_distributed"; do
  [ -x "$p" ] || { echo "kill9_accuracy: no $p (cmake --build $build --target actorflow_cli train_distributed)" >&2; exit 2; }
done
py=$(command -v python3)
work=$(mktemp -d /tmp/af_kill9_XXXXXX)
launcher="" current_log=""
cleanup() {  # the launcher, then any task process of this run it left, by PID (checked to be ours)
  [ -n "$launcher" ] && kill -TERM "$launcher" 2>/dev/null && wait "$launcher" 2>/dev/null
  launcher=""
  [ -f "$current_log" ] || return 0
  local pid
  for pid in $(grep -o 'started (pid [0-9]*' "$current_log" | grep -o '[0-9]*$'); do
    { tr '\0' '\n' < "/proc/$pid/environ"; } 2>/dev/null | grep -qx "AF_KILL9_RUN=$work" && kill -9 "$pid" 2>/dev/null
  done
  current_log=""
  return 0
}
trap 'cleanup; rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
free_port() { "$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

run() {  # run MODE VICTIM -> one table row
  local mode=$1 victim=$2 nps=1 label="" f="$work/cluster.json" dir="$work/ckpt_$1_$2" log="$work/$1_$2.log"
  [ "$mode" = allreduce ] && nps=0
  case $victim in ps) label=ps:0 ;; worker) label=worker:1 ;; chief) label=worker:0 ;; none) ;;
    *) echo "kill9_accuracy: unknown victim $victim" >&2; return ;; esac
  if [ "$victim" = ps ] && [ $nps = 0 ]; then return; fi  # allreduce has no ps
  local ws="\"127.0.0.1:$(free_port)\", \"127.0.0.1:$(free_port)\""
  if [ $nps = 1 ]; then echo "{\"ps\": [\"127.0.0.1:$(free_port)\"], \"worker\": [$ws]}" >"$f"
  else echo "{\"worker\": [$ws]}" >"$f"; fi
  local t0=$SECONDS
  current_log=$log
  AF_KILL9_RUN=$work ACTORFLOW_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 timeout -k 10 "$limit" "$build/actorflow" launch --cluster "$f" \
    --max-restarts 3 -- "$build/examples/train_distributed" --mode "$mode" --epochs "$epochs" --dir "$dir" \
    >"$log" 2>&1 &
  launcher=$!
  local killed_at="-"
  if [ -n "$label" ]; then
    # Wait for the chief's progress past --at percent and a checkpoint, bounded by the run's limit.
    local step="" total=""
    while kill -0 "$launcher" 2>/dev/null && [ $((SECONDS - t0)) -lt "$limit" ]; do
      read -r step total < <(grep -o '^\[worker:0\] epoch [0-9]*/[0-9]*  step [0-9]*/[0-9]*' "$log" | tail -1 |
                             sed 's/.*step \([0-9]*\)\/\([0-9]*\)/\1 \2/')
      if [ -n "$step" ] && [ $((step * 100)) -ge $((total * at)) ] && [ -e "$dir/checkpoint" ]; then break; fi
      sleep 0.2  # polling the log; the condition above, not the sleep, decides when
    done
    local pid; pid=$(grep -o "$label started (pid [0-9]*" "$log" | tail -1 | grep -o '[0-9]*$')
    # Only a live process of this run (its environment carries the run's marker): a PID
    # whose task already ended may have been reused by another process.
    if [ -n "$step" ] && [ -n "$pid" ] && kill -0 "$launcher" 2>/dev/null &&
       { tr '\0' '\n' < "/proc/$pid/environ"; } 2>/dev/null | grep -qx "AF_KILL9_RUN=$work" &&
       kill -9 "$pid" 2>/dev/null; then
      killed_at=$step
    else
      killed_at="not killed"
    fi
  fi
  wait "$launcher"
  local rc=$?
  launcher=""
  cleanup
  local acc steps recov restarts
  acc=$(grep -o 'trained [0-9]* steps: test accuracy [0-9.]*%' "$log" | tail -1)
  steps=$(echo "$acc" | awk '{print $2}')
  acc=$(echo "$acc" | grep -o '[0-9.]*%$')
  restarts=$(grep -c 'restarting it' "$log")
  recov=$(grep -o '^\[worker:[0-9]*\] recovered' "$log" | wc -l)
  printf '| %-9s | %-6s | %-14s | %-8s | %-13s | %8s | %10s | %4s | %5s |\n' "$mode" "$victim" "${label:--}" \
    "$killed_at" "${acc:-none}" "${steps:--}" "$recov" "$restarts" "$rc$([ "$rc" = 124 ] && echo ' (timeout)')"
  [ -n "$acc" ] || { echo "kill9_accuracy: $mode/$victim gave no accuracy; the log's end:" >&2; tail -5 "$log" >&2; }
  # A run counts only if it ended well, with an accuracy, and its victim was killed.
  if [ "$rc" != 0 ] || [ -z "$acc" ] || [ "$killed_at" = "not killed" ]; then failed+=("$mode/$victim"); fi
}
failed=()

echo "examples/train_distributed --epochs $epochs (batch 100, Adam), ACTORFLOW_NUM_THREADS=1, kill -9 at ${at}% of the steps"
echo "| mode      | victim | killed process | at step  | test accuracy | steps    | recoveries | restarts | exit |"
echo "|-----------|--------|----------------|----------|---------------|----------|------------|----------|------|"
for mode in $modes; do
  for victim in $victims; do run "$mode" "$victim"; done
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "kill9_accuracy: ${#failed[@]} run(s) failed (an exit other than 0, no accuracy, or no kill): ${failed[*]}" >&2
  exit 1
fi
