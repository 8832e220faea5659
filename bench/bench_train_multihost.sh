#!/usr/bin/env bash
# Data-parallel training of the Fashion-MNIST MLP (examples/train_distributed)
# across 4 simulated hosts (tests/netns/hosts.sh: a network + PID namespace
# per host, every link 1 Gbit/s both ways by tc tbf), one worker per host, 1
# thread per process: examples/s in allreduce (4 workers), sync and async (1
# ps on host 0 beside worker 0, 4 workers; then a ps on every host, the hidden
# layer's weights in one part per ps: examples/train_distributed
# --partitions, the default) beside PyTorch DDP (gloo, 4
# processes, one per host, torchrun per host: bench/peer_torch_ddp.py) in the
# same namespaces and the same run, at batch 256 per worker. Each task serves
# on its host's address (ACTORFLOW_BIND, plaintext: ACTORFLOW_INSECURE).
# One JSON row per figure ("train_multihost"); the actorflow rows carry
# vs_ddp (their examples/s over DDP's) and, for sync and async, ps (how many
# ps tasks). Where namespaces cannot be made here,
# one {"bench":"train_multihost","skipped":WHY} row and exit 0.
#   bench/bench_train_multihost.sh [BUILD_DIR] [--steps N] [--rate RATE]
set -euo pipefail
cd "$(dirname "$0")/.."
build=build steps=300 rate=1gbit batch=256
while [ $# -gt 0 ]; do
  case $1 in
    --steps) steps=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    *) build=$1; shift ;;
  esac
done
hosts=4 py=/usr/bin/python3 name=aftr$$
# shellcheck source=bench/multihost_common.sh
source bench/multihost_common.sh
multihost_up train_multihost "$name" "$hosts" "$rate"
ips=()
for ((h = 0; h < hosts; h++)); do ips+=("$("$harness" ip "$name" "$h")"); done

# train MODE NSTEPS [NPS] -> the chief's JSON line, with "ps": NPS (or an error row)
train() {
  local mode=$1 nsteps=$2 nps=${3:-0} ws="" pss="" cluster h ps_pids=()
  for ((h = 0; h < hosts; h++)); do ws+="${ws:+, }\"${ips[h]}:2222\""; done
  for ((h = 0; h < nps; h++)); do pss+="${pss:+, }\"${ips[h]}:2223\""; done
  if [ "$nps" = 0 ]; then cluster="{\"worker\": [$ws]}"; else cluster="{\"ps\": [$pss], \"worker\": [$ws]}"; fi
  rm -rf "$work/ckpt"
  for ((h = 0; h < nps; h++)); do  # ps task h on host h
    ACTORFLOW_NUM_THREADS=1 "$harness" exec "$name" "$h" "$build/actorflow" server --cluster "$cluster" --job ps \
      --task "$h" --bind "${ips[h]}" --insecure >"$work/ps$h.$mode.$nps.log" 2>&1 &
    ps_pids+=($!)
    pids+=($!)
  done
  local workers=()
  for ((h = hosts - 1; h >= 0; h--)); do
    TF_CONFIG="{\"cluster\": $cluster, \"task\": {\"type\": \"worker\", \"index\": $h}}" ACTORFLOW_BIND="${ips[h]}" \
      ACTORFLOW_INSECURE=1 ACTORFLOW_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 timeout 600 \
      "$harness" exec "$name" "$h" "$build/examples/train_distributed" --mode "$mode" --batch "$batch" \
      --steps "$nsteps" --save-every 1000000 --dir "$work/ckpt" --report >"$work/$mode.$nps.w$h.log" 2>&1 &
    workers+=($!)
    pids+=($!)
  done
  local ok=1
  for p in "${workers[@]}"; do wait "$p" || ok=0; done
  for p in "${ps_pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  pids=()
  local line
  line=$(grep -o '{"bench":"train_distributed".*}' "$work/$mode.$nps.w0.log" | tail -1 || true)
  if [ -z "$line" ] || [ $ok = 0 ]; then
    echo "{\"bench\":\"train_multihost\",\"params\":{\"mode\":\"$mode\",\"ps\":$nps,\"batch\":$batch,\"hosts\":$hosts},\"error\":\"$(
      tail -n 1 "$work/$mode.$nps.w0.log" | tr -d '"\\' | cut -c1-200)\"}"
    return
  fi
  echo "${line%\}},\"ps\":$nps}"
}

ddp() {
  local h workers=()
  for ((h = hosts - 1; h >= 0; h--)); do
    GLOO_SOCKET_IFNAME=eth0 OMP_NUM_THREADS=1 timeout 600 "$harness" exec "$name" "$h" "$py" -m torch.distributed.run \
      --nnodes "$hosts" --nproc_per_node 1 --node_rank "$h" --redirects 1 --tee 1 --master_addr "${ips[0]}" --master_port 29400 \
      bench/peer_torch_ddp.py --batch "$batch" --steps "$steps" >"$work/ddp.$h.log" 2>&1 &
    workers+=($!)
    pids+=($!)
  done
  local ok=1
  for p in "${workers[@]}"; do wait "$p" || ok=0; done
  pids=()
  local line
  line=$(grep -o '{"bench": "train_ddp_peer".*}' "$work/ddp.0.log" | tail -1 || true)
  if [ -z "$line" ] || [ $ok = 0 ]; then
    echo "{\"bench\":\"train_multihost\",\"params\":{\"impl\":\"pytorch_ddp\",\"batch\":$batch,\"hosts\":$hosts},\"error\":\"$(
      grep -v '^\s*$' "$work/ddp.0.log" | tail -n 1 | tr -d '"\\' | cut -c1-200)\"}"
    return
  fi
  echo "$line"
}

rows=("$(ddp)" "$(train allreduce "$steps")" "$(train sync "$steps" 1)" "$(train async "$((steps * 2))" 1)"
  "$(train sync "$steps" "$hosts")" "$(train async "$((steps * 2))" "$hosts")")
status=0
"$py" - "$hosts" "$rate" "${rows[@]}" <<'PY' || status=1
import json, sys
hosts, rate, rows = int(sys.argv[1]), sys.argv[2], [json.loads(r) for r in sys.argv[3:]]
ddp = rows[0].get("median") if "error" not in rows[0] else None
bad = False
for r in rows:
    if "error" in r:
        bad = True
        print(json.dumps(r))
        continue
    impl = r["params"].get("impl", "actorflow")
    out = {"bench": "train_multihost",
           "params": {"hosts": hosts, "link": rate, "batch": r["params"]["batch"], "workers": r["params"]["workers"],
                      "impl": impl, **({"mode": r["params"]["mode"]} if "mode" in r["params"] else {}),
                      **({"ps": r["ps"]} if r.get("ps") else {})},
           "metric": "throughput", "unit": "examples/s", "median": r["median"]}
    if impl == "actorflow" and ddp:
        out["vs_ddp"] = round(r["median"] / ddp, 3)
    print(json.dumps(out))
sys.exit(1 if bad else 0)
PY
exit $status
