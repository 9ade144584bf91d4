"""Acceptance (issue 16 §2): the wheel, built from this checkout and installed into an empty
venv together with pytest and one Kafka client from the package index, adds exactly one
import name (``import broker`` fails, ``import minikafka`` works, ``python -m minikafka``
runs), and a user's test file using the ``minikafka_broker`` fixture
(examples/test_exactly_once.py, copied out of the checkout) passes there."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import tomllib
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
CLIENT = "confluent-kafka"  # the one Kafka client the example uses
# what a wheel is built from: pyproject's package-dir folders and the files it names
SOURCES = ["pyproject.toml", "README.md", *tomllib.loads((ROOT / "pyproject.toml").read_text())[
    "tool"]["setuptools"]["package-dir"].values()]
NO_INDEX = ("Could not find a version", "No matching distribution", "Failed to establish",
            "Temporary failure in name resolution", "Network is unreachable")


def run(cmd: list, cwd: Path, env: dict, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)


def test_wheel_in_an_empty_venv_runs_a_users_test_file(tmp_path):
    t0 = time.monotonic()
    # nothing of this checkout or of the test venv may leak into the new venv's processes
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "MINIKAFKA_BOOTSTRAP")
           and not k.startswith("PYTEST_")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"

    # pip wheel of a copy: the build leaves build/ and *.egg-info behind, not in the checkout
    src = tmp_path / "src"
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            src.mkdir(exist_ok=True)
            shutil.copy(ROOT / name, src / name)
    wheels = tmp_path / "wheels"
    r = run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", wheels, src], tmp_path, env)
    assert r.returncode == 0, r.stdout + r.stderr
    [wheel] = wheels.glob("minikafka-*.whl")
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert tops == {"minikafka"}, tops
    # the console's pages and its vendored browser assets, with their licenses, are in the wheel
    for f in ("templates/page.html", "static/console.js", "static/vendor/htmx.min.js",
              "static/vendor/htmx.LICENSE", "static/vendor/uPlot.iife.min.js", "static/vendor/uPlot.LICENSE"):
        assert f"minikafka/console/{f}" in names, f
    built = time.monotonic()

    # an empty venv (no pip of its own: this pip installs into it)
    venv = tmp_path / "venv"
    r = run([sys.executable, "-m", "venv", "--without-pip", venv], tmp_path, env)
    assert r.returncode == 0, r.stderr
    py = venv / "bin" / "python"
    r = run([sys.executable, "-m", "pip", "--python", py, "install", "-q", "--disable-pip-version-check",
             wheel, "pytest", CLIENT], tmp_path, env, timeout=600)
    if r.returncode != 0 and any(s in r.stdout + r.stderr for s in NO_INDEX):
        pytest.skip(f"no package index for pytest and {CLIENT}: {(r.stdout + r.stderr).strip().splitlines()[-1]}")
    assert r.returncode == 0, r.stdout + r.stderr
    installed = time.monotonic()

    user = tmp_path / "user"  # a user's project: nothing of minikafka here but the test file
    user.mkdir()
    shutil.copy(ROOT / "examples" / "test_exactly_once.py", user / "test_exactly_once.py")
    for name in ("broker", "protocol", "storage", "coordinator", "pipeline"):
        r = run([py, "-c", f"import {name}"], user, env)
        assert r.returncode != 0 and "ModuleNotFoundError" in r.stderr, (name, r.stderr)
    r = run([py, "-c", "import minikafka, minikafka.testing; print(minikafka.__file__)"], user, env)
    assert r.returncode == 0 and str(venv) in r.stdout, r.stdout + r.stderr
    for cmd in ([py, "-m", "minikafka", "--help"], [venv / "bin" / "minikafka", "--help"]):
        r = run(cmd, user, env, timeout=60)
        assert r.returncode == 0 and r.stdout.startswith("usage: minikafka"), r.stdout + r.stderr

    r = run([py, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_exactly_once.py"], user, env)
    assert r.returncode == 0 and "1 passed" in r.stdout, r.stdout[-6000:] + r.stderr[-3000:]
    print(f"wheel built in {built - t0:.1f}s, venv installed in {installed - built:.1f}s,"
          f" user's test in {time.monotonic() - installed:.1f}s")
