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

OpenBLAS also keeps its own thread pool, as many threads as cores unless
OPENBLAS_NUM_THREADS says otherwise, which torch.set_num_threads does not
touch: a PyTorch on OpenBLAS "at one thread" runs its GEMMs on every core.
threads() reports that pool's size in this process, set_threads() sets it.
"""
import ctypes
import ctypes.util
import os
import subprocess
import sys

# What 0.3.21's dynamic-arch build reports for a CPU it does not know.
FALLBACKS = {"Prescott", "Core2", "Katmai", "Coppermine", "Northwood", "Banias", "Unknown"}


def _openblas(*symbols):
    """OpenBLAS loaded with ctypes (the process's own copy when it has one), if
    it has these symbols; else None."""
    for name in ("libopenblas.so.0", ctypes.util.find_library("openblas")):
        if not name:
            continue
        try:
            lib = ctypes.CDLL(name)
            for symbol in symbols:
                getattr(lib, symbol)
            return lib
        except (OSError, AttributeError):
            continue
    return None


def loaded_core():
    """The kernel family OpenBLAS picks here by itself (None without OpenBLAS)."""
    lib = _openblas("openblas_get_corename")
    if lib is None:
        return None
    lib.openblas_get_corename.restype = ctypes.c_char_p
    return lib.openblas_get_corename().decode()


def _in_process():
    """The OpenBLAS this process has loaded already (a PyTorch on it), or None:
    loading one here would only name a library that nothing else uses."""
    try:
        with open("/proc/self/maps") as f:
            if "openblas" not in f.read():
                return None
    except OSError:
        return None
    lib = _openblas("openblas_get_num_threads", "openblas_set_num_threads")
    if lib is not None:
        lib.openblas_get_num_threads.restype = ctypes.c_int
        lib.openblas_set_num_threads.argtypes = [ctypes.c_int]
    return lib


def threads():
    """OpenBLAS's thread count in this process, or None when it has none loaded."""
    lib = _in_process()
    return lib.openblas_get_num_threads() if lib else None


def set_threads(n):
    """Sets OpenBLAS's thread count in this process, when it has one loaded."""
    lib = _in_process()
    if lib:
        lib.openblas_set_num_threads(n)


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
