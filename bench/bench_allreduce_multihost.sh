#!/usr/bin/env bash
# All-reduce across 4 simulated hosts x 2 tasks (tests/netns/hosts.sh: a
# network + PID namespace per host, every link 1 Gbit/s both ways by tc tbf):
# actorflow as it chooses (one leader per host), the sharded layout, the flat ring forced, and
# torch.distributed gloo, in the same namespaces and the same run
# (bench/bench_allreduce_hosts.cpp), for two placements of the 8 ranks:
#   block   ranks 2h, 2h+1 on host h (Slurm's default): a flat ring's
#           neighbours are mostly on one host, each link carries 2(n-1)/n
#   cyclic  rank i on host i mod 4: every neighbour is on another host, each
#           link carries that twice (two tasks' ring traffic)
# One JSON row per placement, size and implementation (metric busbw, GB/s);
# where namespaces cannot be made here (not root, no veth/bridge/tbf), one
# {"bench":"allreduce_multihost","skipped":WHY} row and exit 0.
#   bench/bench_allreduce_multihost.sh [BUILD_DIR] [--rounds K] [--rate RATE]
set -euo pipefail
cd "$(dirname "$0")/.."
build=build rounds=3 rate=1gbit
while [ $# -gt 0 ]; do
  case $1 in
    --rounds) rounds=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    *) build=$1; shift ;;
  esac
done
hosts=4 per_host=2 ranks=8 py=/usr/bin/python3
case $rate in
  *gbit) gbps=${rate%gbit} ;;
  *mbit) gbps=$(awk "BEGIN{print ${rate%mbit}/1000}") ;;
  *) echo "bench_allreduce_multihost: --rate like 1gbit or 500mbit" >&2; exit 2 ;;
esac
name=afmh$$
# shellcheck source=bench/multihost_common.sh
source bench/multihost_common.sh
multihost_up allreduce_multihost "$name" "$hosts" "$rate"

status=0
for placement in ${PLACEMENTS:-block cyclic}; do
  dir="$work/$placement"
  mkdir -p "$dir"
  host_of() { if [ "$placement" = block ]; then echo $(($1 / per_host)); else echo $(($1 % hosts)); fi; }
  master="$("$harness" ip "$name" 0):29500"
  common=(--ranks "$ranks" --dir "$dir" --rounds "$rounds" --hosts "$hosts" --placement "$placement" --link "$rate"
          --link-gbps "$gbps")
  pids=()
  for ((r = 1; r < ranks; r++)); do
    h=$(host_of "$r")
    ip=$("$harness" ip "$name" "$h")
    "$harness" exec "$name" "$h" "$build/bench/bench_allreduce_hosts" --rank "$r" --host "$ip" "${common[@]}" \
      >"$dir/rank$r.log" 2>&1 &
    pids+=($!)
    GLOO_SOCKET_IFNAME=eth0 OMP_NUM_THREADS=1 "$harness" exec "$name" "$h" "$py" bench/peer_torch_allreduce.py \
      --ranks "$ranks" --rank "$r" --master "$master" >"$dir/gloo$r.log" 2>&1 &
    pids+=($!)
  done
  ip0=$("$harness" ip "$name" 0)
  if ! GLOO_SOCKET_IFNAME=eth0 OMP_NUM_THREADS=1 timeout 900 "$harness" exec "$name" 0 \
      "$build/bench/bench_allreduce_hosts" --rank 0 --host "$ip0" "${common[@]}" --python "$py" \
      --torch-master "$master"; then
    status=1
    tail -n 3 "$dir"/rank*.log "$dir"/gloo*.log >&2 || true
  fi
  for p in "${pids[@]}"; do
    if ! timeout 60 tail --pid="$p" -f /dev/null; then kill -KILL "$p" 2>/dev/null || true; fi
  done
  for p in "${pids[@]}"; do wait "$p" || status=1; done
  pids=()
done
exit $status
