"""Committed offsets (Kafka's OffsetMetadataManager): per group, the committed offset of
each partition, and the transactional offsets of open transactions (per producer id) that
become committed when their transaction commits.

Whether a request may commit or fetch is its group's question (classic.py,
consumer_groups.py); the shard asks it first. Every change is appended to the group's
`__consumer_offsets` partition before it takes effect in memory.
"""
from __future__ import annotations

import logging

from minikafka.protocol.errors import ErrorCode

from .config import GroupConfig
from .records import OffsetValue, offset_commit_key, offset_commit_value
from .store import GroupLog, GroupWriteError

log = logging.getLogger("minikafka.group")

TopicPartition = tuple  # (topic, partition)


class OffsetManager:
    def __init__(self, config: GroupConfig, log: GroupLog):
        self.config = config
        self.log = log
        # group id -> tp -> committed value
        self.committed: dict[str, dict[TopicPartition, OffsetValue]] = {}
        # group id -> producer id -> tp -> value of a transactional commit not yet committed/aborted
        self.pending: dict[str, dict[int, dict[TopicPartition, OffsetValue]]] = {}

    def of(self, group_id: str) -> dict[TopicPartition, OffsetValue]:
        """The group's committed offsets (empty: none)."""
        return self.committed.get(group_id, {})

    def has_pending(self, group_id: str, tp: TopicPartition) -> bool:
        return any(tp in offs for offs in self.pending.get(group_id, {}).values())

    def has_open_transactions(self, group_id: str) -> bool:
        return bool(self.pending.get(group_id))

    def metadata_too_large(self, metadata: str | None) -> bool:
        """Kafka compares offset.metadata.max.bytes with the length of a Java String: UTF-16 code
        units, not bytes (4096 'é' are 8192 UTF-8 bytes and accepted; an emoji counts 2)."""
        return metadata is not None and len(metadata.encode("utf-16-le")) // 2 > self.config.offset_metadata_max_bytes

    # ================================================= OffsetCommit, TxnOffsetCommit
    def commit(self, group_id: str, offsets: list[tuple[TopicPartition, OffsetValue]], now_ms: int,
               producer_id: int = -1, producer_epoch: int = -1) -> list[ErrorCode]:
        """Write the offsets (transactional with a producer id: pending until its marker);
        one error per entry, in order."""
        result: list[ErrorCode] = []
        valid: list[tuple[TopicPartition, OffsetValue]] = []
        for tp, v in offsets:
            if self.metadata_too_large(v.metadata):
                result.append(ErrorCode.OFFSET_METADATA_TOO_LARGE)
            else:
                result.append(ErrorCode.NONE)
                valid.append((tp, v))
        if valid:
            records = [(offset_commit_key(group_id, tp[0], tp[1]), offset_commit_value(v)) for tp, v in valid]
            txn = producer_id >= 0
            try:
                base = self.log.append(group_id, records, now_ms, producer_id, producer_epoch, transactional=txn)
            except GroupWriteError as e:
                return [e.code if r == ErrorCode.NONE else r for r in result]
            for i, (tp, v) in enumerate(valid):
                v.log_offset = base + i
                if txn:
                    self.pending.setdefault(group_id, {}).setdefault(producer_id, {})[tp] = v
                else:
                    self.committed.setdefault(group_id, {})[tp] = v
        return result

    def complete_transaction(self, offsets_partition: int, producer_id: int, commit: bool) -> None:
        """A COMMIT/ABORT marker of producer_id is in __consumer_offsets partition
        `offsets_partition`: its pending offsets there become committed, or go."""
        for group_id, by_producer in list(self.pending.items()):
            if producer_id not in by_producer or self.log.partition_for(group_id) != offsets_partition:
                continue
            pending = by_producer.pop(producer_id)
            if not by_producer:
                del self.pending[group_id]
            if commit:
                cur = self.committed.setdefault(group_id, {})
                for tp, v in pending.items():
                    old = cur.get(tp)
                    if old is None or old.older_than(v):
                        cur[tp] = v
            log.debug("group %s: %s %d transactional offsets of producer %d", group_id,
                      "committed" if commit else "aborted", len(pending), producer_id)

    # ============================================================ OffsetFetch
    def fetch(self, group_id: str, partitions: list[TopicPartition] | None, require_stable: bool
              ) -> list[tuple[TopicPartition, OffsetValue | None, ErrorCode]]:
        """[(tp, committed or None, partition error)]; `partitions` None: every committed one."""
        committed = self.of(group_id)
        out = []
        for tp in (list(committed) if partitions is None else partitions):
            if require_stable and self.has_pending(group_id, tp):
                out.append((tp, None, ErrorCode.UNSTABLE_OFFSET_COMMIT))
            else:
                out.append((tp, committed.get(tp), ErrorCode.NONE))
        return out

    # ======================================================= tombstones
    def tombstones(self, group_id: str, tps) -> list[tuple[bytes, None]]:
        return [(offset_commit_key(group_id, t, p), None) for t, p in tps]

    def drop(self, group_id: str, tps) -> None:
        """What an offset tombstone does (Kafka's OffsetMetadataManager.replay of a null value): the
        committed offset goes, and so does every open transaction's pending offset of the partition.
        The transactions stay open (their producers still count as open transactions of the group)."""
        committed = self.committed.get(group_id, {})
        for tp in tps:
            committed.pop(tp, None)
            for pending in self.pending.get(group_id, {}).values():
                pending.pop(tp, None)
        if not committed:
            self.committed.pop(group_id, None)

    def delete(self, group_id: str, tps: list[TopicPartition], now_ms: int) -> ErrorCode:
        """OffsetDelete of partitions the group may delete. A partition with only a pending
        transactional offset gets its tombstone too, which drops that offset: it never shows,
        even when its transaction commits (Kafka's replay of an offset tombstone)."""
        present = [tp for tp in dict.fromkeys(tps) if tp in self.of(group_id) or self.has_pending(group_id, tp)]
        if present:
            try:
                self.log.append(group_id, self.tombstones(group_id, present), now_ms)
            except GroupWriteError as e:
                return e.code
            self.drop(group_id, present)
        return ErrorCode.NONE

    def on_topic_deleted(self, topic: str, now_ms: int) -> None:
        """A topic was deleted: every group's committed and pending transactional offsets of its
        partitions are tombstoned (Kafka's GroupCoordinator.onPartitionsDeleted), so a topic
        re-created with the same name starts without offsets, and a transaction committing
        offsets of the deleted topic afterwards makes none visible."""
        for group_id in sorted(set(self.committed) | set(self.pending)):
            tps = {tp for tp in self.of(group_id) if tp[0] == topic}
            for pending in self.pending.get(group_id, {}).values():
                tps |= {tp for tp in pending if tp[0] == topic}
            if not tps:
                continue
            tps = sorted(tps)
            try:
                self.log.append(group_id, self.tombstones(group_id, tps), now_ms)
            except GroupWriteError as e:
                log.warning("group %s: could not delete the offsets of deleted topic %s: %s", group_id, topic,
                            e.code.name)
                continue
            self.drop(group_id, tps)

    def expired(self, group_id: str, now_ms: int, base, subscribed: set[str]) -> list[TopicPartition]:
        """offsets.retention.minutes (or v2-4's retention_time_ms), as Kafka's
        OffsetMetadataManager.cleanupExpiredOffsets: offsets of topics the group does not
        subscribe to, without a pending transactional offset, whose retention (from ``base(v)``)
        is over."""
        retention = self.config.offsets_retention_ms
        return [tp for tp, v in self.of(group_id).items()
                if tp[0] not in subscribed and not self.has_pending(group_id, tp)
                and (now_ms >= v.expire_timestamp if v.expire_timestamp >= 0 else now_ms - base(v) >= retention)]

    def remove_group(self, group_id: str) -> None:
        self.committed.pop(group_id, None)
        self.pending.pop(group_id, None)
