#!/usr/bin/env bash
# Runs on a lent GPU machine (16 cores, PyTorch with CUDA), from the checkout's
# root, what bench/device_pack.sh packed into .device/:
#   1. the suites that need a GPU or place on one, with the GPU visible;
#   2. bench_gpu_train beside PyTorch on the same GPU (ms per step);
#   3. the CPU training steps and the executor's per-node cost at 1..16
#      threads, beside PyTorch at the same thread counts (GPU hidden);
#   4. (ncu, not by default) GPU time per kernel of a few steps at h/batch
#      $AF_NCU_SHAPE (default 4096x1024), actorflow's and PyTorch's.
# Logs go to $OUT (or /tmp/af_device). Last, bench/device_summary.py writes
# the run's record, YYYY-MM-DD-<gpu>.md (machine, commit, suites passed /
# skipped / failed, figures beside their peers), to $OUT and to bench/results/,
# and prints it: copy the one from $OUT into bench/results/ of your checkout and
# commit it, so the README can say when the GPU suites last passed.
#   bash bench/device_run.sh [tests] [gpu] [cpu] [ncu]    # default: the first three
# AF_TESTS="gpu_test ..." picks the suites of part 1.
# AF_THREADS="1 16" picks the thread counts of part 3.
set -u
out=${OUT:-/tmp/af_device}
mkdir -p "$out"
rm -f "$out"/tests.log "$out"/gpu.log "$out"/cpu.log   # a part not run leaves no old figures
parts=${*:-tests gpu cpu}
root=$(pwd)

# oneDNN travels compressed; cuBLAS (opened at run time) comes from the CUDA
# toolkit or PyTorch's wheels there.
if [ -f .device/lib/libdnnl.so.2.xz ] && [ ! -f .device/lib/libdnnl.so.2 ]; then
  xz -dc .device/lib/libdnnl.so.2.xz > .device/lib/libdnnl.so.2 2>/dev/null ||
    python3 -c 'import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' \
      .device/lib/libdnnl.so.2.xz .device/lib/libdnnl.so.2
fi
cublas=$(find /usr/local/cuda*/lib64 /usr/local/cuda*/lib /opt /usr/lib -name 'libcublas.so.1[0-9]*' 2>/dev/null | head -1)
[ -n "$cublas" ] && export LD_LIBRARY_PATH=$(dirname "$cublas")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# The tests name their data and the CLI by this checkout's paths where they were built.
if [ "$root" != /work/main ] && [ ! -e /work/main ]; then mkdir -p /work && ln -s "$root" /work/main; fi
mkdir -p /work/main/build-dev
printf '#!/bin/sh\nexec bash %s/.device/run.sh actorflow "$@"\n' "$root" > /work/main/build-dev/actorflow
chmod +x /work/main/build-dev/actorflow

{
  echo "== machine"; nvidia-smi -L; nproc; lscpu | grep -E 'Model name|^CPU\(s\)'
  echo "cublas: ${cublas:-none}"; python3 -c 'import torch; print("torch", torch.__version__, torch.cuda.is_available())'
} 2>&1 | tee "$out/machine.log"

