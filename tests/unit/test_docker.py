"""docker/: what can be checked without a Docker engine.

* the compose files parse, every build context / Dockerfile / module they
  name exists, depends_on is health-gated and consistent, and every KAFKA_*
  variable maps to a property the broker knows;
* the Dockerfiles copy paths that exist, run as a non-root user, keep data in
  a volume and health-check with ``minikafka healthcheck``;
* the entrypoint's env-to-property mapping (Apache Kafka image convention),
  and that the command it builds really starts a broker;
* ``minikafka healthcheck`` exits 0 against a live broker and 1 against a
  dead port.
"""
from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from harness import REPO_ROOT, free_port, wait_until

yaml = pytest.importorskip("yaml", reason="PyYAML not installed")

DOCKER = REPO_ROOT / "docker"
COMPOSE_FILES = ["docker-compose.yml", "docker-compose.broker.yml"]

sys.path.insert(0, str(DOCKER))
import entrypoint  # noqa: E402


def load(name: str) -> dict:
    return yaml.safe_load((DOCKER / name).read_text())


def broker_keys() -> set[str]:
    from broker import config
    table = next(v for k, v in vars(config).items()
                 if isinstance(v, dict) and "advertised.listeners" in v)
    return set(table)


# --------------------------------------------------------------------------
# entrypoint: env -> properties
# --------------------------------------------------------------------------

@pytest.mark.parametrize("env,prop", [
    ("KAFKA_ADVERTISED_LISTENERS", "advertised.listeners"),
    ("KAFKA_NUM_PARTITIONS", "num.partitions"),
    ("KAFKA_LOG_RETENTION_MS", "log.retention.ms"),
    ("KAFKA_LISTENER_SECURITY_PROTOCOL_MAP", "listener.security.protocol.map"),
    ("KAFKA_TRANSACTION_STATE_LOG_NUM_PARTITIONS", "transaction.state.log.num.partitions"),
    ("KAFKA_FOO__BAR", "foo_bar"),                    # __  -> _
    ("KAFKA_FOO___BAR", "foo-bar"),                   # ___ -> -
    ("KAFKA_A___B__C_D", "a-b_c.d"),
    ("KAFKA_LISTENER_NAME_INTERNAL_SSL_KEY__STORE", "listener.name.internal.ssl.key_store"),
])
def test_env_to_property(env, prop):
    assert entrypoint.env_to_property(env) == prop


@pytest.mark.parametrize("env", ["KAFKA_HEAP_OPTS", "KAFKA_OPTS", "KAFKA_LOG4J_OPTS",
                                 "KAFKA_JMX_PORT", "KAFKA_VERSION", "KAFKA_", "PATH",
                                 "MINIKAFKA_LOG_LEVEL", "kafka_num_partitions"])
def test_env_that_is_not_a_property(env):
    assert entrypoint.env_to_property(env) is None


def test_broker_command_defaults_and_overrides():
    cmd = entrypoint.command({"KAFKA_NUM_PARTITIONS": "3", "KAFKA_HEAP_OPTS": "-Xmx1g",
                              "KAFKA_LOG_DIRS": "/data", "HOME": "/root"},
                             ["--override", "log.retention.ms=5"], hostname="b1", python="py")
    assert cmd[:3] == ["py", "-m", "broker"]
    pairs = [cmd[i + 1] for i, a in enumerate(cmd) if a == "--override"]
    assert pairs == ["listeners=PLAINTEXT://0.0.0.0:9092",
                     "advertised.listeners=PLAINTEXT://b1:9092",
                     "log.dirs=/data",                    # env beats the default
                     "num.partitions=3",
                     "log.retention.ms=5"]                # arguments come last: they win
    with_config = entrypoint.command({"MINIKAFKA_CONFIG": "/etc/b.properties"}, [], "h", "py")
    assert with_config[3:5] == ["--config", "/etc/b.properties"]


def test_other_commands_pass_through():
    assert entrypoint.command({}, ["minikafka", "healthcheck"]) == ["minikafka", "healthcheck"]
    assert entrypoint.command({}, ["sh", "-c", "true"]) == ["sh", "-c", "true"]


