"""The brokers a benchmark measures: a minikafka subprocess, a private Apache Kafka (for the
ready-time and idle-memory rows), and what both need: readiness probe, RSS, the pid behind a port.

Readiness is the same test for both brokers, the one Kafka's own tooling uses: a Metadata request
(v1, no topics) on the client listener lists a broker. For minikafka that is a few milliseconds
after its ready line; for KRaft Kafka it is the moment the broker is registered and unfenced.
"""
from __future__ import annotations

import base64
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


class BenchError(Exception):
    """A measurement could not be taken; the row it belongs to is lost and the run fails."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def split_hostport(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit():
        raise SystemExit(f"bench: expected HOST:PORT, got {text!r}")
    return host, int(port)


def _recvn(s: socket.socket, n: int) -> bytes:
    b = b""
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c:
            raise ConnectionError("closed")
        b += c
    return b


def metadata_lists_broker(host: str, port: int, timeout: float = 2.0) -> bool:
    """One Metadata v1 request with no topics; True if the answer lists at least one broker."""
    with socket.create_connection((host, port), timeout=timeout) as s:
        s.settimeout(timeout)
        cid = b"bench"
        req = struct.pack(">hhih", 3, 1, 7, len(cid)) + cid + struct.pack(">i", 0)
        s.sendall(struct.pack(">i", len(req)) + req)
        r = _recvn(s, struct.unpack(">i", _recvn(s, 4))[0])
    (n,) = struct.unpack_from(">i", r, 4)
    return n > 0


def wait_ready(host: str, port: int, proc: subprocess.Popen, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            raise BenchError(f"{what} exited during start-up (exit code {proc.returncode})")
        try:
            if metadata_lists_broker(host, port):
                return
        except (OSError, struct.error):
            pass
        if time.monotonic() > deadline:
            raise BenchError(f"{what} not ready after {timeout:.0f} s")
        time.sleep(0.002)


def rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError as e:
        raise BenchError(f"cannot read the RSS of pid {pid}: {e}") from None
    raise BenchError(f"pid {pid} has no VmRSS (exited?)")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process (all its threads) has used so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def listener_pid(port: int) -> int | None:
    """The pid of the process that listens on 127.0.0.1/0.0.0.0 `port` (Linux /proc), or None."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f)
                for line in f:
                    parts = line.split()
                    if parts[3] == "0A" and int(parts[1].rsplit(":", 1)[1], 16) == port:
                        inodes.add(parts[9])
        except OSError:
            continue
    if not inodes:
        return None
    wanted = {f"socket:[{i}]" for i in inodes}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                if os.readlink(f"/proc/{pid}/fd/{fd}") in wanted:
                    return int(pid)
        except OSError:
            continue
    return None


def nice_of(pid: int) -> int:
    return os.getpriority(os.PRIO_PROCESS, pid)


def _at_nice(nice: int | None):
    """preexec_fn for a broker subprocess: run it at `nice` (the reference broker's niceness), not
    the bench's own: `nice -n 10 bench/throughput.py` must slow the clients of both brokers, never
    one broker. Lowering niceness needs root (CAP_SYS_NICE); without it the start fails.
    None when the bench already runs at `nice` (the child inherits it): with a preexec_fn Popen
    forks the bench, whose memory after the throughput rows is hundreds of MB, instead of
    starting the child with vfork, and that copy was counted in the broker's ready time."""
    if nice is None or nice == os.getpriority(os.PRIO_PROCESS, 0):
        return None

    def set_nice():
        os.setpriority(os.PRIO_PROCESS, 0, nice)
    return set_nice


def _stop(proc: subprocess.Popen, timeout: float) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def _await_ready(broker, t0: float, timeout: float, what: str) -> None:
    """Wait until a broker just started (``broker.proc`` at ``t0``) answers Metadata on
    ``broker.port``; then record its ready time, the CPU used by then, pid and bootstrap.
    Closes it if it does not get there."""
    try:
        wait_ready("127.0.0.1", broker.port, broker.proc, timeout, what)
    except BenchError:
        broker.close()
        raise
    broker.ready_s = time.perf_counter() - t0
    broker.ready_cpu_s = cpu_seconds(broker.proc.pid)  # start-up work, whatever the machine's load
    broker.pid = broker.proc.pid
    broker.bootstrap = f"127.0.0.1:{broker.port}"