# suite NAME [ENV=VALUE] -- PROGRAM ARGS...: one suite, its output and then
# "@@ suite NAME rc=N seconds=S" in tests.log (what device_summary.py reads).
suite() {
  local name=$1 setting=$2; shift 3
  echo "== $name" | tee -a "$out/tests.log"
  local t0=$SECONDS
  env $setting timeout 150 bash "$root/.device/run.sh" "$@" >> "$out/tests.log" 2>&1
  local rc=$?
  tail -3 "$out/tests.log"
  echo "@@ suite $name rc=$rc seconds=$((SECONDS - t0))" | tee -a "$out/tests.log"
}
# fig NAME LOG CMD...: a benchmark (or peer), its output added to LOG; a non-zero
# exit adds an error row there, which the record lists and fails on.
fig() {
  local name=$1 log=$2
  shift 2
  "$@" 2>&1 | tee -a "$log"
  local rc=${PIPESTATUS[0]}
  [ "$rc" -eq 0 ] || echo "{\"bench\":\"$name\",\"error\":\"exit $rc\"}" | tee -a "$log"
}
if [[ " $parts " == *" tests "* ]]; then
  : > "$out/tests.log"
  for t in ${AF_TESTS:-gpu_test gpu_training_test gpu_fault_test placement_gpu_test device_variables_test placement_test cli_test}; do
    if [ "$t" = cli_test ]; then
      # Its [may_skip] cases (Graphviz, Fashion-MNIST, ulimit) are CTest entries of
      # their own: a tool missing on the lent machine must not mark the suite skipped.
      suite "$t" "" -- "tests/$t" "~[may_skip]" -w NoTests
    else
      suite "$t" "" -- "tests/$t"
    fi
  done
  # gpu_test's cases on the paths that are not the default (tests/CMakeLists.txt
  # registers the same; -w NoTests: a filter that matches nothing fails).
  if [ -z "${AF_TESTS:-}" ]; then
    suite gpu_test_sgemm ACTORFLOW_GPU_GEMM=cublas -- tests/gpu_test -w NoTests "GPU MatMul*" "an MLP layer*"
    suite gpu_test_stream_callbacks ACTORFLOW_GPU_SYNC=callback -- \
      tests/gpu_test -w NoTests "an MLP layer*" "a large feed*" "GPU kernel errors*"
  fi
fi
if [[ " $parts " == *" gpu "* ]]; then
  echo "== gpu training step" | tee "$out/gpu.log"
  AF_BENCH_TRACE=1 fig gpu_train_step "$out/gpu.log" timeout 150 bash "$root/.device/run.sh" bench/bench_gpu_train
  # Variants to compare in the same run, e.g. AF_GPU_VARIANTS="ACTORFLOW_GPU_GEMM=cublas ACTORFLOW_GPU_SYNC=callback".
  for v in ${AF_GPU_VARIANTS:-}; do
    fig "gpu_train_step $v" "$out/gpu.log" env "$v" timeout 150 bash "$root/.device/run.sh" bench/bench_gpu_train
  done
  # Both peers (the same work; PyTorch at its best, one CUDA graph per step), with their ratios to ours.
  PYTHONUNBUFFERED=1 fig gpu_train_step_torch_peer "$out/gpu.log" \
    timeout 300 python3 bench/peer_torch_gpu_train.py --beside "$out/gpu.log"
fi
if [[ " $parts " == *" cpu "* ]]; then
  echo "== cpu" | tee "$out/cpu.log"
  for t in ${AF_THREADS:-1 2 4 8 16}; do
    CUDA_VISIBLE_DEVICES= ACTORFLOW_NUM_THREADS=$t fig "train_step threads=$t" "$out/cpu.log" \
      timeout 60 bash "$root/.device/run.sh" bench/bench_train mlp64 mlp256 softmax32
    CUDA_VISIBLE_DEVICES= PEER_TORCH_THREADS=$t PYTHONUNBUFFERED=1 fig "train_step_torch_peer threads=$t" "$out/cpu.log" \
      timeout 60 python3 bench/peer_torch_train.py mlp64 mlp256 softmax32
  done
  for t in ${AF_THREADS:-1 2 4 8 16}; do
    CUDA_VISIBLE_DEVICES= ACTORFLOW_NUM_THREADS=$t fig "executor threads=$t" "$out/cpu.log" \
      timeout 60 bash "$root/.device/run.sh" bench/bench_executor
  done
