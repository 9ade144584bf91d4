"""minikafka in your test suite: the ``minikafka_broker`` pytest fixture, and the broker
subprocess behind it.

Installing minikafka registers this module as a pytest plugin (entry point ``pytest11``), so
any test can ask for a real broker::

    from kafka import KafkaProducer

    def test_send(minikafka_broker):
        producer = KafkaProducer(bootstrap_servers=minikafka_broker.bootstrap)
        producer.send("orders", b"one").get(10)
        assert [r.value for r in minikafka_broker.records("orders")] == [b"one"]

``minikafka_broker`` is a broker subprocess (``python -m minikafka``) listening on a free
127.0.0.1 port with its own temporary data dir, started before the test and stopped after it:

* ``bootstrap``      ``"127.0.0.1:PORT"``, for any Kafka client
* ``kill9()``        SIGKILL, as a crash: what was acknowledged survives, nothing else is done
* ``restart()``      start it again on the same port and data (after ``kill9()`` or a fault;
                     if it is running, it is first stopped cleanly)
* ``fault(point)``   restart it with ``MINIKAFKA_FAULT=point`` armed: the broker exits (as
                     ``kill -9``) at that point of the next EndTxn; the test then calls
                     ``wait_exit()`` if it needs the crash to have happened, and ``restart()``,
                     which brings the broker back without the fault. Points: ``FAULT_POINTS``
                     (``txn.before_prepare``, ``txn.after_prepare``, ``txn.after_first_marker``,
                     ``txn.after_markers``, and the swap of a partition moved between log dirs:
                     ``logdir.before_commit`` ... ``logdir.after_swap``; see docs/operations.md, "Fault
                     injection")
* ``records(topic, isolation="read_committed")``  every record of every partition, in
                     (partition, offset) order, as a consumer with that isolation level would
                     see it now: :class:`Record` ``(partition, offset, key, value, headers)``,
                     read with plain Fetch requests up to the last stable offset (read_committed)
                     or the high watermark (``"read_uncommitted"``)
* ``console(*args)`` ``minikafka console`` on this broker (needs the ``console`` extra), as a
                     :class:`ConsoleProcess` on a free port: ``url`` for a browser or an HTTP
                     client; stopped with the broker (or by ``close()``)

Options (command line, or the ini option / environment variable named):

* ``--minikafka-scope=function|session`` (ini ``minikafka_scope``; default ``function``): one
  broker per test, or one for the whole session. A session broker that a test leaves
  stopped, crashed or with a fault armed is started again, clean, after that test.
* ``--minikafka-bootstrap=HOST:PORT`` (env ``MINIKAFKA_BOOTSTRAP``): run the same tests
  against an existing Kafka instead. ``bootstrap`` and ``records()`` work unchanged (they are
  plain Kafka protocol); ``kill9()``, ``restart()``, ``fault()`` and ``wait_exit()`` skip the
  test, naming the reason. Use unique topic names and transactional ids there.

The broker log (stdout and stderr of every run) is ``<data dir>.broker.log``; its tail is
attached to the report of a failed test. ``pytest -p no:minikafka.testing`` turns the plugin off.

:class:`BrokerProcess` is usable without pytest's fixture too (``with BrokerProcess(path) as
b: ...``); the project's own test harness builds on it.
"""
from __future__ import annotations

import atexit
import os
import re
import signal
import socket
import subprocess
import sys
import time
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, NamedTuple

import pytest

import minikafka

if TYPE_CHECKING:
    from minikafka.admin.wire import WireClient

# pytest loads this module in every run of a venv holding minikafka: the Kafka-protocol
# modules (minikafka.admin.wire, minikafka.protocol) are imported when first used

# the console's one ready line: "minikafka console ready: http://127.0.0.1:PORT/"
CONSOLE_READY_RE = re.compile(r"minikafka console ready: (http://\S+/)")
# the broker's one ready line: "minikafka ready: node 1 listening on PLAINTEXT://127.0.0.1:PORT (...)"
READY_RE = re.compile(r"listening on PLAINTEXT://127\.0\.0\.1:(\d+)")
FAULT_POINTS = ("txn.before_prepare", "txn.after_prepare", "txn.after_first_marker", "txn.after_markers",
                "logdir.before_commit", "logdir.after_commit", "logdir.after_future_rename", "logdir.after_swap",
                "append.after_write")
