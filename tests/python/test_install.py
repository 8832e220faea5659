"""`cmake --install BUILD --prefix P` puts the module into P's Python path (lib/python3.X/dist-packages), and
/usr/bin/python3 imports it from there alone (no PYTHONPATH into the build tree) and runs a step."""

import os
import shutil
import subprocess
import sys

import pytest

from conftest import build_dir


def test_installed_module_imports_and_runs(tmp_path):
    cmake = shutil.which("cmake")
    if cmake is None:
        pytest.skip("no cmake")
    prefix = tmp_path / "prefix"
    subprocess.run([cmake, "--install", build_dir(), "--prefix", str(prefix)], check=True, stdout=subprocess.PIPE)
    site = prefix / "lib" / ("python%d.%d" % sys.version_info[:2]) / "dist-packages"
    assert (site / "actorflow" / "gen_ops.py").exists()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LD_LIBRARY_PATH")}
    env["PYTHONPATH"] = str(site)
    out = subprocess.run([sys.executable, "-c", "import actorflow as tf\n"
                          "print(tf.__file__)\n"
                          "print(tf.Session().run(tf.reduce_sum(tf.constant([1.0, 2.0, 3.0]))))"],
                         env=env, cwd=str(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.split()
    assert lines[0].startswith(str(site)) and float(lines[1]) == 6.0