def test_entrypoint_starts_a_broker_configured_by_env(tmp_path):
    """The real entrypoint, env only: the broker accepts every mapped property."""
    port = free_port()
    env = {"PATH": os.environ["PATH"], "PYTHONUNBUFFERED": "1",
           "KAFKA_LISTENERS": f"PLAINTEXT://127.0.0.1:{port}",
           "KAFKA_ADVERTISED_LISTENERS": f"PLAINTEXT://127.0.0.1:{port}",
           "KAFKA_LOG_DIRS": str(tmp_path / "data"), "KAFKA_NUM_PARTITIONS": "3",
           "KAFKA_HEAP_OPTS": "-Xmx1g"}
    log = tmp_path / "entrypoint.log"
    with open(log, "wb") as f:
        proc = subprocess.Popen([sys.executable, str(DOCKER / "entrypoint.py")], cwd=REPO_ROOT,
                                env=env, stdout=f, stderr=subprocess.STDOUT,
                                start_new_session=True)
    try:
        wait_until(lambda: "ready" in log.read_text() or proc.poll() is not None, timeout=20,
                   message=lambda: log.read_text())
        assert proc.poll() is None, f"broker exited {proc.returncode}:\n{log.read_text()}"
        text = log.read_text()
        assert f"listening on PLAINTEXT://127.0.0.1:{port}" in text
        assert "unknown configuration key" not in text, text
        hc = healthcheck(f"127.0.0.1:{port}")
        assert hc.returncode == 0, hc.stderr
        # num.partitions=3 reached the broker: an auto-created topic has 3 partitions
        from kafka import KafkaProducer
        p = KafkaProducer(bootstrap_servers=f"127.0.0.1:{port}")
        try:
            p.send("auto-created", b"x").get(timeout=10)
            assert p.partitions_for("auto-created") == {0, 1, 2}
        finally:
            p.close()
        proc.send_signal(signal.SIGTERM)  # exec'd: the signal reaches the broker itself
        assert proc.wait(15) == 0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)


# --------------------------------------------------------------------------
# healthcheck subcommand
# --------------------------------------------------------------------------

def healthcheck(bootstrap: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "broker", "healthcheck", "--bootstrap-server",
                           bootstrap, "--timeout", "3"], cwd=REPO_ROOT, capture_output=True,
                          text=True, timeout=30)


def test_healthcheck_live_broker(broker):
    res = healthcheck(broker.bootstrap)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "healthy" in res.stdout


def test_healthcheck_dead_port():
    res = healthcheck(f"127.0.0.1:{free_port()}")
    assert res.returncode == 1, res.stdout + res.stderr
    assert "unhealthy" in res.stderr


# --------------------------------------------------------------------------
# compose files
# --------------------------------------------------------------------------

# Keys of the Compose specification used or plausible here: a typo fails.
SERVICE_KEYS = {"build", "image", "hostname", "command", "entrypoint", "environment", "ports",
                "volumes", "tmpfs", "healthcheck", "depends_on", "restart", "profiles",
                "networks", "user", "working_dir", "container_name", "env_file", "labels"}
BUILD_KEYS = {"context", "dockerfile", "args", "target"}
HEALTHCHECK_KEYS = {"test", "interval", "timeout", "start_period", "start_interval", "retries",
                    "disable"}
TOP_KEYS = {"name", "services", "volumes", "networks", "configs", "secrets"}
RESTART = {"no", "always", "on-failure", "unless-stopped"}


def _dockerfile(compose_dir: Path, build: dict) -> tuple[Path, Path]:
    context = (compose_dir / build["context"]).resolve()
    return context, context / build.get("dockerfile", "Dockerfile")


@pytest.mark.parametrize("name", COMPOSE_FILES)
def test_compose_file_is_consistent(name):
    doc = load(name)
    assert set(doc) <= TOP_KEYS, set(doc) - TOP_KEYS
    services = doc["services"]
    assert services
    declared_volumes = set(doc.get("volumes") or {})
    for sname, svc in services.items():
        assert set(svc) <= SERVICE_KEYS, f"{sname}: unknown keys {set(svc) - SERVICE_KEYS}"
        assert set(svc.get("build") or {}) <= BUILD_KEYS
        assert set(svc.get("healthcheck") or {}) <= HEALTHCHECK_KEYS
        assert svc.get("restart", "no") in RESTART
        for v in svc.get("volumes") or []:
            src = v.split(":", 1)[0]
            if not src.startswith((".", "/")):
                assert src in declared_volumes, f"{sname}: volume {src} not declared"
        for port in svc.get("ports") or []:
            assert re.fullmatch(r"\d+:\d+", str(port)), port
    images_built = {s["image"] for s in services.values() if "build" in s and "image" in s}
    known = broker_keys()
    for sname, svc in services.items():
        # builds: context and Dockerfile exist
        if "build" in svc:
            context, dockerfile = _dockerfile(DOCKER, svc["build"])
            assert context == REPO_ROOT, f"{sname}: build context {context} is not the repo root"
            assert dockerfile.is_file(), f"{sname}: {dockerfile} missing"
        else:
            assert svc.get("image") in images_built, f"{sname}: image {svc.get('image')} not built here"
        # depends_on: known services, broker gated on health
        for dep, cond in (svc.get("depends_on") or {}).items():
            assert dep in services, f"{sname} depends on unknown service {dep}"
            assert cond["condition"] in ("service_healthy", "service_started",
                                         "service_completed_successfully")
            if "healthcheck" in services[dep]:
                assert cond["condition"] == "service_healthy", f"{sname} -> {dep} not health-gated"
        # KAFKA_* variables of the broker service are broker properties
        env = svc.get("environment") or {}
        if isinstance(env, list):
            env = dict(e.split("=", 1) for e in env)
        if svc.get("build", {}).get("dockerfile") == "docker/Dockerfile":
            props = entrypoint.properties_from_env({k: str(v) for k, v in env.items()})
            assert props, f"{sname}: no KAFKA_* configuration"
            unknown = set(props) - known
            assert not unknown, f"{sname}: properties the broker does not know: {unknown}"
            hc = svc["healthcheck"]["test"]
            assert hc[:3] == ["CMD", "minikafka", "healthcheck"], hc
        # commands: the python modules they run exist
        cmd = svc.get("command")
        if isinstance(cmd, str):
            cmd = shlex.split(cmd)
        if cmd and re.fullmatch(r"[a-z_]+(\.[a-z_]+)+", cmd[0]):
            mod = REPO_ROOT.joinpath(*cmd[0].split(".")).with_suffix(".py")
            assert mod.is_file(), f"{sname}: module {cmd[0]} ({mod}) missing"
    # every service except the broker (and one-shots) waits for a healthy broker
    brokers = [s for s, v in services.items() if "healthcheck" in v]
    assert len(brokers) == 1
    for sname, svc in services.items():
        if sname not in brokers:
            assert (svc.get("depends_on") or {}).get(brokers[0], {}).get("condition") \
                == "service_healthy", f"{sname} does not wait for the broker"