START_TIMEOUT = 15.0
ISOLATION = {"read_uncommitted": 0, "read_committed": 1}


class BrokerError(AssertionError):
    """The broker misbehaved (did not start, did not stop, died)."""


class Record(NamedTuple):
    """One record as a consumer sees it; ``headers`` is a list of (str, bytes | None)."""

    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]


# --------------------------------------------------------------------------
# small utilities
# --------------------------------------------------------------------------

BIND_FAILED = "Address already in use"  # the broker's one line when its listener cannot bind


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(predicate: Callable[[], Any], timeout: float, interval: float = 0.05,
               message: str | Callable[[], str] | None = None) -> Any:
    """Poll ``predicate`` until it returns something truthy; return that value.

    Raises ``TimeoutError`` (an ``OSError``, so callers may catch it) after ``timeout``
    seconds. ``message`` may be a callable, evaluated lazily so it can include fresh state
    such as a broker log tail. Exceptions raised by the predicate propagate.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            text = message() if callable(message) else message
            raise TimeoutError(f"condition not met within {timeout:.1f}s"
                               + (f": {text}" if text else ""))
        time.sleep(interval)


def tail(text: str, lines: int = 60) -> str:
    return "\n".join(text.splitlines()[-lines:])


# --------------------------------------------------------------------------
# the broker subprocess
# --------------------------------------------------------------------------

_LIVE: "weakref.WeakSet[BrokerProcess]" = weakref.WeakSet()


@atexit.register
def _kill_leftovers() -> None:  # last line of defence against stray brokers
    for b in list(_LIVE):
        try:
            b.close()
        except Exception:
            pass


class BrokerProcess:
    """One broker subprocess (``python -m minikafka``) with its own data dir and a fixed port.

    The port is chosen once (``free_port``) and reused by every ``start``, so clients
    reconnect after ``restart``/``kill9``. The subprocess runs the same minikafka as this
    process imports (a checkout's own code when run from a checkout).
    """

    def __init__(self, data_dir: str | os.PathLike, port: int | None = None,
                 overrides: Mapping[str, Any] | None = None,
                 env: Mapping[str, str] | None = None,
                 python: str | None = None, name: str | None = None,
                 features: Mapping[str, int] | None = None):
        self.data_dir = Path(data_dir).resolve()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.port = port or free_port()
        self._port_is_ours = port is None  # free_port() chose it: another may be chosen
        self.overrides = dict(overrides or {})
        self.extra_env = dict(env or {})
        # finalized feature levels for a new data dir (`minikafka format --feature`), e.g.
        # {"transaction.version": 1}; None: the defaults of a broker's first start
        self.features = dict(features or {})
        self.python = python or sys.executable
        self.name = name or self.data_dir.name
        self.log_path = self.data_dir.parent / f"{self.data_dir.name}.broker.log"
        self.proc: subprocess.Popen | None = None
        self.starts = 0
        self._run_log_offset = 0  # where the current run's output begins
        self.last_exit: int | None = None
        self.consoles: list[ConsoleProcess] = []
        _LIVE.add(self)

    # -- properties ---------------------------------------------------------
    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def first_log_dir(self) -> Path:
        """The first of ``log.dirs`` (the data dir unless the overrides name others): where
        the broker keeps meta.properties, its features and its topic metadata."""
        dirs = str(self.overrides.get("log.dirs", "")).split(",")
        return Path(dirs[0]).resolve() if dirs[0] else self.data_dir

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    @property
    def fault_point(self) -> str | None:
        """The armed ``MINIKAFKA_FAULT`` point, if any."""
        return self.extra_env.get("MINIKAFKA_FAULT")

    def command(self) -> list[str]:
        cmd = [self.python, "-m", "minikafka",
               "--override", f"listeners=PLAINTEXT://127.0.0.1:{self.port}",
               "--override", f"log.dirs={self.data_dir}"]
        for k, v in self.overrides.items():
            if isinstance(v, bool):
                v = "true" if v else "false"
            cmd += ["--override", f"{k}={v}"]
        return cmd

    def environment(self) -> dict[str, str]:
        env = _checkout_environment()
        env["PYTHONUNBUFFERED"] = "1"
        env.update(self.extra_env)
        return env

    # -- logs ----------------------------------------------------------------
    def log_text(self, current_run_only: bool = False) -> str:
        """Everything the broker wrote (all runs, or only the current one)."""
        try:
            with open(self.log_path, "rb") as f:
                if current_run_only:
                    f.seek(self._run_log_offset)
                return f.read().decode("utf-8", "replace")
        except FileNotFoundError:
            return ""

    def log_tail(self, lines: int = 60) -> str:
        return tail(self.log_text(), lines)

    def describe(self, lines: int = 60) -> str:
        """A block for assertion messages: state plus the log tail."""
        state = ("running" if self.running else f"not running (last exit {self.last_exit})")
        return (f"\n--- broker {self.name} on {self.bootstrap}, {state}, log {self.log_path}"
                f" (last {lines} lines) ---\n{self.log_tail(lines)}\n--- end of broker log ---")

    def _mark(self, text: str) -> None:
        with open(self.log_path, "ab") as f:
            f.write(f"\n=== {text} at {time.strftime('%H:%M:%S')} ===\n".encode())

    # -- lifecycle -----------------------------------------------------------
    def start(self, timeout: float = START_TIMEOUT) -> "BrokerProcess":
        """Start and wait for the ready line (raises ``BrokerError`` if it exits first).

        free_port() only finds a port that was free a moment ago: if another process took it
        before the broker's first start could bind it, that start is made again on another
        free port (a restart keeps its port: clients know it)."""
        for attempt in range(3):
            try:
                return self._start(timeout)
            except BrokerError:
                if not (self._port_is_ours and self.starts == 1 and attempt < 2
                        and BIND_FAILED in self.log_text(current_run_only=True)):
                    raise
                self.starts = 0
                self.port = free_port()
        raise AssertionError("unreachable")

    def _start(self, timeout: float) -> "BrokerProcess":
        if self.running:
            raise BrokerError(f"broker {self.name} already running (pid {self.pid})")
        self._reap()  # a run that ended by itself (a fault point): keep its exit code
        fault = f" (MINIKAFKA_FAULT={self.fault_point})" if self.fault_point else ""
        if self.features and not (self.first_log_dir / "meta.properties").exists():
            self._format()
        self._mark(f"start #{self.starts + 1}{fault}: {' '.join(self.command())}")
        self._run_log_offset = self.log_path.stat().st_size
        with open(self.log_path, "ab") as logf:
            self.proc = subprocess.Popen(
                self.command(), cwd=self.data_dir.parent, env=self.environment(),
                stdin=subprocess.DEVNULL, stdout=logf, stderr=subprocess.STDOUT,
                start_new_session=True)
        self.starts += 1
        try:
            wait_until(self._ready, timeout, interval=0.01,
                       message=lambda: f"broker {self.name} printed no ready line" + self.describe())
        except BaseException:
            self._reap()
            raise
        return self

    def _format(self) -> None:
        """`minikafka format` the data dir with ``features`` (before its first start)."""
        cmd = [self.python, "-m", "minikafka", "format", "--override", f"log.dirs={self.data_dir}"]
        for k, v in self.overrides.items():
            if k in ("node.id", "broker.id", "log.dirs"):
                cmd += ["--override", f"{k}={v}"]
        for k, v in self.features.items():
            cmd += ["--feature", f"{k}={v}"]
        self._mark(f"format: {' '.join(cmd)}")
        with open(self.log_path, "ab") as logf:
            rc = subprocess.run(cmd, cwd=self.data_dir.parent, env=self.environment(), stdin=subprocess.DEVNULL,
                                stdout=logf, stderr=subprocess.STDOUT, timeout=60).returncode
        if rc != 0:
            raise BrokerError(f"minikafka format of {self.data_dir} failed (exit {rc})" + self.describe())

    def _ready(self) -> bool:
        m = READY_RE.search(self.log_text(current_run_only=True))
        if m:
            port = int(m.group(1))
            if port != self.port:
                raise BrokerError(f"broker listens on {port}, expected {self.port}" + self.describe())
            return True
        if self.proc.poll() is not None:
            self.last_exit = self.proc.returncode
            raise BrokerError(f"broker {self.name} exited with code {self.last_exit}"
                              f" before it was ready" + self.describe())
        return False

    def stop(self, timeout: float = 10, expect_code: int | None = 0) -> float:
        """SIGTERM and wait; returns the seconds it took to exit.

        Raises ``BrokerError`` if it does not exit in ``timeout`` (it is then killed) or exits
        with a code other than ``expect_code`` (None: any).
        """
        if not self.running:
            raise BrokerError(f"stop(): broker {self.name} is not running"
                              f" (last exit {self.last_exit})" + self.describe())
        self._mark("SIGTERM")
        t0 = time.monotonic()
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self._reap()
            raise BrokerError(f"broker {self.name} did not exit within {timeout}s of SIGTERM"
                              + self.describe()) from None
        elapsed = time.monotonic() - t0
        self.last_exit = self.proc.returncode
        self.proc = None
        if expect_code is not None and self.last_exit != expect_code:
            raise BrokerError(f"broker {self.name} exited with code {self.last_exit}"
                              f" after SIGTERM (expected {expect_code})" + self.describe())
        return elapsed

    def wait_exit(self, timeout: float = 10) -> int:
        """Wait for the broker to exit by itself (a crash, a fault point), reap it and return
        its exit code; ``TimeoutError`` if it is still running after ``timeout`` seconds."""
        if self.proc is None:
            if self.last_exit is not None:
                return self.last_exit
            raise BrokerError(f"wait_exit(): broker {self.name} was not started" + self.describe())
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            raise TimeoutError(f"broker {self.name} still running after {timeout:.1f}s"
                               + self.describe()) from None
        self._reap()
        return self.last_exit

    def kill9(self) -> None:
        """SIGKILL (a crash) and reap."""
        if not self.running:
            raise BrokerError(f"kill9(): broker {self.name} is not running" + self.describe())
        self._mark("SIGKILL")
        self._reap()

    def restart(self, timeout: float = START_TIMEOUT, kill: bool = False) -> "BrokerProcess":
        """Start again on the same port and data, without a fault armed. A running broker is
        first stopped (SIGTERM, or SIGKILL if ``kill``); one that has exited is reaped."""
        self.extra_env.pop("MINIKAFKA_FAULT", None)
        if self.running:
            self.kill9() if kill else self.stop()
        return self.start(timeout)

    def fault(self, point: str, timeout: float = START_TIMEOUT) -> "BrokerProcess":
        """Restart with ``MINIKAFKA_FAULT=point``: the broker exits at that point of the next
        EndTxn (or log dir swap). Then ``wait_exit()`` (if the crash must have happened) and
        ``restart()``."""
        if point not in FAULT_POINTS:
            raise ValueError(f"unknown fault point {point!r}: one of {', '.join(FAULT_POINTS)}")
        if self.running:
            self.stop()
        self.extra_env["MINIKAFKA_FAULT"] = point
        return self.start(timeout)

    def records(self, topic: str, isolation: str = "read_committed") -> list[Record]:
        return read_records(self.bootstrap, topic, isolation)

    def console(self, *args: str, timeout: float = START_TIMEOUT) -> "ConsoleProcess":
        """``minikafka console`` reading this broker, started (``args``: more options, e.g.
        ``"--read-only"``); stopped when the broker is closed."""
        c = ConsoleProcess(self.bootstrap, args, log_path=self.data_dir.parent / f"{self.data_dir.name}.console.log",
                           python=self.python)
        self.consoles.append(c)
        return c.start(timeout)

    def _reap(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                self.proc.kill()
            self.proc.wait(10)
        self.last_exit = self.proc.returncode
        self.proc = None

    def close(self) -> None:
        """Make sure nothing is left running (used by fixtures, never fails)."""
        for c in self.consoles:
            c.close()
        if self.running:
            try:
                self.proc.send_signal(signal.SIGTERM)
                self.proc.wait(5)
            except Exception:
                pass
        self._reap()

    def __enter__(self) -> "BrokerProcess":
        if not self.running:
            self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name} {self.bootstrap} pid={self.pid}>"


class ExternalKafka:
    """``minikafka_broker`` under ``--minikafka-bootstrap``: an existing Kafka, which the test
    can read but not crash."""

    def __init__(self, bootstrap: str):
        self.bootstrap = bootstrap
        self.consoles: list[ConsoleProcess] = []

    def _skip(self, what: str):
        pytest.skip(f"{what}() needs the minikafka broker; --minikafka-bootstrap points at"
                    f" an external Kafka ({self.bootstrap})")

    def kill9(self) -> None:
        self._skip("kill9")

    def restart(self, *args, **kwargs) -> None:
        self._skip("restart")

    def fault(self, point: str, *args, **kwargs) -> None:
        self._skip("fault")

    def wait_exit(self, *args, **kwargs) -> None:
        self._skip("wait_exit")

    def records(self, topic: str, isolation: str = "read_committed") -> list[Record]:
        return read_records(self.bootstrap, topic, isolation)

    def console(self, *args: str, timeout: float = START_TIMEOUT) -> "ConsoleProcess":
        import tempfile
        c = ConsoleProcess(self.bootstrap, args, log_path=Path(tempfile.mkdtemp(prefix="minikafka-console-")) / "console.log")
        self.consoles.append(c)
        return c.start(timeout)

    def close(self) -> None:
        for c in self.consoles:
            c.close()

    def __repr__(self) -> str:
        return f"<ExternalKafka {self.bootstrap}>"


class ConsoleProcess:
    """``minikafka console --bootstrap-server BOOTSTRAP --listen 127.0.0.1:0`` as a subprocess:
    it picks a free port itself and names it in its ready line (``url``). Its output goes to
    ``log_path``."""

    def __init__(self, bootstrap: str, args: tuple[str, ...] | list[str] = (), log_path: str | os.PathLike | None = None,
                 python: str | None = None, env: Mapping[str, str] | None = None):
        self.bootstrap = bootstrap
        self.args = list(args)
        self.log_path = Path(log_path) if log_path else Path(os.devnull)
        self.python = python or sys.executable
        self.env = dict(env) if env is not None else _checkout_environment()
        self.proc: subprocess.Popen | None = None
        self.url: str | None = None
        self._offset = 0
        _LIVE_CONSOLES.add(self)

    def command(self) -> list[str]:
        return [self.python, "-m", "minikafka", "console", "--bootstrap-server", self.bootstrap,
                "--listen", "127.0.0.1:0", *self.args]

    def log_text(self) -> str:
        try:
            with open(self.log_path, "rb") as f:
                f.seek(self._offset)
                return f.read().decode("utf-8", "replace")
        except FileNotFoundError:
            return ""

    def start(self, timeout: float = START_TIMEOUT) -> "ConsoleProcess":
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        with open(self.log_path, "ab") as logf:
            self.proc = subprocess.Popen(self.command(), env=self.env, stdin=subprocess.DEVNULL, stdout=logf,
                                         stderr=subprocess.STDOUT, start_new_session=True)

        def ready() -> str | None:
            m = CONSOLE_READY_RE.search(self.log_text())
            if m:
                return m.group(1)
            if self.proc.poll() is not None:
                raise BrokerError(f"minikafka console exited with code {self.proc.returncode}:\n"
                                  f"{tail(self.log_text())}")
            return None
        try:
            self.url = wait_until(ready, timeout, interval=0.02,
                                  message=lambda: f"minikafka console printed no ready line:\n{tail(self.log_text())}")
        except BaseException:
            self.close()
            raise
        return self

    def close(self) -> None:
        """SIGTERM, then SIGKILL if it lingers (never fails)."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(5)
            except (ProcessLookupError, PermissionError, subprocess.TimeoutExpired):
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
                self.proc.wait(5)
        self.proc = None

    def __enter__(self) -> "ConsoleProcess":
        return self if self.proc is not None else self.start()

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<ConsoleProcess {self.url} of {self.bootstrap}>"


_LIVE_CONSOLES: "weakref.WeakSet[ConsoleProcess]" = weakref.WeakSet()


@atexit.register
def _kill_leftover_consoles() -> None:
    for c in list(_LIVE_CONSOLES):
        c.close()


def _checkout_environment() -> dict[str, str]:
    """The environment of a subprocess running this minikafka: run from a checkout, the
    checkout's code (its root on PYTHONPATH)."""
    env = dict(os.environ)
    if minikafka.CHECKOUT:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (minikafka.CHECKOUT, env.get("PYTHONPATH")) if p)
    return env


