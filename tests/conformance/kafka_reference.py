"""Run a real Apache Kafka 4.1.0 for recording golden answers (never in CI).

The distribution is the one `../shared/reference/assemble.sh` puts in
``$REFERENCE_DIR`` (default: ``reference`` beside the project's parent folder,
i.e. ``../reference`` from the repository root). Nothing of it is in this
repository; this module only writes config files into a temp dir and runs
Kafka's own start scripts from there.

The cluster: node 1 is a combined KRaft broker+controller, formatted with the
scenario group's finalized features (``--feature transaction.version=1`` unless the
scenarios declare others, e.g. ``transaction.version=2``). Scenarios that need
a transaction to stay in PrepareCommit/PrepareAbort use "held" topics: their
partitions are placed on a second, broker-only node 2 that is stopped once they
exist, so the coordinator (on node 1) cannot deliver markers to them, exactly
the state minikafka reaches with ``MINIKAFKA_FAULT_HOLD_MARKERS``. Node 2 is
started only after the internal topics exist, so every coordinator partition
lives on node 1.
"""
from __future__ import annotations

import base64
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from minikafka.admin.wire import WireClient

from .dsl import (NAMED_HOST, NAMED_LISTENER, SASL_USERS, admin_only, log_dirs_setting, named_listener,
                  sasl_listener_settings, secured, ssl_listener_settings)

REPO_ROOT = Path(__file__).resolve().parents[2]
KAFKA_VERSION = "4.1.0"
DISTRIBUTION = f"kafka_2.13-{KAFKA_VERSION}"
FEATURES = ("transaction.version=1",)   # the default; a cluster may be formatted with others
# What one node needs (the same as ../shared/reference/kafka.sh); every other setting is
# Kafka 4.1's default unless a scenario group overrides it.
BASE_CONFIG = {
    "offsets.topic.replication.factor": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
    "group.initial.rebalance.delay.ms": "0",
}


def reference_dir() -> Path:
    return Path(os.environ.get("REFERENCE_DIR") or REPO_ROOT.parent / "reference").resolve()


def kafka_home() -> Path:
    return reference_dir() / DISTRIBUTION


def unavailable_reason() -> str | None:
    home = kafka_home()
    if not (home / "bin" / "kafka-server-start.sh").exists():
        return (f"no assembled Kafka {KAFKA_VERSION} in {home}: run ../shared/reference/assemble.sh GITDIR "
                f"(see ../shared/reference/README.md) or set REFERENCE_DIR")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        return "no java on PATH (apt-get install openjdk-17-jre-headless)"
    return None


def _free_ports(n: int) -> list[int]:
    import socket
    socks, ports = [], []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


