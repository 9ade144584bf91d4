"""Driving ``minikafka console`` in headless Chromium (Selenium with Debian's chromium and
chromium-driver), and the exactly-once situations the console tests show it: real clients
(confluent-kafka) against any Kafka, minikafka or Apache Kafka.

Screenshots go to the test's tmp_path and to tests/artifacts/console/ (ignored by git), named
after the test."""
from __future__ import annotations

import os
import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness import wait_until

ARTIFACTS = Path(__file__).resolve().parent / "artifacts" / "console"
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")


def chromium_unavailable() -> str | None:
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install 'minikafka[test]')"
    if not any(shutil.which(n) for n in CHROMIUM_NAMES) and not os.environ.get("CHROMIUM"):
        return "no chromium on PATH (apt-get install chromium chromium-driver)"
    if not shutil.which("chromedriver") and not os.environ.get("CHROMEDRIVER"):
        return "no chromedriver on PATH (apt-get install chromium-driver)"
    return None


class Browser:
    """A headless Chromium page. ``errors()`` is what the page logged as errors or warnings
    (console messages, CSP violations, failed loads) since the last call."""

    def __init__(self, artifacts: list[Path], name: str):
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
        options = webdriver.ChromeOptions()
        options.binary_location = os.environ.get("CHROMIUM") or next(
            shutil.which(n) for n in CHROMIUM_NAMES if shutil.which(n))
        for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                    "--window-size=1500,1100", "--disable-extensions", "--no-first-run"):
            options.add_argument(arg)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        service = Service(os.environ.get("CHROMEDRIVER") or shutil.which("chromedriver"))
        self.driver = webdriver.Chrome(service=service, options=options)
        self.artifacts = artifacts
        self.name = re.sub(r"[^A-Za-z0-9_.-]+", "_", name)[:120]
        self.shots = 0
        self.logged: list[dict] = []

    def get(self, url: str) -> None:
        self.driver.get(url)

    def js(self, script: str, *args):
        return self.driver.execute_script(script, *args)

    def wait(self, predicate, timeout: float = 20.0, message=None):
        """``predicate()`` truthy within ``timeout`` (polled every 50 ms); returns its value."""
        from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException

        def attempt():
            try:
                return predicate()
            except (StaleElementReferenceException, NoSuchElementException, StopIteration):
                return None  # not there yet, or the live part was replaced while read: again
        return wait_until(attempt, timeout, interval=0.05, message=message)

    def click(self, find) -> None:
        """Click the element ``find()`` returns (a Selenium element), found again if the live part
        replaced it between finding and clicking."""
        def attempt() -> bool:
            find().click()
            return True
        self.wait(attempt)

    def rows(self, selector: str) -> list[dict]:
        """Each element matching ``selector``: its data-* attributes and, per cell class, the
        cell's text (one atomic read: the live part is replaced about once a second)."""
        return self.js("""
            return Array.from(document.querySelectorAll(arguments[0])).map(function (r) {
                var out = Object.assign({}, r.dataset);
                out.text = r.innerText;
                r.querySelectorAll('td[class]').forEach(function (td) {
                    td.classList.forEach(function (c) { if (c !== 'num') { out[c] = td.innerText.trim(); } });
                });
                return out;
            });""", selector)

    def seq(self) -> int:
        """The snapshot number the live part shows."""
        return int(self.js("var e = document.getElementById('live'); return e ? e.dataset.seq : -1;"))

    def screenshot(self, label: str) -> Path:
        self.shots += 1
        name = f"{self.name}-{self.shots:02d}-{label}.png"
        paths = [d / name for d in self.artifacts]
        for p in paths:
            p.parent.mkdir(parents=True, exist_ok=True)
            self.driver.save_screenshot(str(p))
        return paths[0]

    def errors(self) -> list[dict]:
        entries = self.driver.get_log("browser")
        self.logged += entries
        return [e for e in entries if e.get("level") in ("SEVERE", "WARNING")]

    def close(self) -> None:
        self.driver.quit()


