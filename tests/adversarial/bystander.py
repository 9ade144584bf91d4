"""A well-behaved producer and read_committed consumer that run beside a hostile test.

    with Bystander(broker.bootstrap) as b:       # its own topic, two connections, two threads
        ...hostile things...
        b.wait_progress()                         # both answered more requests since now
    b.check()                                      # every committed record read once, in order
    b.p99("produce"), b.p99(since=mark)           # per-request latency (seconds)

The producer is transactional (InitProducerId, then per round AddPartitionsToTxn, Produce,
EndTxn commit, with Kafka's sequence numbers); the consumer fetches with isolation_level=1
(read_committed) and max_wait_ms=0, filtering as a Java consumer does. Each request is timed
from send to answer. Both pace themselves (``interval``) so they stay light on a busy machine.

``properties`` connect as minikafka's tools do (security.protocol, ssl.*, sasl.*), so the
bystander can use a secured listener; by default it uses the broker's PLAINTEXT one.
"""
from __future__ import annotations

import threading
import time
import uuid

from minikafka.admin.wire import connect
from minikafka.protocol import records as rec

# retriable answers a well-behaved client retries after a short back-off
_RETRIABLE = {6, 7, 14, 15, 16, 51, 53}  # NOT_LEADER, TIMEOUT, COORDINATOR_*, CONCURRENT_TRANSACTIONS, ...


class BystanderError(AssertionError):
    pass


