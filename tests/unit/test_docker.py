"""docker/: what can be checked without a Docker engine.

* the compose files parse, every build context / Dockerfile / module they
  name exists, depends_on is health-gated and consistent, and every KAFKA_*
  variable maps to a property the broker knows;
* the Dockerfiles take their base image and pip's index/find-links as build
  arguments, copy paths that exist (and that the root .dockerignore keeps),
  run as a non-root user, keep data in a volume and health-check with the
  entrypoint's ``healthcheck``;
* the entrypoint's env-to-property mapping (Apache Kafka image convention),
  and that the command it builds really starts a broker;
* ``minikafka healthcheck`` exits 0 against a live broker and 1 against a
  dead port; given the broker's configuration it is healthy only when the
  broker answering on every listener is this one (its cluster id);
* a broker whose port is taken exits naming the address.

The images themselves are built and run by tests/docker (marker ``docker``).
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
    from minikafka.broker import config
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
    assert cmd[:3] == ["py", "-m", "minikafka"]
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


def test_healthcheck_command_uses_the_broker_configuration():
    env = {"KAFKA_LISTENERS": "PLAINTEXT://127.0.0.1:29999", "MINIKAFKA_CONFIG": "/etc/b.properties"}
    broker = entrypoint.command(env, [], hostname="h", python="py")
    hc = entrypoint.command(env, ["healthcheck", "--timeout", "3"], hostname="h", python="py")
    assert hc[:4] == ["py", "-m", "minikafka", "healthcheck"]
    assert hc[4:-2] == broker[3:], "the healthcheck must see exactly the broker's flags"
    assert hc[-2:] == ["--timeout", "3"]


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
        # (the ready line itself: the log names the data dir, whose path may contain "ready")
        wait_until(lambda: "minikafka ready:" in log.read_text() or proc.poll() is not None, timeout=20,
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
    return subprocess.run([sys.executable, "-m", "minikafka", "healthcheck", "--bootstrap-server",
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


def own_healthcheck(listeners: str, data_dir, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "minikafka", "healthcheck", "--override",
                           f"listeners={listeners}", "--override", f"log.dirs={data_dir}", *extra,
                           "--timeout", "3"], cwd=REPO_ROOT, capture_output=True, text=True,
                          timeout=30)


def test_healthcheck_by_configuration_is_about_this_broker(broker, broker_factory, tmp_path):
    """The image's healthcheck: the configured listener must be served by *this* broker."""
    mine = f"PLAINTEXT://127.0.0.1:{broker.port}"
    res = own_healthcheck(mine, broker.data_dir)
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"PLAINTEXT 127.0.0.1:{broker.port} serve" in res.stdout
    # 0.0.0.0 is probed on loopback
    res = own_healthcheck(f"PLAINTEXT://0.0.0.0:{broker.port}", broker.data_dir)
    assert res.returncode == 0, res.stdout + res.stderr
    # a broker that never started (no meta.properties yet), while `broker` holds the port
    res = own_healthcheck(mine, tmp_path / "fresh")
    assert res.returncode == 1 and "no cluster.id" in res.stderr, res.stderr
    # a broker whose data dir names another cluster: the one answering is not it
    other = broker_factory()
    other.stop()
    res = own_healthcheck(mine, other.data_dir)
    assert res.returncode == 1, res.stdout + res.stderr
    assert f"127.0.0.1:{broker.port} is served by another broker" in res.stderr
    # two listeners: both must answer
    res = own_healthcheck(f"{mine},OTHER://127.0.0.1:{free_port()}", broker.data_dir,
                          "--override", "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,OTHER:PLAINTEXT")
    assert res.returncode == 1 and "OTHER 127.0.0.1:" in res.stderr, res.stderr


