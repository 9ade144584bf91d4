"""Docker tests (marker ``docker``): the project's images built from its
Dockerfiles and its compose files run for real, on the host's network only.

* Every listener is bound to 127.0.0.1 on a port the test picked free; no port
  is published and no container network is used (containers get
  ``--network host``, or none).
* ``make docker-test`` first runs ``tests/docker/sandbox.py up`` (dockerd,
  Compose v2, a base image); without a daemon every test here skips with one
  reason, repeated loudly at the end of the run.
* The images are built once per session (``images``), from a wheelhouse served
  on loopback when the host Python matches the images' (3.11), so builds need
  no package index; Docker's layer cache makes a rebuild of unchanged sources
  take seconds. Build times and image sizes are printed at the end of the run.
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import sandbox  # noqa: E402
from dockerkit import FACTS, docker, fact, image_mb  # noqa: E402
from harness import REPO_ROOT, wait_until  # noqa: E402

IMAGES = {  # image -> Dockerfile (tags as in docker/docker-compose*.yml)
    "minikafka:latest": "docker/Dockerfile",
    "minikafka-shop:latest": "docker/Dockerfile.shop",
    "minikafka-spark:latest": "docker/Dockerfile.spark",
}
_SKIP_REASON: list[str] = []   # the one reason every docker test skips with


# The first test to use ``images`` pays for the builds: a cold Spark image (JRE
# from Debian, pyspark from the wheelhouse) takes minutes on a loaded machine.
TIMEOUT_S = 1800


def pytest_collection_modifyitems(config, items):
    for item in items:
        if HERE in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.docker)
            item.add_marker(pytest.mark.timeout(TIMEOUT_S))


def pytest_sessionfinish(session):
    # In a pytest-xdist worker, this summary would print nowhere: hand the skip reason and
    # the facts to the controller, whose tests/conftest.py prints them.
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput["docker_skip_reason"] = list(_SKIP_REASON)
        workeroutput["docker_facts"] = list(FACTS)


def pytest_terminal_summary(terminalreporter):
    if _SKIP_REASON:
        terminalreporter.write_line(f"!!! DOCKER TESTS SKIPPED: {_SKIP_REASON[0]}", red=True,
                                    bold=True)
    if FACTS:
        terminalreporter.section("docker facts")
        for line in FACTS:
            terminalreporter.write_line(line)


@pytest.fixture(scope="session")
def docker_env() -> dict:
    """{"base": BASE_IMAGE, "compose": [compose command]} or skip, once for the session."""
    if _SKIP_REASON:
        pytest.skip(_SKIP_REASON[0])
    reason = sandbox.daemon_problem()
    compose = sandbox.compose_command() if reason is None else None
    base = sandbox.base_image() if reason is None else None
    if reason is None and compose is None:
        reason = f"no Docker Compose >= {'.'.join(map(str, sandbox.COMPOSE_MIN))}"
    if reason is None and base is None:
        reason = f"no base image ({sandbox.OFFICIAL_BASE} or {sandbox.LOCAL_BASE})"
    if reason is not None:
        _SKIP_REASON.append(f"{reason} (run `make docker-test` or"
                            f" `python3 tests/docker/sandbox.py up` as root)")
        pytest.skip(_SKIP_REASON[0])
    return {"base": base, "compose": compose}


def _serve_wheelhouse(wheels: Path) -> tuple[subprocess.Popen, str]:
    """An HTTP server for the wheelhouse on 127.0.0.1, on the port it had last
    time if free: the URL is a build argument, and an unchanged one keeps
    Docker's layer cache valid across runs."""
    port_file = sandbox.STATE / "wheels.port"
    port = int(port_file.read_text()) if port_file.exists() else 0
    for candidate in (port, 0):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", candidate))
            except OSError:
                continue
            port = s.getsockname()[1]
            break
    port_file.write_text(f"{port}\n")
    proc = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind",
                             "127.0.0.1", "--directory", str(wheels)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def up() -> bool:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            assert proc.poll() is None, "wheelhouse server exited"
            return False
    wait_until(up, timeout=20, message="wheelhouse server did not start")
    return proc, f"http://127.0.0.1:{port}/"


@pytest.fixture(scope="session")
def images(docker_env) -> dict[str, str]:
    """The three images, built once per session from the working tree."""
    args = ["--network", "host", "--build-arg", f"BASE_IMAGE={docker_env['base']}",
            # Maven is not reachable from here: the connector jars are mounted instead
            "--build-arg", "SPARK_KAFKA_PACKAGES="]
    server = None
    if sys.version_info[:2] == (3, 11):
        t0 = time.monotonic()
        wheels = sandbox.ensure_wheelhouse()
        server, url = _serve_wheelhouse(wheels)
        args += ["--build-arg", "PIP_NO_INDEX=1", "--build-arg", f"PIP_FIND_LINKS={url}"]
        fact(f"wheelhouse {wheels}: ready in {time.monotonic() - t0:.1f} s")
    else:
        fact("host Python is not 3.11: images install from the package index")
    env = dict(os.environ, DOCKER_BUILDKIT="0")  # the builder Compose falls back to
    try:
        for ref, dockerfile in IMAGES.items():
            t0 = time.monotonic()
            docker("build", *args, "-q", "--force-rm", "-f", dockerfile, "-t", ref, ".", cwd=REPO_ROOT,
                   env=env, timeout=1800)
            fact(f"{ref}: built in {time.monotonic() - t0:.1f} s, {image_mb(ref):.0f} MB"
                 f" (base {docker_env['base']}: {image_mb(docker_env['base']):.0f} MB)")
    finally:
        if server is not None:
            server.terminate()
            server.wait(10)
    return {ref.split(":")[0]: ref for ref in IMAGES}


