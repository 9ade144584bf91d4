"""Packaging (issue 16 §2): the wheel holds one import name, ``minikafka``, made of the
repository's layer folders (pyproject's package-dir) and minikafka/; the command and the
pytest plugin point at modules that exist. The wheel itself, installed into an empty venv,
is tested by tests/integration/test_wheel_install.py (slow)."""
from __future__ import annotations

import fnmatch
import importlib
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
SETUPTOOLS = PROJECT["tool"]["setuptools"]


def test_every_package_of_the_mapped_folders_is_listed():
    expected = set()
    for name, folder in SETUPTOOLS["package-dir"].items():
        assert (ROOT / folder / "__init__.py").is_file(), folder
        for init in (ROOT / folder).rglob("__init__.py"):
            expected.add(".".join((name, *init.parent.relative_to(ROOT / folder).parts)))
    assert set(SETUPTOOLS["packages"]) == expected
    assert {p.split(".")[0] for p in expected} == {"minikafka"}  # one top-level import name
    # each layer's folder is the subpackage of its name
    assert all(name == "minikafka" if folder == "minikafka" else name == f"minikafka.{folder}"
               for name, folder in SETUPTOOLS["package-dir"].items())


def test_package_data_covers_every_other_file():
    """Each data file matches a pattern of its package (the nearest folder with an
    __init__.py), relative to that package's folder (``static/vendor/*.js``)."""
    data = SETUPTOOLS.get("package-data", {})
    missing = []
    for name, folder in SETUPTOOLS["package-dir"].items():
        for path in (ROOT / folder).rglob("*"):
            if path.is_dir() or path.suffix in (".py", ".pyc") or "__pycache__" in path.parts:
                continue
            home = path.parent
            while not (home / "__init__.py").is_file():
                home = home.parent
            package = ".".join((name, *home.relative_to(ROOT / folder).parts))
            relative = path.relative_to(home).as_posix()
            if not any(fnmatch.fnmatch(relative, pattern) and relative.count("/") == pattern.count("/")
                       for pattern in data.get(package, [])):
                missing.append(str(path.relative_to(ROOT)))
    assert not missing, f"not in pyproject's package-data: {missing}"


def test_the_command_and_the_plugin_resolve():
    module, _, attr = PROJECT["project"]["scripts"]["minikafka"].partition(":")
    assert callable(getattr(importlib.import_module(module), attr))
    [plugin] = PROJECT["project"]["entry-points"]["pytest11"].values()
    assert hasattr(importlib.import_module(plugin), "minikafka_broker")


def test_python_m_minikafka_is_the_broker_command():
    r = subprocess.run([sys.executable, "-m", "minikafka", "--help"], cwd=ROOT, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("usage: minikafka"), r.stdout
    assert not (ROOT / "broker" / "__main__.py").exists()  # `python -m broker` is gone