fi
if [[ " $parts " == *" cpudiag "* ]]; then
  # Where a CPU step's time goes at 2 and 16 threads (traced nodes), and the
  # step at 16 threads with each GEMM library and fewer threads per kernel.
  echo "== cpudiag" | tee "$out/cpudiag.log"
  for t in 2 16; do
    CUDA_VISIBLE_DEVICES= ACTORFLOW_NUM_THREADS=$t AF_BENCH_TRACE=1 AF_BENCH_TRACE_NODES=1 timeout 60 \
      bash "$root/.device/run.sh" bench/bench_train mlp64 mlp256 2>&1 | tee -a "$out/cpudiag.log"
  done
  for v in ACTORFLOW_CPU_GEMM=eigen ACTORFLOW_CPU_GEMM=onednn ACTORFLOW_INTRA_OP_THREADS=4 ACTORFLOW_INTRA_OP_THREADS=8; do
    echo "-- $v" | tee -a "$out/cpudiag.log"
    env CUDA_VISIBLE_DEVICES= ACTORFLOW_NUM_THREADS=16 "$v" timeout 60 \
      bash "$root/.device/run.sh" bench/bench_train mlp64 mlp256 2>&1 | tee -a "$out/cpudiag.log"
  done
fi
if [[ " $parts " == *" cpuknobs "* ]]; then
  # The CPU step at 2 and 16 threads under the pool's tuning knobs, side by side.
  echo "== cpuknobs" | tee "$out/cpuknobs.log"
  for t in 16 2; do
    for v in NONE=1 ACTORFLOW_SHARD_MODEL=eigen ACTORFLOW_POLL_ATTEMPTS=50000 "ACTORFLOW_SHARD_MODEL=eigen ACTORFLOW_POLL_ATTEMPTS=50000"; do
      echo "-- threads $t $v" | tee -a "$out/cpuknobs.log"
      env CUDA_VISIBLE_DEVICES= ACTORFLOW_NUM_THREADS=$t $v timeout 60 \
        bash "$root/.device/run.sh" bench/bench_train mlp64 mlp256 2>&1 | tee -a "$out/cpuknobs.log"
      env CUDA_VISIBLE_DEVICES= ACTORFLOW_NUM_THREADS=$t $v timeout 60 \
        bash "$root/.device/run.sh" bench/bench_executor 2>&1 | grep chain | tee -a "$out/cpuknobs.log"
    done
    CUDA_VISIBLE_DEVICES= PEER_TORCH_THREADS=$t PYTHONUNBUFFERED=1 timeout 60 python3 bench/peer_torch_train.py mlp64 mlp256 2>&1 | tee -a "$out/cpuknobs.log"
  done
fi
if [[ " $parts " == *" ncu "* ]]; then
  ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  shape=${AF_NCU_SHAPE:-4096x1024}
  # Skip the warm-up's launches; profile about two steps' kernels.
  flags="--metrics gpu__time_duration.sum --csv --launch-skip ${AF_NCU_SKIP:-400} --launch-count ${AF_NCU_COUNT:-80}"
  echo "== ncu actorflow $shape" | tee "$out/ncu.log"
  timeout 120 "$ncu" $flags bash "$root/.device/run.sh" bench/bench_gpu_train "$shape" > "$out/ncu_actorflow.csv" 2>>"$out/ncu.log"
  python3 bench/ncu_summary.py "$out/ncu_actorflow.csv" 2>&1 | tee -a "$out/ncu.log"
  if [ "${AF_NCU_PEER:-1}" = 1 ]; then
    echo "== ncu pytorch $shape" | tee -a "$out/ncu.log"
    # One mode (the same work as ours), so the profile holds one kind of step.
    timeout 150 "$ncu" $flags python3 bench/peer_torch_gpu_train.py --mode pytorch "$shape" > "$out/ncu_pytorch.csv" 2>>"$out/ncu.log"
    python3 bench/ncu_summary.py "$out/ncu_pytorch.csv" 2>&1 | tee -a "$out/ncu.log"
  fi
fi
echo "== summary"
commit=$(cat .device/commit 2>/dev/null || git rev-parse --short HEAD 2>/dev/null || echo unknown)
python3 bench/device_summary.py --machine "$out/machine.log" --tests "$out/tests.log" --commit "$commit" \
  --command "bash bench/device_run.sh $parts${AF_TESTS:+ (AF_TESTS=$AF_TESTS)}${AF_THREADS:+ (AF_THREADS=$AF_THREADS)}" \
  --out-dir "$out" --out-dir bench/results "$out/gpu.log" "$out/cpu.log"
