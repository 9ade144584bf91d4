"""Where the group coordinator keeps its records: the `__consumer_offsets` topic.

`OffsetsStore` is the small interface the coordinator needs: append a batch of
(key, value) records to one partition (optionally transactional, with producer
id/epoch) and read every batch of a partition back at start-up.
`LogOffsetsStore` implements it on the storage layer's partition logs;
`MemoryOffsetsStore` is an in-memory stand-in for unit tests. `GroupLog` is how the
group coordinator's parts write: a group's records to its partition, a failed append
raised as the error Kafka's group coordinator answers.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Iterator

from minikafka.protocol.errors import ErrorCode, KafkaError
from minikafka.protocol.records import Record, build_batch, decode_batch, iter_batch_headers, parse_control_record

from minikafka.coordinator.internal_topics import OFFSETS_TOPIC

from .records import partition_for

log = logging.getLogger("minikafka.group")

CONTROL_ABORT, CONTROL_COMMIT = 0, 1


@dataclass
class StoredBatch:
    base_offset: int
    producer_id: int = -1
    producer_epoch: int = -1
    is_transactional: bool = False
    is_control: bool = False
    control_type: int | None = None  # CONTROL_COMMIT / CONTROL_ABORT for control batches
    records: list[tuple[int, bytes | None, bytes | None]] = field(default_factory=list)  # (offset, key, value)


class OffsetsStore:
    num_partitions: int

    def append(self, partition: int, records: list[tuple[bytes, bytes | None]], now_ms: int,
               producer_id: int = -1, producer_epoch: int = -1, transactional: bool = False) -> int:
        """Append one batch; returns the offset of its first record."""
        raise NotImplementedError

    def read_batches(self, partition: int) -> Iterator[StoredBatch]:
        raise NotImplementedError


class MemoryOffsetsStore(OffsetsStore):
    """For unit tests: batches in lists; `write_marker` plays the transaction coordinator."""

    def __init__(self, num_partitions: int = 50):
        self.num_partitions = num_partitions
        self.partitions: dict[int, list[StoredBatch]] = {}
        self.fail_with: Exception | None = None

    def _next_offset(self, partition: int) -> int:
        batches = self.partitions.get(partition) or []
        if not batches:
            return 0
        last = batches[-1]
        return last.records[-1][0] + 1 if last.records else last.base_offset + 1

    def append(self, partition, records, now_ms, producer_id=-1, producer_epoch=-1, transactional=False):
        if self.fail_with is not None:
            raise self.fail_with
        base = self._next_offset(partition)
        b = StoredBatch(base, producer_id, producer_epoch, transactional, False, None,
                        [(base + i, k, v) for i, (k, v) in enumerate(records)])
        self.partitions.setdefault(partition, []).append(b)
        return base

    def write_marker(self, partition: int, producer_id: int, commit: bool) -> None:
        base = self._next_offset(partition)
        self.partitions.setdefault(partition, []).append(StoredBatch(
            base, producer_id, 0, True, True, CONTROL_COMMIT if commit else CONTROL_ABORT,
            [(base, None, None)]))

    def read_batches(self, partition):
        yield from list(self.partitions.get(partition, []))


class LogOffsetsStore(OffsetsStore):
    """`__consumer_offsets` on the storage layer's logs (the LogManager's), made on first use
    with ``topic_configs`` (its partitions are ``num_partitions``). As Kafka's coordinator
    writes: producer id/epoch on the batch, no sequence, and the append is the coordinator's
    (AppendOrigin.COORDINATOR: no client-only checks). An I/O error is the LogManager's
    log-dir failure (the broker halts)."""

    def __init__(self, logs, num_partitions: int, topic_configs: dict[str, str]):
        self.num_partitions = num_partitions
        self._logs = logs
        self._topic_configs = topic_configs

    def _log(self, partition: int, create: bool):
        lg = self._logs.get_log(OFFSETS_TOPIC, partition)
        if lg is None and create:
            if OFFSETS_TOPIC not in self._logs.topics():
                self._logs.create_topic(OFFSETS_TOPIC, self.num_partitions, self._topic_configs)
            lg = self._logs.get_log(OFFSETS_TOPIC, partition)
        return lg

    def append(self, partition, records, now_ms, producer_id=-1, producer_epoch=-1, transactional=False):
        lg = self._log(partition, create=True)
        if lg is None:
            raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, "__consumer_offsets partition missing")
        recs = [Record(offset=i, timestamp=now_ms, key=k, value=v, headers=()) for i, (k, v) in enumerate(records)]
        batch = build_batch(recs, base_offset=0, producer_id=producer_id, producer_epoch=producer_epoch,
                            base_sequence=-1, is_transactional=transactional)
        try:
            return lg.append(batch, now_ms=now_ms, origin="coordinator").base_offset
        except OSError as e:
            self._logs.log_dir_failed(e)
        except KafkaError as e:
            if isinstance(e.__cause__, OSError):
                self._logs.log_dir_failed(e.__cause__)
            raise

    def read_batches(self, partition):
        lg = self._log(partition, create=False)
        if lg is None:
            return
        pos = lg.log_start_offset
        end = lg.log_end_offset
        while pos < end:
            buf = lg.read(pos, 1 << 20, max_offset=end).records
            if not buf:
                break
            progressed = False
            for at, hdr in iter_batch_headers(buf):
                if hdr.last_offset < pos:
                    continue
                _, recs = decode_batch(buf, at)
                sb = StoredBatch(hdr.base_offset, hdr.producer_id, hdr.producer_epoch, hdr.is_transactional,
                                 hdr.is_control)
                if hdr.is_control:
                    if recs:
                        try:
                            ctype, _ = parse_control_record(recs[0])
                            sb.control_type = int(ctype)
                        except KafkaError:
                            sb.control_type = None
                else:
                    sb.records = [(r.offset, r.key, r.value) for r in recs]
                yield sb
                pos = hdr.next_offset
                progressed = True
            if not progressed:
                break


class GroupWriteError(Exception):
    """An append to `__consumer_offsets` failed; ``code`` is what the request is answered."""

    def __init__(self, code: ErrorCode):
        super().__init__(code.name)
        self.code = code


def coordinator_write_error(exc: Exception) -> ErrorCode:
    """Kafka's mapping of append errors for coordinator writes."""
    if isinstance(exc, KafkaError):
        code = exc.code
        if code in (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_ENOUGH_REPLICAS, ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
                    ErrorCode.REQUEST_TIMED_OUT):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if code == ErrorCode.NOT_LEADER_OR_FOLLOWER:
            return ErrorCode.NOT_COORDINATOR
        if code in (ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE, ErrorCode.INVALID_FETCH_SIZE):
            return ErrorCode.INVALID_COMMIT_OFFSET_SIZE
        return code
    log.exception("append to __consumer_offsets failed")
    return ErrorCode.UNKNOWN_SERVER_ERROR


class GroupLog:
    """The group coordinator's writes: a group's records, one batch, to its partition."""

    def __init__(self, store: OffsetsStore):
        self.store = store

    def partition_for(self, group_id: str) -> int:
        return partition_for(group_id, self.store.num_partitions)

    def append(self, group_id: str, records: list[tuple[bytes, bytes | None]], now_ms: int,
               producer_id: int = -1, producer_epoch: int = -1, transactional: bool = False) -> int:
        """The offset of the first record; GroupWriteError when the append failed."""
        try:
            return self.store.append(self.partition_for(group_id), records, now_ms, producer_id, producer_epoch,
                                     transactional)
        except Exception as e:  # noqa: BLE001 - answered as Kafka maps it
            raise GroupWriteError(coordinator_write_error(e)) from e
