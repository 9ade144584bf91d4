"""Client workloads of the benchmarks, driven by librdkafka (confluent-kafka), the same against any
broker. Each returns a dict with the figure it measures and `records`: how many records it wrote
or read, checked against what it expected (a short count raises BenchError: a row that lost
records is lost, never printed).

Concurrent transactional producers run in worker processes (spawned, several producers per
process, one thread each): a blocking librdkafka call (commit_transaction, init_transactions)
releases the GIL, and librdkafka does its network I/O in its own threads, so with 100 producers
the Python side is not what is measured.
"""
from __future__ import annotations

import math
import multiprocessing
import os
import queue
import threading
import time
import uuid

from brokers import BenchError, cpu_seconds, rss_mb


def unique(prefix: str) -> str:
    return f"bench-{prefix}-{uuid.uuid4().hex[:10]}"


# ----------------------------------------------------------------------------- admin

def create_topic(bootstrap: str, topic: str, partitions: int = 1, timeout: float = 60) -> None:
    """Create `topic` and wait until every partition has a leader in Metadata (Kafka answers
    CreateTopics before its metadata cache has the new partitions)."""
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(topic, partitions, 1)], request_timeout=timeout).values():
        f.result(timeout)
    deadline = time.monotonic() + timeout
    while True:
        md = admin.list_topics(topic, timeout=10).topics.get(topic)
        if md and md.error is None and len(md.partitions) == partitions and \
                all(p.leader >= 0 for p in md.partitions.values()):
            return
        if time.monotonic() > deadline:
            raise BenchError(f"topic {topic} has no leaders after {timeout:.0f} s")
        time.sleep(0.05)


def delete_topics(bootstrap: str, topics: list[str]) -> None:
    """Best effort: a benchmark leaves no topics behind on a shared broker."""
    if not topics:
        return
    from confluent_kafka.admin import AdminClient
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.delete_topics(list(topics), operation_timeout=30).values():
        try:
            f.result(60)
        except Exception:
            pass


def end_offsets(bootstrap: str, topic: str, partitions: int) -> list[int]:
    """Each partition's log end offset (one ListOffsets round trip)."""
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient, OffsetSpec
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futs = admin.list_offsets({TopicPartition(topic, p): OffsetSpec.latest() for p in range(partitions)},
                              request_timeout=60)
    return [f.result(60).offset for _, f in sorted(futs.items(), key=lambda kv: kv[0].partition)]


# ----------------------------------------------------------------------------- produce

BASE_PRODUCER = {"linger.ms": 5, "batch.size": 1_000_000, "queue.buffering.max.messages": 1_000_000,
                 "queue.buffering.max.kbytes": 1_048_576, "compression.type": "none"}


def produce(bootstrap: str, topic: str, n: int, size: int, *, acks: str = "1", idempotent: bool = False,
            partitions: int = 1, client: dict | None = None) -> dict:
    """n records of `size` random bytes, round-robin over `partitions`; rate over the time from the
    first produce() to the last delivery report."""
    from confluent_kafka import Producer
    conf = dict(BASE_PRODUCER, **{"bootstrap.servers": bootstrap, "acks": "all" if idempotent else acks})
    pid_assigned = [not idempotent]
    if idempotent:
        conf["enable.idempotence"] = True
        # librdkafka's statistics say when the producer id is assigned (eos.idemp_state)
        conf["statistics.interval.ms"] = 10
        conf["stats_cb"] = lambda s: pid_assigned.__setitem__(0, pid_assigned[0] or '"idemp_state": "Assigned"' in s)
    conf.update(client or {})  # security settings (bench/tls.py)
    p = Producer(conf)
    value = os.urandom(size)
    delivered = [0]
    errors = []

    def cb(err, msg):
        if err is None:
            delivered[0] += 1
        elif len(errors) < 3:
            errors.append(err)

    p.list_topics(topic, timeout=10)  # metadata before the clock starts
    # An idempotent producer sends nothing before it has a producer id, and librdkafka 2.x's
    # start-up races itself: when its id request runs while the bootstrap connection is being
    # replaced by the broker's own (same host and port), it finds no broker up and retries on
    # a 500 ms timer (debug=eos: "Starting PID FSM timer: Coordinator not up"). Measured on
    # both brokers, in about half the starts; meanwhile produce() queues the whole run and
    # the client page-faults its way through 200 MB of queue. The clock starts once the id
    # is there, as it starts once metadata is.
    deadline = time.monotonic() + 10
    while not pid_assigned[0]:
        if time.monotonic() > deadline:
            raise BenchError("produce: the idempotent producer got no producer id in 10 s")
        p.poll(0.005)
    t0 = time.perf_counter()
    for i in range(n):
        while True:
            try:
                if partitions > 1:
                    p.produce(topic, value, partition=i % partitions, on_delivery=cb)
                else:
                    p.produce(topic, value, partition=0, on_delivery=cb)
                break
            except BufferError:
                p.poll(0.01)
        p.poll(0)
    left = p.flush(120)
    dt = time.perf_counter() - t0
    if errors or left or delivered[0] != n:
        raise BenchError(f"produce: {delivered[0]}/{n} delivered, {left} left in queue, errors {errors}")
    return {"rate": n / dt, "mbps": n * size / dt / 1e6, "records": n, "seconds": dt}