class KafkaNode:
    def __init__(self, cluster: "KafkaCluster", node_id: int, port: int, controller: bool):
        self.cluster = cluster
        self.node_id = node_id
        self.port = port
        self.controller = controller
        self.dir = cluster.root / f"node{node_id}"
        self.data = self.dir / "data"
        self.logs = self.dir / "logs"
        self.conf = self.dir / "server.properties"
        self.proc: subprocess.Popen | None = None

    def write_config(self) -> None:
        c = self.cluster
        cfg = dict(BASE_CONFIG)
        cfg.update({
            "node.id": str(self.node_id),
            "controller.quorum.bootstrap.servers": f"127.0.0.1:{c.controller_port}",
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "inter.broker.listener.name": "PLAINTEXT",
            "log.dirs": str(self.data),
        })
        if self.controller:
            cfg["process.roles"] = "broker,controller"
            cfg["listeners"] = f"PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{c.controller_port}"
            if c.sasl_port is not None:  # a secured scenario group (dsl.SECURED)
                cfg["listeners"] += f",SASL_PLAINTEXT://127.0.0.1:{c.sasl_port}"
                cfg["listener.security.protocol.map"] += ",SASL_PLAINTEXT:SASL_PLAINTEXT"
                cfg.update(sasl_listener_settings(c.sasl_port))
                cfg["listeners"] += f",SSL://127.0.0.1:{c.ssl_port}"
                cfg["listener.security.protocol.map"] += ",SSL:SSL"
                cfg.update(ssl_listener_settings())
                if admin_only(c.overrides):
                    # only User:admin is a super user: the node's own requests (to its controller,
                    # transaction markers) authenticate as admin, as ../shared/reference/kafka.sh does
                    plain = "org.apache.kafka.common.security.plain.PlainLoginModule required"
                    users = " ".join(f'user_{u}="{p}"' for u, p in SASL_USERS.items())
                    admin = f'username="admin" password="{SASL_USERS["admin"]}"'
                    cfg["listener.security.protocol.map"] = cfg["listener.security.protocol.map"].replace(
                        "CONTROLLER:PLAINTEXT", "CONTROLLER:SASL_PLAINTEXT")
                    cfg.update({"sasl.mechanism.controller.protocol": "PLAIN",
                                "listener.name.controller.sasl.enabled.mechanisms": "PLAIN",
                                "listener.name.controller.plain.sasl.jaas.config":
                                    f'{plain} {admin} user_admin="{SASL_USERS["admin"]}";',
                                "inter.broker.listener.name": "SASL_PLAINTEXT",
                                "sasl.mechanism.inter.broker.protocol": "PLAIN",
                                "listener.name.sasl_plaintext.plain.sasl.jaas.config": f"{plain} {admin} {users};"})
            cfg["advertised.listeners"] = cfg["listeners"]
            if c.named_port is not None:  # a named listener, advertised with another host (dsl.NAMED_LISTENERS)
                cfg["listeners"] += f",{NAMED_LISTENER}://127.0.0.1:{c.named_port}"
                cfg["advertised.listeners"] += f",{NAMED_LISTENER}://{NAMED_HOST}:{c.named_port}"
        else:
            cfg["process.roles"] = "broker"
            cfg["listeners"] = cfg["advertised.listeners"] = f"PLAINTEXT://127.0.0.1:{self.port}"
        cfg.update(c.overrides)
        if "log.dirs" in c.overrides:   # dsl.TWO_LOG_DIRS: dirs inside this node's data dir
            cfg["log.dirs"] = log_dirs_setting(c.overrides, self.data)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.conf.write_text("".join(f"{k}={v}\n" for k, v in cfg.items()))

    def format(self) -> None:
        self.write_config()
        cmd = [str(kafka_home() / "bin" / "kafka-storage.sh"), "format", "--config", str(self.conf),
               "--cluster-id", self.cluster.cluster_id]
        if self.controller:
            cmd.append("--standalone")
            for f in self.cluster.features:
                cmd += ["--feature", f]
        else:
            cmd.append("--no-initial-controllers")
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        if out.returncode != 0:
            raise RuntimeError(f"kafka-storage.sh format failed for node {self.node_id}:\n{out.stdout}{out.stderr}")

    def start(self, timeout: float = 120) -> None:
        self.logs.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ, LOG_DIR=str(self.logs),
                   KAFKA_HEAP_OPTS=os.environ.get("KAFKA_HEAP_OPTS", "-Xmx768M -Xms768M"))
        with open(self.logs / "kafka.out", "ab") as out:
            self.proc = subprocess.Popen([str(kafka_home() / "bin" / "kafka-server-start.sh"), str(self.conf)],
                                         cwd=self.logs, env=env, stdin=subprocess.DEVNULL, stdout=out,
                                         stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + timeout
        while not self.registered():
            if self.proc.poll() is not None:
                raise RuntimeError(f"Kafka node {self.node_id} exited during start-up; see {self.logs}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"Kafka node {self.node_id} not ready after {timeout}s; see {self.logs}")
            time.sleep(0.2)

    def registered(self) -> bool:
        """The node is listed by a Metadata request to itself (KRaft lists it once unfenced)."""
        try:
            with WireClient("127.0.0.1", self.port, timeout=5) as c:
                m = c.request(3, 9, {"topics": [], "allow_auto_topic_creation": False,
                                     "include_topic_authorized_operations": False})
            return any(b.node_id == self.node_id for b in m.brokers)
        except (OSError, ConnectionError):
            return False

    def await_epoch_truncations_written(self, timeout: float = 60) -> None:
        """Wait until every partition's leader-epoch-checkpoint file names no offset below the
        partition's log start offset. Kafka truncates a leader epoch cache from its start
        (DeleteRecords, retention) in memory and writes the file later on its scheduler
        (LeaderEpochFileCache.truncateFromStartAsyncFlush), so a kill -9 right after would race
        that write: after the restart ListOffsets(earliest) names the first batch's epoch when
        the old file survived, -1 when the truncated one did. The golden files hold the latter."""
        deadline = time.monotonic() + timeout
        while True:
            pending = self._untruncated_epoch_files()
            if not pending:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"Kafka node {self.node_id}: leader-epoch-checkpoint of {', '.join(pending)} "
                                   f"still names offsets below the log start offset after {timeout:.0f} s")
            time.sleep(0.1)

    def _untruncated_epoch_files(self) -> list[str]:
        first: dict[tuple[str, int], int] = {}   # (topic, partition) -> lowest start offset in its file
        for f in self.data.glob("**/leader-epoch-checkpoint"):
            m = re.fullmatch(r"(.+)-(\d+)", f.parent.name)
            if m is None or m.group(1).startswith("__cluster_metadata"):
                continue
            lines = f.read_text().split("\n")[2:]   # version, count, then "epoch start_offset" lines
            offsets = [int(line.split()[1]) for line in lines if line.strip()]
            if offsets:
                first[(m.group(1), int(m.group(2)))] = min(offsets)
        if not first:
            return []
        topics: dict[str, list[int]] = {}
        for t, p in first:
            topics.setdefault(t, []).append(p)
        with WireClient("127.0.0.1", self.port) as c:
            answer = c.request(2, 7, {"replica_id": -1, "isolation_level": 0, "topics": [
                {"name": t, "partitions": [{"partition_index": p, "timestamp": -2, "current_leader_epoch": -1}
                                           for p in ps]} for t, ps in topics.items()]})
        return [f"{t.name}-{p.partition_index}" for t in answer.topics for p in t.partitions
                if p.error_code == 0 and first.get((t.name, p.partition_index), p.offset) < p.offset]

    def stop(self, kill: bool = False, timeout: float = 60) -> None:
        if self.proc is None or self.proc.poll() is not None:
            self.proc = None
            return
        try:
            os.killpg(self.proc.pid, signal.SIGKILL if kill else signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)
        self.proc = None


class KafkaCluster:
    """Node 1 (broker+controller) always; node 2 (broker) when ``held_topics`` is wanted."""

    def __init__(self, overrides: dict[str, str] | None = None, with_second_broker: bool = False,
                 features: tuple[str, ...] = FEATURES):
        self.root = Path(tempfile.mkdtemp(prefix="minikafka-conformance-kafka-"))
        self.overrides = dict(overrides or {})
        self.features = tuple(features)   # "name=level", passed to kafka-storage.sh format --feature
        self.cluster_id = base64.urlsafe_b64encode(b"minikafka-confrm").decode().rstrip("=")
        p1, self.controller_port, p2, p3, p4, p5 = _free_ports(6)
        self.sasl_port = p3 if secured(self.overrides) else None
        self.ssl_port = p4 if secured(self.overrides) else None
        self.named_port = p5 if named_listener(self.overrides) else None
        self.node1 = KafkaNode(self, 1, p1, controller=True)
        self.node2 = KafkaNode(self, 2, p2, controller=False) if with_second_broker else None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.node1.port}"

    @property
    def sasl_bootstrap(self) -> str | None:
        return None if self.sasl_port is None else f"127.0.0.1:{self.sasl_port}"

    @property
    def ssl_bootstrap(self) -> str | None:
        return None if self.ssl_port is None else f"127.0.0.1:{self.ssl_port}"

    def start(self) -> None:
        self.node1.format()
        self.node1.start()

    def start_second_broker(self) -> None:
        self.node2.format()
        self.node2.start()

    def stop_second_broker(self) -> None:
        self.node2.stop()
        # wait until node 1 no longer lists it: its partitions are then leaderless
        deadline = time.monotonic() + 60
        while True:
            with WireClient("127.0.0.1", self.node1.port) as c:
                m = c.request(3, 9, {"topics": [], "allow_auto_topic_creation": False,
                                     "include_topic_authorized_operations": False})
            if not any(b.node_id == 2 for b in m.brokers):
                return
            if time.monotonic() > deadline:
                raise RuntimeError("node 2 still listed 60 s after it stopped")
            time.sleep(0.2)

    def restart(self, kill: bool) -> None:
        if kill:
            self.node1.await_epoch_truncations_written()
        self.node1.stop(kill=kill)
        self.node1.start(timeout=180)

    def close(self) -> None:
        for n in (self.node2, self.node1):
            if n is not None:
                n.stop(kill=True)
        shutil.rmtree(self.root, ignore_errors=True)
