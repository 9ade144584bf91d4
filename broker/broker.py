"""The Broker: one object that owns the storage, the coordinators and the
listeners' addresses; handlers reach everything through it."""
from __future__ import annotations

import logging
import os
import time
from collections import defaultdict

import trio

from protocol.errors import ErrorCode, KafkaError
from storage.cleaner import LogCleaner
from storage.config import LogConfig
from storage.log_manager import LogManager
from coordinator.producer_ids import ProducerIdManager
from coordinator.transaction import TransactionCoordinator
from coordinator.group import GroupConfig, GroupCoordinator, LogOffsetsStore
from protocol import records as rec

log = logging.getLogger("minikafka.broker")

OFFSETS_TOPIC = "__consumer_offsets"
TRANSACTION_TOPIC = "__transaction_state"
INTERNAL_TOPICS = (OFFSETS_TOPIC, TRANSACTION_TOPIC)


def now_ms() -> int:
    return int(time.time() * 1000)


class Metrics:
    """Counters the server updates; exported by broker/metrics.py when enabled."""

    def __init__(self):
        self.connections = 0
        self.request_count = defaultdict(int)
        self.observers = []

    def observe_request(self, api_key: int, seconds: float) -> None:
        self.request_count[api_key] += 1
        for obs in self.observers:
            obs(api_key, seconds)