# --------------------------------------------------------------------------
# records(): plain Fetch requests, filtered as a consumer filters them
# --------------------------------------------------------------------------

def read_records(bootstrap: str, topic: str, isolation: str = "read_committed",
                 timeout: float = 10.0) -> list[Record]:
    """Every record of ``topic`` a consumer with ``isolation`` would read now, all partitions,
    in (partition, offset) order: from the log start to the last stable offset
    (read_committed: no open or aborted transaction's record) or the high watermark, without
    control records. Each partition is read from its leader; any Kafka answers this."""
    from minikafka.admin.wire import WireClient
    if isolation not in ISOLATION:
        raise ValueError(f"isolation must be one of {', '.join(ISOLATION)}, not {isolation!r}")
    clients: dict[str, WireClient] = {}

    def client(address: str) -> WireClient:
        if address not in clients:
            clients[address] = WireClient.to(address, timeout=timeout, client_id="minikafka-testing")
        return clients[address]

    try:
        meta = client(bootstrap).request(3, 9, {"topics": [{"name": topic}],
                                                "allow_auto_topic_creation": False,
                                                "include_cluster_authorized_operations": False,
                                                "include_topic_authorized_operations": False})
        brokers = {b.node_id: f"{b.host}:{b.port}" for b in meta.brokers}
        [t] = meta.topics
        if t.error_code:
            raise LookupError(f"records({topic!r}): Metadata error {t.error_code}"
                              f" ({'no such topic' if t.error_code == 3 else 'see Kafka error codes'})")
        out: list[Record] = []
        for p in sorted(t.partitions, key=lambda p: p.partition_index):
            # the bootstrap address reaches the leader if the advertised one does not resolve here
            leader = brokers.get(p.leader_id)
            try:
                c = client(leader) if leader else client(bootstrap)
            except OSError:
                c = client(bootstrap)
            out += _read_partition(c, topic, p.partition_index, ISOLATION[isolation])
        return out
    finally:
        for c in clients.values():
            c.close()