@pytest.fixture
def browser(request: pytest.FixtureRequest, tmp_path: Path):
    """Headless Chromium; at teardown the page must have logged no error or warning."""
    reason = chromium_unavailable()
    if reason:
        pytest.skip(f"!!! CHROMIUM UNAVAILABLE: {reason}; the console's browser tests cannot run")
    b = Browser([tmp_path / "screenshots", ARTIFACTS], request.node.name)
    try:
        yield b
        errors = b.errors()
        assert not errors, f"the browser logged errors: {errors}"
    finally:
        b.close()


# ----------------------------------------------------------------------------- the cluster side
def create_topic(bootstrap: str, topic: str, partitions: int = 1) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)],
                        operation_timeout=30, request_timeout=30)[topic].result(timeout=60)


def transactional_producer(bootstrap: str, transactional_id: str, timeout_ms: int = 300_000):
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id, "linger.ms": 2,
                  "transaction.timeout.ms": timeout_ms})
    p.init_transactions(30)
    return p


def open_transaction(bootstrap: str, topic: str, transactional_id: str, records: int = 3, partition: int = 0):
    """A transaction begun, written to (acknowledged) and left open; returns the producer."""
    p = transactional_producer(bootstrap, transactional_id)
    p.begin_transaction()
    for i in range(records):
        p.produce(topic, value=f"open-{i}".encode(), partition=partition)
    assert p.flush(30) == 0
    return p


@dataclass
class Lagging:
    """A transactional topic of one partition: two committed transactions of 5 records and an
    aborted one of 3 (offsets 0-4, marker 5, 6-10, marker 11, aborted 12-14, marker 15: HWM
    16), and two groups: ``done`` read everything (committed 11: read_uncommitted lag 5, two
    markers' and three aborted records' worth, read_committed lag 0), ``behind`` committed 3
    (read_uncommitted lag 13, read_committed lag 7: offsets 3, 4 and 6-10)."""
    topic: str
    done: str
    behind: str
    hwm: int = 16
    done_committed: int = 11
    done_lag: int = 5
    behind_committed: int = 3
    behind_lag: int = 13
    behind_committed_lag: int = 7


def make_lagging(bootstrap: str, topic: str, transactional_id: str, done: str, behind: str) -> Lagging:
    from confluent_kafka import Consumer, TopicPartition
    create_topic(bootstrap, topic)
    p = transactional_producer(bootstrap, transactional_id)
    for n, committed in ((5, True), (5, True), (3, False)):
        p.begin_transaction()
        for i in range(n):
            p.produce(topic, value=f"{'c' if committed else 'a'}-{i}".encode(), partition=0)
        p.flush(30)
        (p.commit_transaction if committed else p.abort_transaction)(30)
    # a read_committed consumer of group `done` reads to the end and commits what it processed
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": done, "isolation.level": "read_committed",
                  "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    got = []
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        deadline = time.monotonic() + 30
        while len(got) < 10 and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and not m.error():
                got.append(m)
        assert [m.value() for m in got] == [f"c-{i}".encode() for i in range(5)] * 2, [m.value() for m in got]
        commit(c, message=got[-1])
    finally:
        c.close()
    b = Consumer({"bootstrap.servers": bootstrap, "group.id": behind, "enable.auto.commit": False})
    try:
        commit(b, offsets=[TopicPartition(topic, 0, 3)])
    finally:
        b.close()
    return Lagging(topic, done, behind)


def commit(consumer, **what) -> None:
    """A synchronous commit, again while the group coordinator answers a retriable error (a
    Kafka just started is still loading its groups: NOT_COORDINATOR)."""
    from confluent_kafka import KafkaError, KafkaException
    again = {KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
             KafkaError.COORDINATOR_NOT_AVAILABLE}

    def attempt() -> bool:
        try:
            consumer.commit(asynchronous=False, **what)
            return True
        except KafkaException as e:
            if not (e.args[0].retriable() or e.args[0].code() in again):
                raise
            return False
    wait_until(attempt, 30, interval=0.2, message="the commit kept failing with a retriable error")


def group_partition(browser: Browser, group: str, topic: str, partition: int = 0) -> dict | None:
    """The groups page's row of ``group``'s committed offset on ``topic``-``partition``."""
    for r in browser.rows("tr.group-partition"):
        if (r.get("group"), r.get("topic"), r.get("partition")) == (group, topic, str(partition)):
            return r
    return None