class Broker:
    def __init__(self, config):
        self.config = config
        self.node_id = config.node_id
        self.metrics = Metrics()
        self.default_log_config = LogConfig.from_broker_properties(config.raw)
        self.logs = LogManager([config.log_dir], self.default_log_config, node_id=self.node_id)
        self.advertised: dict[str, tuple[str, int]] = {}
        self._data_event = trio.Event()
        self.producer_ids = None  # ProducerIdManager, created in load() once log.dirs exists
        self.txn_coordinator = None
        self.group_coordinator = None  # GroupCoordinator (consumer groups, offsets), created in load()
        self.log_cleaner = None  # LogCleaner for compacted topics, created in load()
        # fsyncs the logs asked for (roll, flush.messages): log -> offset to flush up to
        self._flush_requests: dict = {}
        self._flush_wakeup = trio.Event()

    # ------------------------------------------------------------ lifecycle
    def load(self) -> None:
        self.logs.load()
        self.log_cleaner = LogCleaner(self.logs, self.config["log.cleaner.dedupe.buffer.size"])
        self.producer_ids = ProducerIdManager(self.config.log_dir)
        cfg = self.config
        self.txn_coordinator = TransactionCoordinator(
            BrokerTxnIO(self),
            num_partitions=cfg["transaction.state.log.num.partitions"],
            max_timeout_ms=cfg["transaction.max.timeout.ms"],
            id_expiration_ms=cfg["transactional.id.expiration.ms"],
            offsets_partitions=cfg["offsets.topic.num.partitions"],
            two_phase_commit=cfg["transaction.two.phase.commit.enable"],
        )
        self._txn_pending = self.txn_coordinator.load()
        # --- group coordinator: groups and offsets rebuilt from __consumer_offsets ---
        self.group_coordinator = GroupCoordinator(GroupConfig.from_broker_config(cfg), LogOffsetsStore(
            cfg["offsets.topic.num.partitions"], lambda p: self.get_log(OFFSETS_TOPIC, p),
            lambda: self.ensure_internal_topic(OFFSETS_TOPIC)))
        self.group_coordinator.load(now_ms())
        skip = os.environ.get("MINIKAFKA_FAULT_SKIP_MARKER")  # "topic:partition", hanging-transaction drills
        if skip:
            topic, _, part = skip.rpartition(":")
            self.txn_coordinator.skip_marker_for.add((topic, int(part)))

    async def start_background(self, nursery) -> None:
        """Finish transactions decided before a crash (before serving), then start the
        periodic work: group timers, transaction timeouts and expiry, producer-state
        expiry, retention, checkpoints and log cleaning."""
        await self.txn_coordinator.complete_pending(self._txn_pending)
        self._txn_pending = []
        cfg = self.config
        nursery.start_soon(self._group_timers)  # group coordinator: sessions, rebalance delays, offset expiry
        nursery.start_soon(self._every, cfg["transaction.abort.timed.out.transaction.cleanup.interval.ms"],
                           self.txn_coordinator.abort_timed_out)
        nursery.start_soon(self._every, cfg["transaction.remove.expired.transaction.cleanup.interval.ms"],
                           self.txn_coordinator.expire_transactional_ids)
        nursery.start_soon(self._every, cfg["producer.id.expiration.check.interval.ms"], self._expire_producers)
        nursery.start_soon(self._every, cfg["log.retention.check.interval.ms"], self._retention)
        # Kafka's LogManager tasks: the log flusher (flush.ms) and the recovery-point checkpoint
        # (it only bounds recovery work), first after log.initial.task.delay.ms
        delay = cfg["log.initial.task.delay.ms"]
        nursery.start_soon(self._every, cfg["log.flush.scheduler.interval.ms"], self._flush_dirty_logs, delay)
        nursery.start_soon(self._every, cfg["log.flush.offset.checkpoint.interval.ms"], self._checkpoint, delay)
        nursery.start_soon(self._flusher)
        if cfg["log.cleaner.enable"]:
            nursery.start_soon(self._every, max(cfg["log.cleaner.backoff.ms"], 10), self._clean_logs)

    async def _retention(self) -> None:
        deleted = self.logs.cleanup(now_ms())
        if deleted:
            log.info("retention deleted %d segment(s)", deleted)

    async def _checkpoint(self) -> None:
        await trio.to_thread.run_sync(self.logs.checkpoint)

    # ------------------------------------------------------------ flushing (fsync)
    def _request_flush(self, lg, upto: int) -> None:
        """A log asks for an fsync up to ``upto`` (storage calls this from append/roll)."""
        if upto > self._flush_requests.get(lg, -1):
            self._flush_requests[lg] = upto
        self._flush_wakeup.set()

    async def _flusher(self) -> None:
        """Runs the asked-for flushes, one log at a time, each in a worker thread (Kafka's
        asynchronous flush of a rolled segment)."""
        while True:
            await self._flush_wakeup.wait()
            self._flush_wakeup = trio.Event()
            requests, self._flush_requests = self._flush_requests, {}
            for lg, upto in requests.items():
                try:
                    await self.flush_log(lg, upto)
                except KafkaError as e:
                    log.error("%s", e.message)

    async def flush_log(self, lg, upto: int) -> None:
        """fsync ``lg`` up to ``upto`` in a worker thread, never on the event loop.
        KAFKA_STORAGE_ERROR if the disk fails."""
        if lg.recovery_point >= upto:
            return
        try:
            await trio.to_thread.run_sync(lg.flush, False, upto)
        except OSError as e:
            raise KafkaError(ErrorCode.KAFKA_STORAGE_ERROR, f"Error while flushing log {lg.name}: {e}") from e

    async def _flush_dirty_logs(self) -> None:
        """Kafka's ``flushDirtyLogs``: fsync every log whose last flush is ``flush.ms`` old."""
        for lg in self.logs.logs():
            if lg.flush_due(now_ms()):
                try:
                    await self.flush_log(lg, lg.log_end_offset)
                except KafkaError as e:
                    log.error("%s", e.message)

    async def _clean_logs(self) -> None:
        """One log cleaner round: pick the filthiest compacted log, rewrite its segments in a
        worker thread (immutable segments only), swap them in here, in the log's owner."""
        cleaner = self.log_cleaner
        plan = cleaner.plan(now_ms())
        if plan is None:
            return
        try:
            try:
                result = await trio.to_thread.run_sync(cleaner.build, plan, abandon_on_cancel=True)
            except trio.Cancelled:
                cleaner.abort(plan)  # shutdown: the thread stops at its next batch, files are removed
                raise
            cleaner.commit(plan, result)
        except Exception as e:
            cleaner.handle_error(plan, e)

    async def _group_timers(self) -> None:
        """Drive the group coordinator's timers (it takes explicit times, never sleeps)."""
        while True:
            try:
                self.group_coordinator.tick(now_ms())
            except Exception:
                log.exception("group coordinator tick failed")
            await trio.sleep(0.05)

    async def _every(self, interval_ms: int, fn, first_delay_ms: int | None = None) -> None:
        """Run ``fn`` every ``interval_ms``, first after ``first_delay_ms`` (default: one
        interval). Like Kafka's scheduler, an interval of 0 runs it once."""
        await trio.sleep((interval_ms if first_delay_ms is None else first_delay_ms) / 1000)
        while True:
            try:
                await fn()
            except Exception:
                log.exception("background task %s failed", getattr(fn, "__name__", fn))
            if interval_ms <= 0:
                return
            await trio.sleep(interval_ms / 1000)

    async def _expire_producers(self) -> None:
        self.logs.expire_producers(now_ms(), self.config["producer.id.expiration.ms"])

    def close(self) -> None:
        self.logs.close()

    # ---------------------------------------------------------- data events
    @property
    def data_event(self) -> trio.Event:
        """Set (and replaced) whenever any partition's HW or LSO moves. Grab it
        *before* reading so a change between the read and the wait is not lost."""
        return self._data_event

    def notify_data(self) -> None:
        ev, self._data_event = self._data_event, trio.Event()
        ev.set()

    # ------------------------------------------------------------- topics
    def advertised_address(self, listener_name: str) -> tuple[str, int]:
        return self.advertised.get(listener_name) or next(iter(self.advertised.values()))

    def get_log(self, topic: str, partition: int):
        lg = self.logs.get_log(topic, partition)
        if lg is not None and lg.on_append is None:
            lg.on_append = self.notify_data
            lg.on_flush_needed = self._request_flush
        return lg

    def create_topic(self, name: str, num_partitions: int | None = None, configs: dict | None = None):
        info = self.logs.create_topic(name, num_partitions or self.config["num.partitions"], configs or {})
        return info

    def ensure_internal_topic(self, name: str):
        topics = self.logs.topics()
        if name in topics:
            return topics[name]
        n = self.config["offsets.topic.num.partitions" if name == OFFSETS_TOPIC else "transaction.state.log.num.partitions"]
        seg = self.config["offsets.topic.segment.bytes" if name == OFFSETS_TOPIC
                          else "transaction.state.log.segment.bytes"]
        return self.create_topic(name, n, {"cleanup.policy": "compact", "segment.bytes": str(seg)})

    @staticmethod
    def is_internal(name: str) -> bool:
        return name in INTERNAL_TOPICS

    def topic_by_id(self, topic_id):
        for info in self.logs.topics().values():
            if info.topic_id == topic_id:
                return info
        return None

    def ensure_coordinator_topic(self, key_type: int) -> None:
        self.ensure_internal_topic(OFFSETS_TOPIC if key_type == 0 else TRANSACTION_TOPIC)

    def append_records(self, lg, records: bytes, transactional_id: str | None = None):
        """A client produce to one partition.

        Transactional batches are verified against the coordinator first
        (transaction.partition.verification.enable): a write to a partition that
        is not in the producer's ongoing transaction would otherwise start a
        transaction no marker will ever end (a hanging transaction)."""
        if len(records) >= rec.HEADER_SIZE and self.config["transaction.partition.verification.enable"]:
            h = rec.parse_header(records, 0)
            if h.is_transactional and h.producer_id >= 0 and not lg.has_ongoing_transaction(h.producer_id):
                if transactional_id is None:
                    raise KafkaError(ErrorCode.INVALID_TXN_STATE, "transactional batch without a transactional id")
                code = self.txn_coordinator.verify_partitions(
                    transactional_id, h.producer_id, h.producer_epoch, [(lg.topic, lg.partition)])[(lg.topic, lg.partition)]
                if code == ErrorCode.PRODUCER_FENCED:
                    code = ErrorCode.INVALID_PRODUCER_EPOCH  # what a partition leader returns for a stale epoch
                if code != ErrorCode.NONE:
                    raise KafkaError(code, "partition is not part of an ongoing transaction of this producer")
        return lg.append(records)

    async def write_marker(self, topic: str, partition: int, producer_id: int, producer_epoch: int,
                           commit: bool, coordinator_epoch: int, admin: bool = False) -> int:
        """Append a COMMIT/ABORT control batch (WriteTxnMarkers, internal and admin)."""
        lg = self.get_log(topic, partition)
        if lg is None:
            return int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        batch = rec.build_control_batch(producer_id, producer_epoch, commit, coordinator_epoch, now_ms())
        try:
            lg.append(batch, origin="coordinator")
        except KafkaError as e:
            return int(e.code)
        if topic == OFFSETS_TOPIC and getattr(self, "group_coordinator", None) is not None:
            self.group_coordinator.complete_transaction(partition, producer_id, commit)
        self.notify_data()  # the LSO may have moved: wake read_committed long-polls
        return 0

    def internal_records(self, topic: str):
        """(partition, Record) for every record of an internal topic, in log order per partition."""
        info = self.logs.topics().get(topic)
        if info is None:
            return
        for p in range(info.num_partitions):
            lg = self.get_log(topic, p)
            offset = lg.log_start_offset
            while offset < lg.log_end_offset:
                data = lg.read(offset, 1 << 20).records
                if not data:
                    break
                for pos, h in rec.iter_batch_headers(data):
                    if h.last_offset < offset:
                        continue
                    _, records = rec.decode_batch(data[pos:pos + h.size])
                    for r in records:
                        yield p, h, r
                    offset = h.last_offset + 1

    def require_log(self, topic: str, partition: int):
        lg = self.get_log(topic, partition)
        if lg is None:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        return lg