class Minikafka:
    """`python -m minikafka` on a free port with a fresh data dir (or `data_dir`, kept)."""

    name = "minikafka"

    def __init__(self, overrides: list[str] = (), data_dir: str | None = None, timeout: float = 60,
                 nice: int | None = None):
        self.tmp = None if data_dir else tempfile.mkdtemp(prefix="minikafka-bench-")
        self.data_dir = data_dir or f"{self.tmp}/data"
        self.port = free_port()
        cmd = [sys.executable, "-m", "minikafka", "--override", f"listeners=PLAINTEXT://127.0.0.1:{self.port}",
               "--override", f"log.dirs={self.data_dir}", "--log-level", "WARNING"]
        for o in overrides:
            cmd += ["--override", o]
        self.log_path = f"{self.data_dir}.log"
        os.makedirs(os.path.dirname(self.log_path), exist_ok=True)
        self.log = open(self.log_path, "ab")
        t0 = time.perf_counter()
        try:
            self.proc = subprocess.Popen(cmd, cwd=ROOT, stdout=self.log, stderr=subprocess.STDOUT,
                                         preexec_fn=_at_nice(nice))
        except (subprocess.SubprocessError, OSError) as e:
            raise BenchError(f"cannot start minikafka at nice {nice}: {e}") from None
        _await_ready(self, t0, timeout, "minikafka")

    def kill9(self) -> None:
        self.proc.kill()
        self.proc.wait(10)

    def close(self, keep_data: bool = False) -> None:
        _stop(self.proc, 30)
        self.log.close()
        if self.tmp and not keep_data:
            shutil.rmtree(self.tmp, ignore_errors=True)


def kafka_home(explicit: str | None) -> Path | None:
    """The Kafka 4.1 distribution: --reference-home, else $REFERENCE_DIR/kafka_2.13-4.1.0, else
    ../reference/kafka_2.13-4.1.0 beside the checkout (../shared/reference/assemble.sh puts it there)."""
    cands = [explicit] if explicit else [
        os.environ.get("REFERENCE_DIR") and f"{os.environ['REFERENCE_DIR']}/kafka_2.13-4.1.0",
        str(ROOT.parent / "reference" / "kafka_2.13-4.1.0")]
    for c in cands:
        if c and (Path(c) / "bin" / "kafka-server-start.sh").exists():
            return Path(c)
    return None


class PrivateKafka:
    """A throw-away single-node KRaft Apache Kafka on free ports with an empty data dir, configured
    as ../shared/reference/kafka.sh configures the shared one (transaction.version=1, 1 GB heap).
    Formatting the storage (kafka-storage.sh, its own JVM) is done before the clock starts: it is
    an install step in Kafka, so ready_s is kafka-server-start.sh to Metadata answered."""

    name = "kafka"

    def __init__(self, home: Path, timeout: float = 90, nice: int | None = None):
        self.tmp = tempfile.mkdtemp(prefix="kafka-bench-")
        self.port, cport = free_port(), free_port()
        conf = Path(self.tmp) / "server.properties"
        conf.write_text("\n".join([
            "process.roles=broker,controller", "node.id=1",
            f"controller.quorum.bootstrap.servers=127.0.0.1:{cport}", "controller.listener.names=CONTROLLER",
            f"log.dirs={self.tmp}/kraft", "offsets.topic.replication.factor=1",
            "transaction.state.log.replication.factor=1", "transaction.state.log.min.isr=1",
            "share.coordinator.state.topic.replication.factor=1", "share.coordinator.state.topic.min.isr=1",
            "group.initial.rebalance.delay.ms=0",
            f"listeners=PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{cport}",
            f"advertised.listeners=PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{cport}",
            "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "inter.broker.listener.name=PLAINTEXT", ""]))
        env = dict(os.environ, LOG_DIR=f"{self.tmp}/logs",
                   KAFKA_HEAP_OPTS=os.environ.get("KAFKA_HEAP_OPTS", "-Xmx1G -Xms1G"))
        cid = base64.urlsafe_b64encode(b"minikafka-bench-").decode().rstrip("=")  # any 16 bytes
        fmt = subprocess.run([str(home / "bin" / "kafka-storage.sh"), "format", "--standalone", "--cluster-id", cid,
                              "--config", str(conf), "--feature", "transaction.version=1"],
                             env=env, capture_output=True, text=True)
        if fmt.returncode != 0:
            shutil.rmtree(self.tmp, ignore_errors=True)
            raise BenchError(f"kafka-storage.sh format failed: {fmt.stdout[-500:]}{fmt.stderr[-500:]}")
        self.log = open(f"{self.tmp}/kafka.out", "ab")
        t0 = time.perf_counter()
        # kafka-server-start.sh execs kafka-run-class.sh, which execs java: the pid is the JVM's
        try:
            self.proc = subprocess.Popen([str(home / "bin" / "kafka-server-start.sh"), str(conf)], env=env,
                                         cwd=self.tmp, stdout=self.log, stderr=subprocess.STDOUT,
                                         preexec_fn=_at_nice(nice))
        except (subprocess.SubprocessError, OSError) as e:
            shutil.rmtree(self.tmp, ignore_errors=True)
            raise BenchError(f"cannot start Kafka at nice {nice}: {e}") from None
        _await_ready(self, t0, timeout, "private Kafka")

    def close(self) -> None:
        _stop(self.proc, 60)
        self.log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)


class Running:
    """A broker somebody else runs (the shared reference Kafka, or --bootstrap): never started or
    stopped here; its pid, for RSS, is found from its listening port."""

    def __init__(self, bootstrap: str, name: str):
        self.bootstrap = bootstrap
        self.name = name
        self.port = split_hostport(bootstrap)[1]
        self.pid = listener_pid(self.port)

    def close(self) -> None:
        pass