def _fetch(c: "WireClient", topic: str, partition: int, offset: int, isolation: int):
    body = {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 8 << 20,
            "isolation_level": isolation, "session_id": 0, "session_epoch": -1,
            "topics": [{"topic": topic, "partitions": [{
                "partition": partition, "fetch_offset": offset, "partition_max_bytes": 8 << 20,
                "current_leader_epoch": -1, "log_start_offset": -1}]}],
            "forgotten_topics_data": [], "rack_id": ""}
    return c.request(1, 12, body).responses[0].partitions[0]


def _log_start(c: "WireClient", topic: str, partition: int) -> int:
    body = {"replica_id": -1, "isolation_level": 0,
            "topics": [{"name": topic, "partitions": [{"partition_index": partition, "timestamp": -2,
                                                       "current_leader_epoch": -1}]}]}
    p = c.request(2, 7, body).topics[0].partitions[0]
    if p.error_code:
        raise AssertionError(f"ListOffsets {topic}-{partition}: error {p.error_code}")
    return p.offset


def _read_partition(c: "WireClient", topic: str, partition: int, isolation: int) -> list[Record]:
    from minikafka.protocol import records as rec
    offset = _log_start(c, topic, partition)
    first = _fetch(c, topic, partition, offset, isolation)
    if first.error_code:
        raise AssertionError(f"Fetch {topic}-{partition}@{offset}: error {first.error_code}")
    # the end as of now: later writes are not waited for
    end = first.last_stable_offset if isolation == 1 else first.high_watermark
    out: list[Record] = []
    resp = first
    while offset < end:
        progressed = False
        aborted = [(a.first_offset, a.producer_id) for a in (resp.aborted_transactions or [])]
        for h, records, delivered in rec.consumer_view(resp.records or b"", aborted, offset, isolation == 1):
            progressed = True
            fetch_offset, offset = offset, h.last_offset + 1
            if delivered:
                out += [Record(partition, r.offset, r.key, r.value,
                               [(k, None if v is None else bytes(v)) for k, v in r.headers])
                        for r in records if fetch_offset <= r.offset < end]
        if not progressed or offset >= end:
            break
        resp = _fetch(c, topic, partition, offset, isolation)
        if resp.error_code:
            raise AssertionError(f"Fetch {topic}-{partition}@{offset}: error {resp.error_code}")
    return out