class BrokerTxnIO:
    """The transaction coordinator's window on this broker (coordinator.transaction.TxnIO)."""

    def __init__(self, broker: Broker):
        self.broker = broker

    def now_ms(self) -> int:
        return now_ms()

    def allocate_producer_id(self) -> int:
        return self.broker.producer_ids.next_id()

    async def append_state(self, partition: int, key: bytes, value: bytes | None, durable: bool) -> None:
        lg = self.broker.get_log(TRANSACTION_TOPIC, partition)
        if lg is None:
            self.broker.ensure_internal_topic(TRANSACTION_TOPIC)
            lg = self.broker.get_log(TRANSACTION_TOPIC, partition)
        t = now_ms()
        lg.append(rec.build_batch([rec.Record(0, t, key, value, [])]), origin="coordinator")
        if durable:
            await trio.to_thread.run_sync(lg.flush, True)

    async def write_marker(self, topic, partition, producer_id, producer_epoch, commit, coordinator_epoch) -> int:
        return await self.broker.write_marker(topic, partition, producer_id, producer_epoch, commit, coordinator_epoch)

    def read_state(self):
        for _, _, r in self.broker.internal_records(TRANSACTION_TOPIC):
            if r.key is not None:
                yield r.key, r.value

    def partition_exists(self, topic: str, partition: int) -> bool:
        return self.broker.get_log(topic, partition) is not None

    def fault(self, point: str) -> None:
        if os.environ.get("MINIKAFKA_FAULT") == point:
            log.error("fault injection: exiting at %s", point)
            os._exit(86)
