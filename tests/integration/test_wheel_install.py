"""Acceptance (issue 16 §2): the wheel, built from this checkout and installed into an empty
venv together with pytest and one Kafka client from the package index, adds exactly one
import name (``import broker`` fails, ``import minikafka`` works, ``python -m minikafka``
runs), and a user's test file using the ``minikafka_broker`` fixture
(examples/test_exactly_once.py, copied out of the checkout) passes there."""
from __future__ import annotations

import shutil
import time
import zipfile

import pytest

from wheel_kit import ROOT, build_wheel, clean_env, run, venv_with

pytestmark = pytest.mark.slow

CLIENT = "confluent-kafka"  # the one Kafka client the example uses


def test_wheel_in_an_empty_venv_runs_a_users_test_file(tmp_path):
    t0 = time.monotonic()
    # nothing of this checkout or of the test venv may leak into the new venv's processes
    env = dict(clean_env("MINIKAFKA_BOOTSTRAP"), PYTHONDONTWRITEBYTECODE="1")

    wheel = build_wheel(tmp_path, env)
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert tops == {"minikafka"}, tops
    # the console's pages and its vendored browser assets, with their licenses, are in the wheel
    for f in ("templates/page.html", "static/console.js", "static/vendor/htmx.min.js",
              "static/vendor/htmx.LICENSE", "static/vendor/uPlot.iife.min.js", "static/vendor/uPlot.LICENSE"):
        assert f"minikafka/console/{f}" in names, f
    built = time.monotonic()

    py = venv_with(tmp_path, env, wheel, "pytest", CLIENT)
    venv = py.parents[1]
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
