#!/usr/bin/env bash
# Builds what bench/device_run.sh runs on a lent GPU machine and packs it into
# .device/ at the checkout's root, with the shared libraries a bare GPU machine
# lacks (CAF, Protobuf, ...) and oneDNN compressed beside them (40 MB). The
# build is build-dev/: Release, -march=x86-64-v3 (AVX2, FMA), since that
# machine's CPU is not this one's and -march=native here can emit instructions
# it lacks.
#   bench/device_pack.sh        # then, with carry [".device"]: bash bench/device_run.sh
# .device/run.sh PROGRAM [ARGS...] runs a packed program there (library path set).
# .device/ is excluded from git (.git/info/exclude); keep it under ~60 MiB.
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

# The programs, and every library they link that is not on every Linux machine.
out=$PWD/.device
rm -rf "$out"
mkdir -p "$out/bin" "$out/lib"
exclude=$(git rev-parse --git-path info/exclude)
grep -qx '/.device/' "$exclude" 2>/dev/null || { mkdir -p "$(dirname "$exclude")"; echo '/.device/' >> "$exclude"; }
base='^(libc|libm|libdl|librt|libpthread|libgcc_s|libstdc\+\+|ld-linux-x86-64|linux-vdso|libz|libresolv|libutil)\.so'
for p in "${programs[@]}"; do
  [ -x "build-dev/$p" ] || { echo "device_pack: no program build-dev/$p" >&2; exit 1; }
  mkdir -p "$out/bin/$(dirname "$p")"
  cp "build-dev/$p" "$out/bin/$p"
  # A library the loader cannot find here would fail there, later and farther away.
  if ldd "build-dev/$p" | grep -q 'not found'; then
    echo "device_pack: build-dev/$p needs libraries not found here:" >&2
    ldd "build-dev/$p" | grep 'not found' >&2
    exit 1
  fi
  ldd "build-dev/$p" | awk '/=> \// {print $1, $3}' | while read -r name path; do
    [[ $name =~ $base ]] && continue
    [ -e "$out/lib/$name" ] || cp -L "$path" "$out/lib/$name"
  done
done
cat > "$out/run.sh" <<'RUN'
#!/usr/bin/env bash
# Runs a packed program on the device machine: bash .device/run.sh PROGRAM [ARGS...]
here=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH=$here/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
p=$1; shift
chmod +x "$here/bin/$p" 2>/dev/null
exec "$here/bin/$p" "$@"
RUN
chmod +x "$out/run.sh"

dnnl=$(ldconfig -p | awk '/libdnnl\.so\.2 /{print $NF; exit}')
if [ -n "$dnnl" ]; then
  xz -T2 -6 -c "$dnnl" > .device/lib/libdnnl.so.2.xz
  for dep in libgomp.so.1 libOpenCL.so.1; do
    p=$(ldconfig -p | awk -v n="$dep" '$1 == n {print $NF; exit}')
    [ -n "$p" ] && cp -L "$p" .device/lib/
  done
fi
# The commit packed, for the summary device_run.sh writes.
{ git rev-parse --short HEAD; git diff --quiet HEAD -- . ':!bench/results' || echo dirty; } | paste -sd' ' > .device/commit
du -sh .device
