#!/usr/bin/env bash
# Builds what bench/device_run.sh runs on a lent GPU machine and packs it into
# .device/ (../shared/tools/device-pack), with oneDNN compressed beside it (the
# bare machine lacks it, and it is 40 MB). The build is build-dev/: Release,
# -march=x86-64-v3 (AVX2, FMA), since that machine's CPU is not this one's and
# -march=native here can emit instructions it lacks.
#   bench/device_pack.sh        # then, with carry [".device"]: bash bench/device_run.sh
set -euo pipefail
cd "$(dirname "$0")/.."
programs=(tests/gpu_test tests/gpu_training_test tests/gpu_fault_test tests/placement_gpu_test tests/placement_test tests/cli_test
          tests/device_variables_test bench/bench_gpu_train bench/bench_train bench/bench_executor actorflow)
cmake -S . -B build-dev -DCMAKE_BUILD_TYPE=Release -DAF_NATIVE=OFF -DCMAKE_CXX_FLAGS=-march=x86-64-v3 >/dev/null
targets=()
for p in "${programs[@]}"; do
  t=$(basename "$p")
  [ "$t" = actorflow ] && t=actorflow_cli
  targets+=("$t")
done
cmake --build build-dev -j2 --target "${targets[@]}"
../shared/tools/device-pack --build build-dev "${programs[@]}"
dnnl=$(ldconfig -p | awk '/libdnnl\.so\.2 /{print $NF; exit}')
if [ -n "$dnnl" ]; then
  xz -T2 -6 -c "$dnnl" > .device/lib/libdnnl.so.2.xz
  for dep in libgomp.so.1 libOpenCL.so.1; do
    p=$(ldconfig -p | awk -v n="$dep" '$1 == n {print $NF; exit}')
    [ -n "$p" ] && cp -L "$p" .device/lib/
  done
fi
du -sh .device
