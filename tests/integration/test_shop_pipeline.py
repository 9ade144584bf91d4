"""Issue 6, acceptance 3: the shop pipeline is exactly-once through crashes.

10,000 purchases go through ``examples/shop`` (kafka-python, transactional
consume-transform-produce with a consumer group) while the service process is
SIGKILLed 3 times and restarted, and the broker is SIGKILLed and restarted
once; the checker then reads invoices and shipments read_committed and finds
exactly one of each per purchase: 10,000 and 10,000, no duplicates, none
missing.

The kills are placed by progress (the group's committed offsets on
``purchases``), not by time.  The purchase generator is itself exactly-once
and restartable (transactions of 100, resumes by re-reading the topic).
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness import REPO_ROOT, tail, wait_until

pytestmark = pytest.mark.slow

N = 10_000
PARTITIONS = 3
GROUP = "shop-service"


class App:
    """One example program as a subprocess, logging to a file."""

    def __init__(self, name: str, args: list[str], log_dir: Path, bootstrap: str):
        self.name, self.args = name, args
        self.log_path = log_dir / f"{name}.log"
        self.env = dict(os.environ, PYTHONUNBUFFERED="1", KAFKA_BOOTSTRAP_SERVERS=bootstrap)
        self.proc: subprocess.Popen | None = None
        self.starts = 0

    def start(self) -> "App":
        self.starts += 1
        with open(self.log_path, "ab") as f:
            f.write(f"\n=== test: start #{self.starts} at {time.strftime('%H:%M:%S')} ===\n".encode())
            self.proc = subprocess.Popen([sys.executable, "-m", *self.args], cwd=REPO_ROOT,
                                         env=self.env, stdin=subprocess.DEVNULL, stdout=f,
                                         stderr=subprocess.STDOUT, start_new_session=True)
        return self

    def kill(self) -> None:
        with open(self.log_path, "ab") as f:
            f.write(f"\n=== test: SIGKILL at {time.strftime('%H:%M:%S')} ===\n".encode())
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def close(self) -> None:
        if self.alive():
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(10)

    def describe(self, lines: int = 40) -> str:
        text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        state = "running" if self.alive() else f"exited {self.proc.returncode if self.proc else None}"
        return f"\n--- {self.name} ({state}), last {lines} lines of {self.log_path} ---\n{tail(text, lines)}"


class Progress:
    """The group's committed offsets on purchases, summed (0 while unknown)."""

    def __init__(self, bootstrap: str):
        self.bootstrap = bootstrap
        self.admin = None

    def __call__(self) -> int:
        from kafka.admin import KafkaAdminClient
        try:
            if self.admin is None:
                self.admin = KafkaAdminClient(bootstrap_servers=self.bootstrap,
                                              request_timeout_ms=5000,
                                              client_id="shop-test-progress")
            if hasattr(self.admin, "list_group_offsets"):  # kafka-python 3
                offsets = self.admin.list_group_offsets(GROUP).get(GROUP, {})
            else:
                offsets = self.admin.list_consumer_group_offsets(GROUP)
        except Exception:  # broker restarting, coordinator loading: ask again later
            self.close()
            return 0
        return sum(o.offset for tp, o in offsets.items()
                   if tp.topic == "purchases" and o.offset > 0)

    def close(self) -> None:
        if self.admin is not None:
            try:
                self.admin.close()
            except Exception:
                pass
            self.admin = None


def test_shop_exactly_once_through_kills(broker_factory, tmp_path):
    from examples.shop.checker import check
    from examples.shop.model import INVOICES, PURCHASES, SHIPMENTS, ensure_topics

    b = broker_factory(overrides={"num.partitions": PARTITIONS})
    ensure_topics(b.bootstrap, {PURCHASES: PARTITIONS, INVOICES: PARTITIONS,
                                SHIPMENTS: PARTITIONS})
    gen = App("purchases", ["examples.shop.purchases", "--count", str(N), "--rate", "1500",
                            "--txn-size", "100"], tmp_path, b.bootstrap)
    svc = App("service", ["examples.shop.service", "--max-poll-records", "100",
                                     "--work-ms", "80", "--txn-call-timeout-s", "10"], tmp_path,
              b.bootstrap)
    apps = [gen, svc]
    progress = Progress(b.bootstrap)

    def context() -> str:
        return "".join(a.describe() for a in apps) + b.describe(40)

    def service_must_live() -> None:
        if not svc.alive():
            raise AssertionError("the shop service exited on its own" + context())

    try:
        gen.start()
        svc.start()
        t0 = time.monotonic()
        # SIGKILL the service at three points of progress, restarting it at once:
        # each restart's init_transactions fences the dead instance and aborts
        # whatever transaction it left open.
        for threshold in (1500, 3500, 5500):
            wait_until(lambda: (service_must_live(), progress() >= threshold)[1],
                       timeout=90, interval=0.1,
                       message=lambda: f"service progress stuck below {threshold}" + context())
            svc.kill()
            svc.start()
        # The generator finishes (exactly N purchases), then the broker dies and
        # comes back while the service is mid-stream.
        wait_until(lambda: gen.proc.poll() is not None, timeout=90,
                   message=lambda: "purchase generator did not finish" + context())
        assert gen.proc.returncode == 0, "purchase generator failed" + context()
        wait_until(lambda: (service_must_live(), progress() >= 7000)[1],
                   timeout=90, interval=0.1,
                   message=lambda: "service progress stuck below 7000" + context())
        at_broker_kill = progress()
        b.kill()
        b.start()

        # Everything processed: exactly one invoice and one shipment per purchase.
        last = {}

        def consistent() -> bool:
            service_must_live()
            rep = check(b.bootstrap, expect=N)
            last["rep"] = rep
            return rep.ok and rep.invoices == N and rep.shipments == N

        wait_until(consistent, timeout=120, interval=0.5,
                   message=lambda: f"checker: {last.get('rep') and last['rep'].summary()}"
                                   + context())
        rep = last["rep"]
        assert (rep.purchases, rep.invoices, rep.shipments) == (N, N, N)
        assert svc.starts == 4 and b.starts == 2
        print(f"shop pipeline: {N} purchases exactly once in {time.monotonic() - t0:.1f}s"
              f" (service killed 3x, broker killed 1x at committed offsets {at_broker_kill})")
        assert at_broker_kill < N, "the broker was killed only after everything was processed"
    finally:
        progress.close()
        for a in apps:
            a.close()