class Bystander:
    def __init__(self, bootstrap: str, properties: dict[str, str] | None = None, topic: str | None = None,
                 interval: float = 0.01, records_per_round: int = 3, timeout: float = 10.0):
        self.bootstrap = bootstrap
        self.properties = dict(properties or {})
        self.topic = topic or f"bystander-{uuid.uuid4().hex[:8]}"
        self.interval = interval
        self.records_per_round = records_per_round
        self.timeout = timeout
        self.samples: list[tuple[float, str, float]] = []  # (monotonic end time, api name, seconds)
        self.errors: list[str] = []
        self.committed: list[bytes] = []  # values of committed transactions, in order
        self.consumed: list[bytes] = []   # values the consumer delivered, in order
        self.counts = {"producer": 0, "consumer": 0}  # requests answered
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._producer_done = threading.Event()
        self._threads: list[threading.Thread] = []

    # ------------------------------------------------------------------ running
    def start(self) -> "Bystander":
        with connect(self.bootstrap, self.properties, timeout=self.timeout) as c:
            body = {"topics": [{"name": self.topic, "num_partitions": 1, "replication_factor": 1,
                                "assignments": [], "configs": []}], "timeout_ms": 10000, "validate_only": False}
            code = c.request(19, 5, body).topics[0].error_code
            if code not in (0, 36):  # TOPIC_ALREADY_EXISTS: a topic given by the caller
                raise BystanderError(f"bystander cannot create topic {self.topic}: error {code}")
        for name, target in (("producer", self._produce), ("consumer", self._consume)):
            t = threading.Thread(target=self._guard, args=(name, target), name=f"bystander-{name}", daemon=True)
            t.start()
            self._threads.append(t)
        self.wait_progress()
        return self

    def stop(self) -> None:
        """Stop producing, let the consumer read every committed record (bounded), stop it."""
        self._stop.set()
        for t in self._threads:
            t.join(self.timeout + 5)
        if any(t.is_alive() for t in self._threads):
            self.errors.append("a bystander thread did not stop in time")

    def __enter__(self) -> "Bystander":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # ----------------------------------------------------------------- checking
    def mark(self) -> float:
        """A point in time for ``p99(since=...)`` and ``latencies(since=...)``."""
        return time.monotonic()

    def wait_progress(self, requests: int = 3, timeout: float | None = None) -> None:
        """Wait until producer and consumer have each had ``requests`` more answers (both working now)."""
        deadline = time.monotonic() + (timeout or self.timeout)
        with self._lock:
            want = {k: v + requests for k, v in self.counts.items()}
        while time.monotonic() < deadline:
            with self._lock:
                if all(self.counts[k] >= want[k] for k in want):
                    return
            if self.errors:
                raise BystanderError("bystander failed: " + "; ".join(self.errors))
            time.sleep(0.01)  # polling the threads' counters
        raise BystanderError(f"bystander made no progress in {timeout or self.timeout}s: "
                             f"{self.counts} (wanted {want}); errors: {self.errors}")

    def latencies(self, api: str | None = None, since: float = 0.0) -> list[float]:
        with self._lock:
            return [s for t, a, s in self.samples if t >= since and (api is None or a == api)]

    def p99(self, api: str | None = None, since: float = 0.0) -> float:
        """The 99th percentile of the per-request latencies (seconds; nearest rank)."""
        lat = sorted(self.latencies(api, since))
        if not lat:
            raise BystanderError(f"no bystander {api or ''} requests since {since}")
        return lat[min(len(lat) - 1, int(len(lat) * 0.99))]

    def check(self) -> None:
        """Raise unless the bystander saw no error and read every committed record, once and in order."""
        if self.errors:
            raise BystanderError("bystander failed: " + "; ".join(self.errors))
        if self.consumed != self.committed:
            raise BystanderError(f"read_committed consumer read {len(self.consumed)} records, "
                                 f"{len(self.committed)} were committed (first difference at "
                                 f"{next((i for i, (a, b) in enumerate(zip(self.consumed, self.committed)) if a != b), min(len(self.consumed), len(self.committed)))})")
        if not self.committed:
            raise BystanderError("bystander committed nothing")

    # ------------------------------------------------------------------ threads
    def _guard(self, name: str, target) -> None:
        try:
            target()
        except Exception as e:  # recorded, raised by check()/wait_progress()
            self.errors.append(f"{name}: {e!r}")
        finally:
            if name == "producer":
                self._producer_done.set()

    def _timed(self, c, who: str, api: str, key: int, version: int, body: dict):
        start = time.monotonic()
        r = c.request(key, version, body)
        end = time.monotonic()
        with self._lock:
            self.samples.append((end, api, end - start))
            self.counts[who] += 1
        return r

    def _retrying(self, c, api: str, key: int, version: int, body: dict, code_of) -> object:
        deadline = time.monotonic() + self.timeout
        while True:
            r = self._timed(c, "producer", api, key, version, body)
            code = code_of(r)
            if code == 0:
                return r
            if code not in _RETRIABLE or time.monotonic() > deadline:
                raise BystanderError(f"{api}: error {code}")
            time.sleep(0.005)  # a client's retry back-off

    def _produce(self) -> None:
        txn_id = f"{self.topic}-txn"
        with connect(self.bootstrap, self.properties, timeout=self.timeout, client_id="bystander-producer") as c:
            r = self._retrying(c, "init_producer_id", 22, 4, {
                "transactional_id": txn_id, "transaction_timeout_ms": 60000, "producer_id": -1,
                "producer_epoch": -1}, lambda r: r.error_code)
            pid, epoch, seq, n = r.producer_id, r.producer_epoch, 0, 0
            while not self._stop.is_set():
                self._retrying(c, "add_partitions_to_txn", 24, 3, {
                    "v3_and_below_transactional_id": txn_id, "v3_and_below_producer_id": pid,
                    "v3_and_below_producer_epoch": epoch,
                    "v3_and_below_topics": [{"name": self.topic, "partitions": [0]}]},
                    lambda r: r.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code)
                values = [b"bystander-%d" % (n + i) for i in range(self.records_per_round)]
                ts = int(time.time() * 1000)
                batch = rec.build_batch([rec.Record(i, ts, None, v, ()) for i, v in enumerate(values)],
                                        producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                                        is_transactional=True)
                p = self._timed(c, "producer", "produce", 0, 9, {
                    "transactional_id": txn_id, "acks": -1, "timeout_ms": 10000,
                    "topic_data": [{"name": self.topic, "partition_data": [{"index": 0, "records": batch}]}]}
                ).responses[0].partition_responses[0]
                if p.error_code:
                    raise BystanderError(f"produce: error {p.error_code}")
                seq += len(values)
                n += len(values)
                self._retrying(c, "end_txn", 26, 3, {"transactional_id": txn_id, "producer_id": pid,
                                                     "producer_epoch": epoch, "committed": True},
                               lambda r: r.error_code)
                with self._lock:
                    self.committed.extend(values)
                time.sleep(self.interval)  # pacing: a light, steady client

    def _consume(self) -> None:
        offset = 0
        with connect(self.bootstrap, self.properties, timeout=self.timeout, client_id="bystander-consumer") as c:
            drain_deadline = None
            while True:
                if self._producer_done.is_set():
                    with self._lock:
                        done = len(self.consumed) >= len(self.committed)
                    if done:
                        return
                    drain_deadline = drain_deadline or time.monotonic() + self.timeout
                    if time.monotonic() > drain_deadline:
                        raise BystanderError(f"consumer did not reach the committed records in {self.timeout}s")
                body = {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20,
                        "isolation_level": 1, "session_id": 0, "session_epoch": -1,
                        "topics": [{"topic": self.topic, "partitions": [{
                            "partition": 0, "fetch_offset": offset, "partition_max_bytes": 1 << 20,
                            "current_leader_epoch": -1, "log_start_offset": -1}]}]}
                p = self._timed(c, "consumer", "fetch", 1, 12, body).responses[0].partitions[0]
                if p.error_code:
                    raise BystanderError(f"fetch: error {p.error_code}")
                aborted = [(a.first_offset, a.producer_id) for a in (p.aborted_transactions or [])]
                got = []
                for h, records, delivered in rec.consumer_view(p.records or b"", aborted, offset, True):
                    if delivered:
                        got.extend(r.value for r in records if r.offset >= offset)
                    offset = h.last_offset + 1
                with self._lock:
                    self.consumed.extend(got)
                if not got:
                    time.sleep(self.interval)  # pacing between empty polls