def produce_latency(bootstrap: str, topic: str, partitions: int, samples: int, size: int) -> dict:
    """Round trips of one record at a time (acks=1, no linger), partitions in turn: p50/p99 of
    produce() to its delivery report."""
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": bootstrap, "acks": "1", "linger.ms": 0})
    p.list_topics(topic, timeout=10)
    value = os.urandom(size)
    lat = []
    for i in range(samples):
        t = time.perf_counter()
        p.produce(topic, value, partition=i % partitions)
        if p.flush(10):
            raise BenchError("produce_latency: a record was not delivered in 10 s")
        lat.append(time.perf_counter() - t)
    return {"p50_ms": percentile(lat, 50) * 1e3, "p99_ms": percentile(lat, 99) * 1e3, "records": samples}


# ----------------------------------------------------------------------------- transactions

TXN_PRODUCER = {"linger.ms": 1, "batch.size": 1_000_000, "queue.buffering.max.messages": 1_000_000,
                "queue.buffering.max.kbytes": 1_048_576, "compression.type": "none"}


def txn_producer(bootstrap: str, txn_id: str, quiet: bool = False):
    from confluent_kafka import Producer
    p = Producer(dict(TXN_PRODUCER, **{"bootstrap.servers": bootstrap, "transactional.id": txn_id,
                                       "transaction.timeout.ms": 60000},
                      # a broker killed on purpose: no connection-refused lines from librdkafka
                      **({"log_level": 2} if quiet else {})))
    # Kafka's coordinator answers COORDINATOR_LOAD_IN_PROGRESS for a while after the first
    # FindCoordinator of a fresh __transaction_state partition: librdkafka retries within this
    p.init_transactions(120)
    return p


def run_transactions(p, topic: str, partition: int, value: bytes, per_txn: int, txns: int | None,
                     deadline: float | None) -> tuple[list[float], float]:
    """Transactions of `per_txn` records until `txns` are done or `deadline` (monotonic) passes.
    Returns the commit_transaction() latencies and the monotonic time the last one ended."""
    lat = []
    end = time.monotonic()
    while (txns is None or len(lat) < txns) and (deadline is None or time.monotonic() < deadline):
        p.begin_transaction()
        for _ in range(per_txn):
            while True:
                try:
                    p.produce(topic, value, partition=partition)
                    break
                except BufferError:
                    p.poll(0.01)
        t = time.monotonic()
        p.commit_transaction(120)
        end = time.monotonic()
        lat.append(end - t)
    return lat, end


def transactions(bootstrap: str, topic: str, txns: int, per_txn: int, size: int) -> dict:
    """One producer, `txns` transactions of `per_txn` records each, one after the other."""
    p = txn_producer(bootstrap, unique("txn"))
    value = os.urandom(size)
    t0 = time.monotonic()
    lat, end = run_transactions(p, topic, 0, value, per_txn, txns, None)
    dt = end - t0
    p.flush(30)
    return {"rate": txns * per_txn / dt, "commits_s": txns / dt, "records": txns * per_txn, "seconds": dt,
            "p50_ms": percentile(lat, 50) * 1e3}


