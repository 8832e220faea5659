"""Which kernels OpenBLAS should run here, for the peers that use it (PyTorch's
CPU matmul, bench_matmul's cblas_sgemm): a peer is measured at its best.

Debian 12's OpenBLAS 0.3.21 picks its kernels by CPU model at load time, and a
model newer than it falls back to the generic Prescott kernels: on a Xeon of
model 207 (AVX-512) PyTorch's MLP step (bench/peer_torch_train.py mlp64) ran at
33-41k examples/s that way, and at 63-71k with OPENBLAS_CORETYPE=SkylakeX. When
OpenBLAS falls back that way, this picks the newest kernel family the CPU's
flags allow; it leaves OpenBLAS's own choice, and a user's OPENBLAS_CORETYPE,
alone.

  python3 bench/openblas_core.py   # prints the OPENBLAS_CORETYPE to set, or nothing
  import openblas_core; openblas_core.configure()   # sets it, before OpenBLAS loads
"""
import ctypes
import ctypes.util
import os
import subprocess
import sys

# What 0.3.21's dynamic-arch build reports for a CPU it does not know.
FALLBACKS = {"Prescott", "Core2", "Katmai", "Coppermine", "Northwood", "Banias", "Unknown"}


def loaded_core():
    """The kernel family OpenBLAS picks here by itself (None without OpenBLAS)."""
    for name in ("libopenblas.so.0", ctypes.util.find_library("openblas")):
        if not name:
            continue
        try:
            lib = ctypes.CDLL(name)
            lib.openblas_get_corename.restype = ctypes.c_char_p
            return lib.openblas_get_corename().decode()
        except (OSError, AttributeError):
            continue
    return None


def cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def best_core():
    """OPENBLAS_CORETYPE to set, or "" when OpenBLAS's own choice stands."""
    if os.environ.get("OPENBLAS_CORETYPE"):
        return ""
    # In a child: the core is chosen once, when the library loads.
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}  # an empty one is not "unset" to it
    probe = subprocess.run([sys.executable, __file__, "--loaded"], env=env, capture_output=True, text=True)
    core = probe.stdout.strip()
    if core not in FALLBACKS:
        return ""
    flags = cpu_flags()
    if {"avx512f", "avx512bw", "avx512dq", "avx512vl", "avx512cd"} <= flags:
        return "SkylakeX"
    if {"avx2", "fma"} <= flags:
        return "Haswell"
    if "avx" in flags:
        return "SandyBridge"
    return ""


def configure():
    """Sets OPENBLAS_CORETYPE when OpenBLAS would fall back; returns the core in use."""
    core = best_core()
    if core:
        os.environ["OPENBLAS_CORETYPE"] = core
    return os.environ.get("OPENBLAS_CORETYPE") or "own choice"


if __name__ == "__main__":
    if sys.argv[1:] == ["--loaded"]:
        print(loaded_core() or "")
    else:
        print(best_core())
