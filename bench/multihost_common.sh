# Sourced by the benchmarks across simulated hosts (bench/bench_allreduce_multihost.sh,
# bench/bench_train_multihost.sh), from the source root:
#   multihost_up BENCH NAME HOSTS RATE
# makes host set NAME (tests/netns/hosts.sh: HOSTS hosts, links at RATE) and a
# scratch directory $work, or, where namespaces cannot be made here, prints
# {"bench":BENCH,"skipped":WHY} and exits 0. On exit the processes in $pids
# are killed, the set is taken down and $work removed (copied to $KEEP_LOGS
# first when that is set); a set whose script was killed is pruned by the next.
harness=tests/netns/hosts.sh
pids=()
multihost_up() {
  local why
  if ! why=$("$harness" check 2>&1); then
    printf '{"bench":"%s","skipped":"no simulated hosts here: %s"}\n' "$1" "$(echo "$why" | tail -1 | tr -d '"\\')"
    exit 0
  fi
  multihost_name=$2
  work=$(mktemp -d "/tmp/af_bench_$1_XXXXXX")
  trap multihost_down EXIT
  "$harness" prune >/dev/null 2>&1 || true  # sets left by a run that was killed
  "$harness" up "$2" "$3" --rate "$4" --owner $$ >/dev/null
}
multihost_down() {
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  "$harness" down "$multihost_name" >/dev/null 2>&1 || true
  if [ -n "${KEEP_LOGS:-}" ]; then cp -r "$work" "$KEEP_LOGS"; fi
  rm -rf "$work"
}