def test_compose_commands_parse_with_their_programs():
    """Arguments in docker-compose.yml are accepted by the programs' parsers."""
    services = load("docker-compose.yml")["services"]
    sys.path.insert(0, str(REPO_ROOT))
    import importlib
    from pipeline.job import parse_args
    for sname, svc in services.items():
        cmd = svc.get("command")
        if not cmd:
            continue
        if svc["image"].startswith("minikafka-shop"):
            mod = importlib.import_module(cmd[0])
            mod.parse_args(cmd[1:])  # SystemExit on an unknown or malformed option
        elif svc["image"].startswith("minikafka-spark"):
            args = parse_args(cmd)
            assert args.source == "kafka"
            assert svc["environment"]["SPARK_JARS_PACKAGES"].startswith(
                "org.apache.spark:spark-sql-kafka-0-10_2.13:")


def test_spark_image_pins_the_connector_to_the_pyspark_version():
    import tomllib
    extras = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]["spark"]
    pyspark = next(e for e in extras if e.startswith("pyspark"))
    version = pyspark.split("==")[1]
    text = (DOCKER / "Dockerfile.spark").read_text()
    assert f"spark-sql-kafka-0-10_2.13:{version}" in text
    pkg = load("docker-compose.yml")["services"]["spark-pipeline"]["environment"]["SPARK_JARS_PACKAGES"]
    assert pkg.endswith(f":{version}")


# --------------------------------------------------------------------------
# Dockerfiles
# --------------------------------------------------------------------------

def dockerfile_instructions(path: Path) -> list[tuple[str, str]]:
    text = re.sub(r"\\\n", " ", path.read_text())
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            op, _, rest = line.partition(" ")
            out.append((op.upper(), rest.strip()))
    return out


@pytest.mark.parametrize("name", ["Dockerfile", "Dockerfile.shop", "Dockerfile.spark"])
def test_dockerfile(name):
    ins = dockerfile_instructions(DOCKER / name)
    ops = [op for op, _ in ins]
    assert ins[0][0] == "FROM" and "slim" in ins[0][1]
    for op, rest in ins:
        if op == "COPY":
            *srcs, _dest = rest.split()
            for src in srcs:
                assert (REPO_ROOT / src).exists(), f"{name}: COPY source {src} missing"
    users = [rest for op, rest in ins if op == "USER"]
    assert users and users[-1] not in ("root", "0"), f"{name} must run as non-root"
    assert "ENTRYPOINT" in ops
    entry = json.loads(next(rest for op, rest in ins if op == "ENTRYPOINT"))
    for part in entry:
        if part.startswith("/opt/minikafka/"):
            assert (REPO_ROOT / part.removeprefix("/opt/minikafka/")).is_file()
    ignore = (DOCKER / f"{name}.dockerignore").read_text().split()
    assert ".venv" in ignore and ".git" in ignore, "the repo-root context must not ship the venv"
    for op, rest in ins:
        if op == "COPY":
            for src in rest.split()[:-1]:
                assert src not in ignore, f"{name}: COPY {src} is excluded by its .dockerignore"
    if name == "Dockerfile":
        assert any(op == "VOLUME" and "/var/lib/minikafka/data" in rest for op, rest in ins)
        hc = next(rest for op, rest in ins if op == "HEALTHCHECK")
        assert "minikafka" in hc and "healthcheck" in hc
        assert entrypoint.DATA_DIR == "/var/lib/minikafka/data"
    if name == "Dockerfile.spark":
        assert any(op == "RUN" and "openjdk-17" in rest for op, rest in ins)
        assert any(op == "RUN" and ".[spark]" in rest for op, rest in ins)