# --------------------------------------------------------------------------
# the pytest plugin
# --------------------------------------------------------------------------

def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("minikafka", "minikafka_broker fixture")
    group.addoption("--minikafka-scope", choices=("function", "session"), default=None,
                    help="one broker per test (function, the default) or per session"
                         " (ini: minikafka_scope)")
    group.addoption("--minikafka-bootstrap", metavar="HOST:PORT", default=None,
                    help="point minikafka_broker at this Kafka instead of starting a broker"
                         " (env MINIKAFKA_BOOTSTRAP); kill9/restart/fault then skip")
    parser.addini("minikafka_scope", "minikafka_broker's scope: function (default) or session",
                  default="function")


def _scope(fixture_name: str, config: pytest.Config) -> str:
    scope = config.getoption("minikafka_scope") or config.getini("minikafka_scope") or "function"
    if scope not in ("function", "session"):
        raise pytest.UsageError(f"minikafka_scope must be function or session, not {scope!r}")
    return scope


def _external(config: pytest.Config) -> str | None:
    return config.getoption("minikafka_bootstrap") or os.environ.get("MINIKAFKA_BOOTSTRAP") or None


@pytest.fixture(scope=_scope)
def minikafka_broker(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """A running minikafka broker (free 127.0.0.1 port, temporary data dir), or the Kafka
    named by ``--minikafka-bootstrap``. See :mod:`minikafka.testing`."""
    external = _external(request.config)
    if external:
        from minikafka.admin.wire import WireClient
        try:
            with WireClient.to(external, timeout=10) as c:
                c.request(18, 0, {})
        except OSError as e:
            raise ConnectionError(f"--minikafka-bootstrap {external}: no Kafka answers there ({e})") from None
        kafka = ExternalKafka(external)
        try:
            yield kafka
        finally:
            kafka.close()
        return
    b = BrokerProcess(tmp_path_factory.mktemp("minikafka") / "data", name="minikafka_broker")
    try:
        b.start()
        yield b
    finally:
        b.close()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem) -> None:
    # a session broker leaves each test as it found it: running, no fault armed
    b = getattr(item, "funcargs", {}).get("minikafka_broker")
    if isinstance(b, BrokerProcess) and _scope("minikafka_broker", item.config) == "session" \
            and nextitem is not None and (b.fault_point or not b.running):
        b.restart()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        b = getattr(item, "funcargs", {}).get("minikafka_broker")
        if isinstance(b, BrokerProcess):
            report.sections.append((f"minikafka broker log ({b.log_path})", b.log_tail(80)))