def test_port_in_use_names_the_address(broker, tmp_path):
    res = subprocess.run([sys.executable, "-m", "minikafka", "--override",
                          f"listeners=PLAINTEXT://127.0.0.1:{broker.port}", "--override",
                          f"log.dirs={tmp_path / 'data'}"], cwd=REPO_ROOT, capture_output=True,
                         text=True, timeout=30)
    assert res.returncode == 1
    assert (f"cannot start: [Errno 98] Socket server failed to bind to 127.0.0.1:{broker.port}:"
            " Address already in use") in res.stderr, res.stderr


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
            # published on the host's loopback only, at the container's port
            m = re.fullmatch(r"127\.0\.0\.1:(\d+):(\d+)", str(port))
            assert m and m.group(1) == m.group(2), port
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
            if "healthcheck" in services[dep] and not services[dep]["healthcheck"].get("disable"):
                assert cond["condition"] == "service_healthy", f"{sname} -> {dep} not health-gated"
        # KAFKA_* variables of the broker service are broker properties
        env = svc.get("environment") or {}
        if isinstance(env, list):
            env = dict(e.split("=", 1) for e in env)
        if svc.get("build", {}).get("dockerfile") == "docker/Dockerfile":
            props = entrypoint.properties_from_env({k: str(v) for k, v in env.items()})
            assert props, f"{sname}: no KAFKA_* configuration"
            unknown = {k for k in set(props) - known if not k.startswith("listener.name.")}
            assert not unknown, f"{sname}: properties the broker does not know: {unknown}"
            from minikafka.broker.config import BrokerConfig
            BrokerConfig.load(overrides=props)  # per-listener settings included: the broker starts
            # the image's test (the broker's own listeners and cluster id): timing only here
            assert "test" not in svc["healthcheck"], f"{sname}: healthcheck.test overrides the image's"
            assert "healthcheck" in dockerfile_healthcheck("Dockerfile")
        # commands: the python modules they run exist
        cmd = svc.get("command")
        if isinstance(cmd, str):
            cmd = shlex.split(cmd)
        if cmd and re.fullmatch(r"[a-z_]+(\.[a-z_]+)+", cmd[0]):
            mod = REPO_ROOT.joinpath(*cmd[0].split(".")).with_suffix(".py")
            assert mod.is_file(), f"{sname}: module {cmd[0]} ({mod}) missing"
    # every service except the broker (and one-shots) waits for a healthy broker (the console
    # runs the broker's image with its healthcheck turned off)
    brokers = [s for s, v in services.items() if "healthcheck" in v and not v["healthcheck"].get("disable")]
    assert len(brokers) == 1
    for sname, svc in services.items():
        if sname not in brokers:
            assert (svc.get("depends_on") or {}).get(brokers[0], {}).get("condition") \
                == "service_healthy", f"{sname} does not wait for the broker"


def test_compose_commands_parse_with_their_programs():
    """Arguments in docker-compose.yml are accepted by the programs' parsers."""
    services = load("docker-compose.yml")["services"]
    import importlib
    from minikafka.pipeline.job import parse_args
    for sname, svc in services.items():
        cmd = svc.get("command")
        if not cmd:
            continue
        if svc["image"].startswith("minikafka-shop"):
            mod = importlib.import_module(cmd[0])
            mod.parse_args(cmd[1:])  # SystemExit on an unknown or malformed option
        elif cmd[:2] == ["minikafka", "console"]:
            from minikafka.console.cli import build_parser
            args = build_parser().parse_args(cmd[2:])
            assert args.bootstrap_server == "broker:29092" and args.allow_host, sname
        elif svc["image"].startswith("minikafka-spark"):
            args = parse_args(cmd)
            assert args.source == "kafka"
            # the connector is baked into the image, not fetched at every start
            assert "SPARK_JARS_PACKAGES" not in svc["environment"]


def test_spark_image_pins_the_connector_to_the_pyspark_version():
    import tomllib
    extras = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]["spark"]
    pyspark = next(e for e in extras if e.startswith("pyspark"))
    version = pyspark.split("==")[1]
    args = dict(rest.split("=", 1) for op, rest in dockerfile_instructions(DOCKER / "Dockerfile.spark")
                if op == "ARG" and "=" in rest)
    assert args["SPARK_KAFKA_PACKAGES"] == f"org.apache.spark:spark-sql-kafka-0-10_2.13:{version}"
    env = dict(kv.split("=", 1) for op, rest in dockerfile_instructions(DOCKER / "Dockerfile.spark")
               if op == "ENV" for kv in rest.split())
    assert env["SPARK_KAFKA_JARS"] == "/opt/spark-kafka-jars"


def test_pipeline_jars_expand_directories(tmp_path):
    from minikafka.pipeline.job import expand_jars
    (tmp_path / "b.jar").write_bytes(b"")
    (tmp_path / "a.jar").write_bytes(b"")
    (tmp_path / "notes.txt").write_text("")
    assert expand_jars(f"{tmp_path},/x/c.jar") == f"{tmp_path}/a.jar,{tmp_path}/b.jar,/x/c.jar"
    assert expand_jars(str(tmp_path / "empty")) == f"{tmp_path}/empty"   # a file name: as given
    (tmp_path / "empty").mkdir()
    assert expand_jars(str(tmp_path / "empty")) is None
    assert expand_jars(None) is None and expand_jars("") is None


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


