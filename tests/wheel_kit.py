"""The wheel built from this checkout, installed into an empty venv: shared by the tests that
check what an installed minikafka is (tests/integration/test_wheel_install.py, test_codecs_installed.py)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# what a wheel is built from: pyproject's package-dir folders and the files it names
SOURCES = ["pyproject.toml", "README.md", *tomllib.loads((ROOT / "pyproject.toml").read_text())[
    "tool"]["setuptools"]["package-dir"].values()]
NO_INDEX = ("Could not find a version", "No matching distribution", "Failed to establish",
            "Temporary failure in name resolution", "Network is unreachable")


def run(cmd: list, cwd: Path, env: dict, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)


def clean_env(*drop: str) -> dict[str, str]:
    """This process's environment without what would leak this checkout or the test venv into a
    subprocess (and without the names in ``drop``)."""
    return {k: v for k, v in os.environ.items()
            if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", *drop) and not k.startswith("PYTEST_")}


def build_wheel(tmp: Path, env: dict) -> Path:
    """``pip wheel`` of a copy of the checkout (the build leaves build/ and *.egg-info behind,
    not in the checkout); the wheel's path."""
    src = tmp / "src"
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            src.mkdir(exist_ok=True)
            shutil.copy(ROOT / name, src / name)
    wheels = tmp / "wheels"
    r = run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", wheels, src], tmp, env)
    assert r.returncode == 0, r.stdout + r.stderr
    [wheel] = wheels.glob("minikafka-*.whl")
    return wheel


def venv_with(tmp: Path, env: dict, *packages) -> Path:
    """An empty venv (no pip of its own: this pip installs into it) holding ``packages`` and what
    their metadata declares; its python. Skips the test, saying why, without a package index."""
    venv = tmp / "venv"
    r = run([sys.executable, "-m", "venv", "--without-pip", venv], tmp, env)
    assert r.returncode == 0, r.stderr
    py = venv / "bin" / "python"
    r = run([sys.executable, "-m", "pip", "--python", py, "install", "-q", "--disable-pip-version-check",
             *packages], tmp, env, timeout=600)
    if r.returncode != 0 and any(s in r.stdout + r.stderr for s in NO_INDEX):
        pytest.skip(f"no package index for {', '.join(str(p) for p in packages)}: "
                    f"{(r.stdout + r.stderr).strip().splitlines()[-1]}")
    assert r.returncode == 0, r.stdout + r.stderr
    return py
