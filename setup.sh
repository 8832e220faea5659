#!/usr/bin/env bash
# Installs actorflow's build and test dependencies from Debian packages.
# Idempotent: installs only what is missing, and prints nothing when all is present.
set -euo pipefail

packages=(
  build-essential cmake ccache pkg-config
  libcaf-dev libeigen3-dev libboost-dev libssl-dev openssl
  libprotobuf-dev protobuf-compiler
  catch2 nlohmann-json3-dev
  libopenblas-dev zlib1g-dev
  libleveldb-dev libsnappy-dev  # TensorFlow checkpoints' .index tables (checkpoint/sstable.hpp)
  libdnnl2  # oneDNN's sgemm for the CPU MatMul where it measures faster (opened with dlopen)
  dataset-fashion-mnist  # cli_test's Fashion-MNIST case (a failure in CI without it)
  graphviz  # cli_test parses the graphs `actorflow graph --dot` draws with Graphviz's dot (a failure in CI without it)
  clang libclang-rt-14-dev  # make sanitize and make fuzz (ASan, UBSan, libFuzzer)
  slurm-wlm munge  # slurm_test starts a one-node Slurm cluster (tests/slurm_cluster.hpp; a failure in CI without it)
  python3-dev pybind11-dev python3-pybind11 python3-numpy python3-pytest  # the Python module (python/), for /usr/bin/python3
)
# Peers measured by bench/run_all.sh (not needed to build or test). With
# libopenblas0 installed, Debian's alternatives give PyTorch an optimized BLAS.
if [[ "${1:-}" == "--bench" ]]; then
  packages+=(python3-torch libtbb-dev libopenblas0 libgloo-dev)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

echo "setup.sh: installing ${missing[*]}" >&2
sudo=""
if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq >/dev/null
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