def dockerfile_healthcheck(name: str) -> str:
    return next(rest for op, rest in dockerfile_instructions(DOCKER / name) if op == "HEALTHCHECK")


PIP_ARGS = {"PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_TRUSTED_HOST", "PIP_FIND_LINKS",
            "PIP_NO_INDEX"}


@pytest.mark.parametrize("name", ["Dockerfile", "Dockerfile.shop", "Dockerfile.spark"])
def test_dockerfile(name):
    ins = dockerfile_instructions(DOCKER / name)
    ops = [op for op, _ in ins]
    # FROM ${BASE_IMAGE}, default the official slim Python image; pip's settings as
    # build arguments (declared after FROM, unset by default: PyPI)
    assert ins[0] == ("ARG", "BASE_IMAGE=python:3.11-slim-bookworm"), ins[0]
    assert ins[1] == ("FROM", "${BASE_IMAGE}"), ins[1]
    assert ops.count("FROM") == 1
    declared = {rest for op, rest in ins[2:] if op == "ARG"}
    assert PIP_ARGS <= declared, f"{name}: pip build arguments missing: {PIP_ARGS - declared}"
    first_pip = next(i for i, (op, rest) in enumerate(ins) if op == "RUN" and "pip install" in rest)
    assert all(op != "ARG" or "=" in rest or i < first_pip for i, (op, rest) in enumerate(ins)
               if rest in PIP_ARGS), f"{name}: declare pip's build arguments before the first pip install"
    assert not any(op == "RUN" and "--system" in rest for op, rest in ins), \
        "useradd/groupadd --system with uid/gid 1000 warns (above SYS_UID_MAX)"
    copied = set()
    for op, rest in ins:
        if op == "COPY":
            *srcs, _dest = rest.split()
            for src in srcs:
                assert (REPO_ROOT / src).exists(), f"{name}: COPY source {src} missing"
                copied.add(src)
    if any(op == "RUN" and re.search(r"pip install (--no-deps )?\.(\s|$)", rest) for op, rest in ins):
        # the image installs minikafka: every folder the wheel is made of must be in it
        import tomllib
        setuptools = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
        folders = set(setuptools["package-dir"].values())
        assert folders <= copied, f"{name}: COPY {sorted(folders - copied)} (pyproject's package-dir)"
    users = [rest for op, rest in ins if op == "USER"]
    assert users and users[-1] not in ("root", "0"), f"{name} must run as non-root"
    assert "ENTRYPOINT" in ops
    entry = json.loads(next(rest for op, rest in ins if op == "ENTRYPOINT"))
    for part in entry:
        if part.startswith("/opt/minikafka/"):
            assert (REPO_ROOT / part.removeprefix("/opt/minikafka/")).is_file()
    # The classic builder (Compose's fallback) reads only the context root's .dockerignore.
    ignore = [line for line in (REPO_ROOT / ".dockerignore").read_text().split()
              if not line.startswith("#")]
    for must in (".git", ".venv", "tests", "data"):
        assert must in ignore, f".dockerignore must keep {must} out of the build context"
    assert not list(DOCKER.glob("*.dockerignore")), "one .dockerignore, at the context root"
    for op, rest in ins:
        if op == "COPY":
            for src in rest.split()[:-1]:
                assert src not in ignore, f"{name}: COPY {src} is excluded by its .dockerignore"
    if name == "Dockerfile":
        assert any(op == "VOLUME" and "/var/lib/minikafka/data" in rest for op, rest in ins)
        hc = json.loads(dockerfile_healthcheck(name).split("CMD", 1)[1])
        assert hc[:3] == ["python", "/opt/minikafka/docker/entrypoint.py", "healthcheck"], hc
        assert "9092" not in " ".join(hc), "the healthcheck must follow the configured listener"
        assert entrypoint.DATA_DIR == "/var/lib/minikafka/data"
    if name == "Dockerfile.spark":
        assert any(op == "RUN" and "openjdk-17" in rest for op, rest in ins)
        assert any(op == "RUN" and "optional-dependencies']['spark']" in rest for op, rest in ins)
        # Spark 4 creates ./artifacts at start: the working directory is the user's home
        workdir = [rest for op, rest in ins if op == "WORKDIR"][-1]
        assert workdir == "/home/spark" and "--home-dir /home/spark" in " ".join(
            rest for op, rest in ins if op == "RUN"), workdir