def percentile(xs: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of a non-empty list."""
    s = sorted(xs)
    return s[max(0, min(len(s), math.ceil(q / 100 * len(s))) - 1)]


def _commit_worker(bootstrap, topic, partitions, first, count, per_txn, size, txns_each, prefix,
                   ready_q, go, deadline, result_q, leave_open=False):
    """Worker process: `count` transactional producers, one thread each (producer i writes to
    partition i % partitions). Reports 'ready' once all have init_transactions'ed, waits for `go`,
    then runs transactions until deadline.value (monotonic, shared by all processes) or
    `txns_each` per producer, and reports latencies. With leave_open, each producer then begins
    one more transaction, writes its records and reports with it open (the parent kills the broker,
    then this process)."""
    value = os.urandom(size)
    producers, errors = [None] * count, []

    def init(i):
        try:
            producers[i] = txn_producer(bootstrap, f"{prefix}-{first + i}", quiet=leave_open)
        except Exception as e:  # noqa: BLE001 (reported to the parent, which fails the row)
            errors.append(f"init_transactions: {e}")

    threads = [threading.Thread(target=init, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ready_q.put(errors[:1])
    if errors:
        return
    go.wait()
    cpu0 = time.process_time()
    lats, ends = [None] * count, [0.0] * count

    def work(i):
        try:
            lats[i], ends[i] = run_transactions(producers[i], topic, (first + i) % partitions, value, per_txn,
                                                txns_each, deadline.value if txns_each is None else None)
        except Exception as e:  # noqa: BLE001
            errors.append(f"producer {first + i}: {e}")
            lats[i] = []

    def open_one(i):
        try:
            p = producers[i]
            p.begin_transaction()
            for _ in range(per_txn):
                p.produce(topic, value, partition=(first + i) % partitions)
            if p.flush(60):
                errors.append(f"producer {first + i}: open transaction's records not delivered")
        except Exception as e:  # noqa: BLE001
            errors.append(f"producer {first + i} (open transaction): {e}")

    for fn in (work, open_one) if leave_open else (work,):
        threads = [threading.Thread(target=fn, args=(i,)) for i in range(count)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    result_q.put((errors[:3], [x for lat in lats for x in lat], max(ends), time.process_time() - cpu0))
    if leave_open:
        time.sleep(3600)  # killed by the parent
    for p in producers:
        p.flush(30)


def concurrent_transactions(bootstrap: str, topic: str, producers: int, per_txn: int, size: int, *,
                            partitions: int = 1, seconds: float | None = None, txns_each: int | None = None,
                            broker_pid: int | None = None, procs: int | None = None,
                            while_open=None) -> dict:
    """`producers` transactional producers committing transactions of `per_txn` records at the same
    time, for `seconds` or `txns_each` transactions each. Commit latency is commit_transaction()'s
    duration (the flush of the transaction's records, EndTxn, its answer). With broker_pid (the
    broker's process), its peak RSS during the run is sampled every 100 ms and its CPU time
    measured."""
    ctx = multiprocessing.get_context("spawn")
    procs = procs or min(producers, 4)
    ready_q, result_q = ctx.Queue(), ctx.Queue()
    go, deadline = ctx.Event(), ctx.Value("d", 0.0)
    prefix = unique(f"tx{producers}")
    workers, first = [], 0
    for k in range(procs):
        count = producers // procs + (1 if k < producers % procs else 0)
        w = ctx.Process(target=_commit_worker, daemon=True,
                        args=(bootstrap, topic, partitions, first, count, per_txn, size, txns_each, prefix,
                              ready_q, go, deadline, result_q, while_open is not None))
        w.start()
        workers.append(w)
        first += count
    try:
        for _ in workers:
            try:
                errs = ready_q.get(timeout=300)
            except queue.Empty:
                raise BenchError(f"{producers} producers: not all initialised in 300 s") from None
            if errs:
                raise BenchError(f"{producers} producers: {errs[0]}")
        peak = [0.0]
        stop = threading.Event()

        def sample():
            while not stop.is_set():
                peak[0] = max(peak[0], rss_mb(broker_pid))
                stop.wait(0.1)

        sampler = threading.Thread(target=sample, daemon=True) if broker_pid else None
        broker_cpu0 = cpu_seconds(broker_pid) if broker_pid else None
        t0 = time.monotonic()
        deadline.value = t0 + (seconds or 0)
        if sampler:
            sampler.start()
        go.set()
        lat, end, errors, client_cpu = [], t0, [], 0.0
        for _ in workers:
            try:
                errs, ls, e, cpu = result_q.get(timeout=(seconds or 0) + 600)
            except queue.Empty:
                raise BenchError(f"{producers} producers: no result within {(seconds or 0) + 600:.0f} s") from None
            errors += errs
            lat += ls
            end = max(end, e)
            client_cpu += cpu
        broker_cpu = cpu_seconds(broker_pid) - broker_cpu0 if broker_pid else None
        stop.set()
        if sampler:
            sampler.join()
        if errors:
            raise BenchError(f"{producers} producers: {'; '.join(errors)}")
        if txns_each is not None and len(lat) != producers * txns_each:
            raise BenchError(f"{producers} producers: {len(lat)}/{producers * txns_each} transactions committed")
        if not lat:
            raise BenchError(f"{producers} producers: no transaction committed in {seconds} s")
        dt = end - t0
        if while_open is not None:
            while_open()
        return {"commits_s": len(lat) / dt, "rate": len(lat) * per_txn / dt, "p50_ms": percentile(lat, 50) * 1e3,
                "p99_ms": percentile(lat, 99) * 1e3, "records": len(lat) * per_txn, "commits": len(lat),
                "seconds": dt, "peak_rss_mb": peak[0] if broker_pid else None,
                # CPU seconds used during the run: of all producer processes, of the broker (if its
                # pid is known); against 2 cores x seconds, they show who was the bottleneck
                "client_cpu_s": client_cpu, "broker_cpu_s": broker_cpu}
    finally:
        go.set()  # a worker still waiting must not hang on exit
        for w in workers:
            if while_open is not None:
                w.kill()
            w.join(60)
            if w.is_alive():
                w.kill()


# ----------------------------------------------------------------------------- consume

def consume(bootstrap: str, topic: str, partitions: int, expected: int, *, committed: bool,
            start: list[int] | None = None, exact: bool = True, timeout: float = 180, client: dict | None = None) -> dict:
    """Read `expected` records from offset 0 (or `start[p]`) of every partition p to its end
    (assign, no group management).

    librdkafka's consume(N, timeout) returns early only once it has N messages: asking for more
    than are left waits out the whole timeout, which would then be measured instead of the broker.
    So each call asks for at most what is left. Reading more than expected is an error too
    (unless not `exact`: then the first `expected` records are read and the rest left).
    The local prefetch queue is sized so that the client never pauses fetching (below)."""
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": unique("group"), "enable.auto.commit": False,
                  "isolation.level": "read_committed" if committed else "read_uncommitted",
                  "fetch.max.bytes": 52428800, "max.partition.fetch.bytes": 10485760, "fetch.wait.max.ms": 100,
                  # a second trap: once librdkafka's local queue passes queued.min.messages (100,000)
                  # or queued.max.messages.kbytes (64 MB), it postpones that partition's next fetch
                  # by fetch.queue.backoff.ms (1 s): a read of 200 MB would measure those pauses
                  "queued.min.messages": 1_000_000, "queued.max.messages.kbytes": 1_048_576,
                  "fetch.queue.backoff.ms": 1, "enable.partition.eof": False, **(client or {})})
    got = nbytes = 0
    try:
        c.list_topics(topic, timeout=10)
        # librdkafka answers list_topics on its bootstrap connection and opens the leader's only
        # when asked for it (after replacing the bootstrap broker by the broker's own, with its
        # connection throttling): one round trip to the leader first, so the clock measures the
        # read and not that start-up (it moved 200,000-record reads of either broker by +-25%)
        c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        t0 = time.perf_counter()
        c.assign([TopicPartition(topic, p, start[p] if start else 0) for p in range(partitions)])
        deadline = time.monotonic() + timeout
        while got < expected and time.monotonic() < deadline:
            for m in c.consume(min(10_000, expected - got), 1.0):
                err = m.error()
                if err is not None:
                    raise BenchError(f"consume: {err}")
                got += 1
                nbytes += len(m)  # the value's length, without copying it into a bytes object
        dt = time.perf_counter() - t0
        if exact:  # nothing may be left: a broker that returned duplicates fails here
            extra = c.consume(1, 0.2)
            if extra and extra[0].error() is None:
                raise BenchError(f"consume: more than the {expected} records expected")
    finally:
        c.close()
    if got != expected:
        raise BenchError(f"consume: read {got}/{expected} records in {timeout:.0f} s")
    return {"rate": got / dt, "mbps": nbytes / dt / 1e6, "records": got, "seconds": dt}
