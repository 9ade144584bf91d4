"""The group coordinator (Kafka's GroupCoordinatorShard): the classic groups, the consumer
groups and the committed offsets of this node, three objects with their own state, and the
requests routed to them. A group id names a classic group or a consumer group, never both;
the shard asks the group whether a member may commit or fetch, then the OffsetManager
writes or reads the offsets.

Sans-I/O: every entry point takes `now_ms`; nothing sleeps or awaits. JoinGroup and
SyncGroup return a `Waiter` the broker waits on; timers advance when the broker calls
`tick(now_ms)`. Everything is appended to `__consumer_offsets` (through the OffsetsStore)
before it takes effect in memory, and `load` rebuilds it all from there. The one thing
that reaches the shard from outside its requests is `complete_transaction`: a transaction's
COMMIT/ABORT marker was written to its partition.
"""
from __future__ import annotations

import logging

from minikafka.protocol.errors import ErrorCode

from .classic import ClassicGroupManager, done, join_error, sync_result, validate_commit
from .config import GroupConfig
from .consumer import ConsumerGroup
from .consumer_groups import ConsumerGroupManager
from .group import ClassicGroup, GroupState, Waiter
from .offsets import OffsetManager, TopicPartition
from .records import (CG_METADATA, CG_TARGET_META, ConsumerGroupKey, GroupKey, GroupRecord, OffsetKey,
                      OffsetValue, cg_key, group_metadata_key, parse_group_value, parse_key, parse_offset_value)
from .store import CONTROL_COMMIT, GroupLog, GroupWriteError, OffsetsStore

log = logging.getLogger("minikafka.group")


def valid_group_id(group_id: str | None, allow_empty: bool = False) -> bool:
    """Kafka's isValidGroupId: OffsetCommit/OffsetFetch/DescribeGroups/DeleteGroups accept an
    empty id, everything else needs a non-empty one."""
    return group_id is not None and (allow_empty or group_id != "")


class GroupCoordinatorShard:
    def __init__(self, config: GroupConfig, store: OffsetsStore, topics=None, group_configs=None):
        """``topics()`` -> {name: (topic id, partitions)} of the non-internal topics (KIP-848
        assignment); ``group_configs(group id)`` -> {key: value} of its GROUP config overrides."""
        self.config = config
        self.log = GroupLog(store)
        self.classic = ClassicGroupManager(config, self.log)
        self.consumer = ConsumerGroupManager(config, self.log, self.classic, topics or (lambda: {}),
                                             group_configs or (lambda gid: {}))
        self.offsets = OffsetManager(config, self.log)
        self._next_offsets_cleanup_ms = 0

    def partition_for(self, group_id: str) -> int:
        return self.log.partition_for(group_id)

    def group(self, group_id: str) -> ClassicGroup | ConsumerGroup | None:
        """The group of either kind by that id."""
        return self.consumer.groups.get(group_id) or self.classic.groups.get(group_id)

    def is_consumer_group(self, group_id: str) -> bool:
        return group_id in self.consumer.groups

    # ============================================================= JoinGroup
    def join_group(self, group_id: str, member_id: str, group_instance_id: str | None, client_id: str,
                   client_host: str, session_timeout_ms: int, rebalance_timeout_ms: int, protocol_type: str,
                   protocols: list[tuple[str, bytes]], require_known_member_id: bool, now_ms: int,
                   reason: str | None = None, supports_skip_assignment: bool = False) -> Waiter:
        member_id = member_id or ""
        if not valid_group_id(group_id):
            return done(join_error(member_id, ErrorCode.INVALID_GROUP_ID))
        err = self.classic.check_join(session_timeout_ms)
        if err != ErrorCode.NONE:
            return done(join_error(member_id, err))
        if rebalance_timeout_ms < 0:
            rebalance_timeout_ms = session_timeout_ms
        cg = self.consumer.groups.get(group_id)
        if cg is not None:
            if cg.members:
                return done(self.consumer.classic_join(
                    cg, member_id, group_instance_id, client_id, client_host, session_timeout_ms,
                    rebalance_timeout_ms, protocol_type, list(protocols), require_known_member_id, now_ms))
            err = self.consumer.emptied_to_classic(cg, now_ms)
            if err is not None:
                return done(join_error(member_id, err))
        args = (client_id, client_host, session_timeout_ms, rebalance_timeout_ms, protocol_type, list(protocols))
        return self.classic.join(group_id, member_id, group_instance_id, args, require_known_member_id, now_ms,
                                 supports_skip_assignment)

    # ============================================== SyncGroup, Heartbeat, LeaveGroup
    def sync_group(self, group_id: str, generation_id: int, member_id: str, group_instance_id: str | None,
                   protocol_type: str | None, protocol_name: str | None, assignments: dict[str, bytes],
                   now_ms: int) -> Waiter:
        if not valid_group_id(group_id):
            return done(sync_result(ErrorCode.INVALID_GROUP_ID))
        cg = self.consumer.groups.get(group_id)
        if cg is not None:
            return done(self.consumer.classic_sync(cg, generation_id, member_id, group_instance_id, protocol_type,
                                                   protocol_name, now_ms))
        g = self.classic.groups.get(group_id)
        if g is None:
            return done(sync_result(ErrorCode.UNKNOWN_MEMBER_ID))
        return self.classic.sync(g, generation_id, member_id, group_instance_id, protocol_type, protocol_name,
                                 assignments, now_ms)

    def heartbeat(self, group_id: str, generation_id: int, member_id: str, group_instance_id: str | None,
                  now_ms: int) -> ErrorCode:
        if not valid_group_id(group_id):
            return ErrorCode.INVALID_GROUP_ID
        cg = self.consumer.groups.get(group_id)
        if cg is not None:
            return self.consumer.classic_heartbeat(cg, generation_id, member_id, group_instance_id, now_ms)
        g = self.classic.groups.get(group_id)
        if g is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        return self.classic.heartbeat(g, generation_id, member_id, group_instance_id, now_ms)

    def leave_group(self, group_id: str, members: list[tuple[str, str | None]], now_ms: int,
                    reason: str | None = None) -> tuple[ErrorCode, list[ErrorCode]]:
        if not valid_group_id(group_id):
            return ErrorCode.INVALID_GROUP_ID, []
        cg = self.consumer.groups.get(group_id)
        if cg is not None:
            return ErrorCode.NONE, [err for _, err in self.consumer.classic_leave(cg, members, now_ms)]
        g = self.classic.groups.get(group_id)
        if g is None:
            return ErrorCode.NONE, [ErrorCode.UNKNOWN_MEMBER_ID for _ in members]
        return self.classic.leave(g, members, now_ms, reason)

    # ================================================ ConsumerGroupHeartbeat, Describe
    def consumer_heartbeat(self, version: int, group_id: str, member_id: str, member_epoch: int,
                           instance_id: str | None, rack_id: str | None, rebalance_timeout_ms: int,
                           subscribed_topic_names, subscribed_topic_regex, server_assignor, topic_partitions,
                           client_id: str, client_host: str, now_ms: int, describable=None) -> dict:
        return self.consumer.heartbeat(version, group_id, member_id, member_epoch, instance_id, rack_id,
                                       rebalance_timeout_ms, subscribed_topic_names, subscribed_topic_regex,
                                       server_assignor, topic_partitions, client_id, client_host, now_ms,
                                       describable)

    def consumer_describe(self, group_id: str, ops: int) -> dict:
        return self.consumer.describe(group_id, ops)

    # ====================================================== List/Describe/Delete
    def list_groups(self, states_filter=None, types_filter=None) -> list[dict]:
        states = {s.lower() for s in states_filter or []}
        types = {t.lower() for t in types_filter or []}
        entries = [self.classic.list_entry(g, states, types) for g in self.classic.groups.values()]
        entries += [self.consumer.list_entry(cg, states, types) for cg in self.consumer.groups.values()]
        return [e for e in entries if e is not None]

    def describe_group(self, group_id: str) -> dict | None:
        """Kafka's GroupSummary of a classic group; None when there is none."""
        g = self.classic.groups.get(group_id)
        if g is None or g.state == GroupState.DEAD:
            return None
        return self.classic.describe(g)

    def delete_groups(self, group_ids: list[str], now_ms: int) -> dict[str, ErrorCode]:
        out = {}
        for gid in group_ids:
            if not valid_group_id(gid, allow_empty=True):
                out[gid] = ErrorCode.INVALID_GROUP_ID
                continue
            # expired sessions are evaluated now, not at the next timer tick (as Kafka)
            self._tick_group(gid, now_ms)
            cg = self.consumer.groups.get(gid)
            g = self.classic.groups.get(gid)
            if cg is None and (g is None or g.state == GroupState.DEAD):
                out[gid] = ErrorCode.GROUP_ID_NOT_FOUND
                continue
            if (cg is not None and cg.members) or (g is not None and (g.state != GroupState.EMPTY or g.members)):
                out[gid] = ErrorCode.NON_EMPTY_GROUP
                continue
            try:
                self.log.append(gid, self._group_tombstones(gid, list(self.offsets.of(gid))), now_ms)
            except GroupWriteError as e:
                out[gid] = e.code
                continue
            self._remove_group(gid, now_ms)
            log.info("group %s deleted", gid)
            out[gid] = ErrorCode.NONE
        return out

    def _group_tombstones(self, group_id: str, tps: list[TopicPartition]) -> list:
        """The records that remove a group: its offsets' tombstones (those of ``tps``), its
        consumer group records' and its group metadata's."""
        records = self.offsets.tombstones(group_id, tps)
        if group_id in self.consumer.groups:
            records += [(cg_key(CG_TARGET_META, group_id), None), (cg_key(CG_METADATA, group_id), None)]
        records.append((group_metadata_key(group_id), None))
        return records

    def _remove_group(self, group_id: str, now_ms: int) -> None:
        g = self.classic.groups.pop(group_id, None)
        if g is not None:
            g.transition(GroupState.DEAD, now_ms)
        self.consumer.groups.pop(group_id, None)
        self.offsets.remove_group(group_id)

    # =========================================================== OffsetCommit
    def commit_offsets(self, group_id: str, member_id: str, group_instance_id: str | None, generation_id: int,
                       offsets: list[tuple[TopicPartition, OffsetValue]], now_ms: int,
                       api_version: int = 9) -> list[ErrorCode]:
        """``offsets`` in request order, one partition possibly more than once (Kafka answers and
        writes each entry: the last accepted one stays); the answer is one error per entry."""
        def all_(err):
            return [err] * len(offsets)
        if not valid_group_id(group_id, allow_empty=True):
            return all_(ErrorCode.INVALID_GROUP_ID)
        member_id = member_id or ""
        cg = self.consumer.groups.get(group_id)
        if cg is not None:
            err = self.consumer.validate_commit(cg, member_id, generation_id, False, api_version)
            if err != ErrorCode.NONE:
                return all_(err)
            return self.offsets.commit(group_id, offsets, now_ms)
        g = self.classic.groups.get(group_id)
        if g is None:
            if generation_id >= 0:
                # a commit from a generation this coordinator never had; v9 says so plainly
                return all_(ErrorCode.GROUP_ID_NOT_FOUND if api_version >= 9 else ErrorCode.ILLEGAL_GENERATION)
            g = self.classic.get_or_create(group_id, now_ms)  # a "simple" group: offsets only
        err = validate_commit(g, member_id, group_instance_id, generation_id)
        if err != ErrorCode.NONE:
            return all_(err)
        if g.has(member_id):
            g.members[member_id].last_heartbeat_ms = now_ms
        return self.offsets.commit(group_id, offsets, now_ms)

    def txn_commit_offsets(self, group_id: str, producer_id: int, producer_epoch: int, member_id: str,
                           group_instance_id: str | None, generation_id: int,
                           offsets: list[tuple[TopicPartition, OffsetValue]], now_ms: int) -> list[ErrorCode]:
        """TxnOffsetCommit; ``offsets`` and the answer as in commit_offsets."""
        def all_(err):
            return [err] * len(offsets)
        if not valid_group_id(group_id):
            return all_(ErrorCode.INVALID_GROUP_ID)
        member_id = member_id or ""
        cg = self.consumer.groups.get(group_id)
        if cg is not None:
            if not (member_id == "" and generation_id < 0):  # a producer without group metadata
                err = self.consumer.validate_commit(cg, member_id, generation_id, True, 9)
                if err != ErrorCode.NONE:
                    return all_(err)
            return self.offsets.commit(group_id, offsets, now_ms, producer_id, producer_epoch)
        g = self.classic.groups.get(group_id)
        if g is None:
            if generation_id >= 0:
                return all_(ErrorCode.ILLEGAL_GENERATION)  # a generation this coordinator never had
            g = self.classic.get_or_create(group_id, now_ms)  # a "simple" group: offsets only
        # KIP-447: a zombie's commit is fenced by its member id, instance id and generation
        err = validate_commit(g, member_id, group_instance_id, generation_id, transactional=True)
        if err != ErrorCode.NONE:
            return all_(err)
        return self.offsets.commit(group_id, offsets, now_ms, producer_id, producer_epoch)

    def complete_transaction(self, offsets_partition: int, producer_id: int, commit: bool) -> None:
        """The notification that a transaction completed: its COMMIT/ABORT marker for
        producer_id is in __consumer_offsets partition `offsets_partition`, so its pending
        offsets there become committed, or go."""
        self.offsets.complete_transaction(offsets_partition, producer_id, commit)

    # ============================================================ OffsetFetch
    def fetch_offsets(self, group_id: str, partitions: list[TopicPartition] | None, require_stable: bool,
                      member_id: str | None = None, member_epoch: int = -1
                      ) -> tuple[ErrorCode, list[tuple[TopicPartition, OffsetValue | None, ErrorCode]]]:
        """(group error, [(tp, committed or None, partition error)]). `partitions`
        None means every partition with a committed offset."""
        if not valid_group_id(group_id, allow_empty=True):
            return ErrorCode.INVALID_GROUP_ID, []
        cg = self.consumer.groups.get(group_id)
        g = self.classic.groups.get(group_id)
        if cg is None and (g is None or g.state == GroupState.DEAD):
            return ErrorCode.NONE, [(tp, None, ErrorCode.NONE) for tp in partitions or []]
        if cg is not None:
            err = self.consumer.validate_fetch(cg, member_id, member_epoch)
            if err != ErrorCode.NONE:
                return err, []
        return ErrorCode.NONE, self.offsets.fetch(group_id, partitions, require_stable)

    # =========================================================== OffsetDelete
    def delete_offsets(self, group_id: str, partitions: list[TopicPartition], now_ms: int
                       ) -> tuple[ErrorCode, dict[TopicPartition, ErrorCode]]:
        if not valid_group_id(group_id):
            return ErrorCode.INVALID_GROUP_ID, {}
        cg = self.consumer.groups.get(group_id)
        g = self.classic.groups.get(group_id)
        if cg is None and (g is None or g.state == GroupState.DEAD):
            return ErrorCode.GROUP_ID_NOT_FOUND, {}
        result: dict[TopicPartition, ErrorCode] = {}
        if cg is not None and cg.members:
            subscribed = self.consumer.subscribed_topic_names(cg)
        elif cg is not None or g.state == GroupState.EMPTY:
            subscribed = set()
        elif g.protocol_type == "consumer":
            subscribed = g.subscribed_topics()
        else:
            return ErrorCode.NON_EMPTY_GROUP, {}
        eligible = []
        for tp in partitions:
            if subscribed is None or tp[0] in subscribed:
                result[tp] = ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
            else:
                eligible.append(tp)
        err = self.offsets.delete(group_id, eligible, now_ms)
        if err != ErrorCode.NONE:
            return err, {}
        for tp in eligible:
            result[tp] = ErrorCode.NONE
        return ErrorCode.NONE, result

    def on_topic_deleted(self, topic: str, now_ms: int) -> None:
        self.offsets.on_topic_deleted(topic, now_ms)

    # ================================================================ timers
    def tick(self, now_ms: int) -> None:
        """Advance every timer to now_ms (the broker calls this periodically)."""
        for gid in list(self.classic.groups):
            self._tick_group(gid, now_ms)
        for gid in list(self.consumer.groups):
            self._tick_group(gid, now_ms)
        if now_ms >= self._next_offsets_cleanup_ms:
            self._next_offsets_cleanup_ms = now_ms + self.config.offsets_retention_check_interval_ms
            self.expire_offsets(now_ms)

    def _tick_group(self, group_id: str, now_ms: int) -> None:
        if group_id in self.consumer.groups:
            self.consumer.tick_group(group_id, now_ms)
            return
        g = self.classic.groups.get(group_id)
        if g is not None:
            self.classic.tick_group(g, now_ms)

    def expire_offsets(self, now_ms: int) -> None:
        """offsets.retention.minutes (or v2-4's retention_time_ms), as Kafka's
        OffsetMetadataManager.cleanupExpiredOffsets: offsets of topics the group does not
        subscribe to, without a pending transactional offset; a group left with no offsets,
        no open transaction and no members is removed."""
        groups = [(gid, self.classic.offset_expiry(g), bool(g.members) or g.state != GroupState.EMPTY)
                  for gid, g in self.classic.groups.items() if g.state != GroupState.DEAD]
        groups += [(gid, self.consumer.offset_expiry(cg), bool(cg.members))
                   for gid, cg in self.consumer.groups.items()]
        for gid, rule, active in groups:
            if rule is None:
                continue
            base, subscribed = rule
            expired = self.offsets.expired(gid, now_ms, base, subscribed)
            remove_group = (not active and not self.offsets.has_open_transactions(gid)
                            and len(expired) == len(self.offsets.of(gid)))
            records = self._group_tombstones(gid, expired) if remove_group else self.offsets.tombstones(gid, expired)
            if not records:
                continue
            try:
                self.log.append(gid, records, now_ms)
            except GroupWriteError as e:
                log.warning("group %s: could not expire offsets: %s", gid, e.code.name)
                continue
            self.offsets.drop(gid, expired)
            if expired:
                log.info("group %s: expired %d offsets", gid, len(expired))
            if remove_group:
                self._remove_group(gid, now_ms)
                log.info("group %s: removed (empty, no offsets)", gid)

    # ================================================================ loading
    def load(self, now_ms: int) -> None:
        """Rebuild groups, committed and pending transactional offsets from the log."""
        offsets: dict[str, dict[TopicPartition, OffsetValue]] = {}
        group_records: dict[str, GroupRecord] = {}
        pending: dict[str, dict[int, dict[TopicPartition, OffsetValue]]] = {}
        consumer_groups: dict[str, ConsumerGroup] = {}
        store = self.log.store
        for p in range(store.num_partitions):
            # producer id -> group -> tp -> value, for transactions open on this partition
            open_txns: dict[int, dict[str, dict[TopicPartition, OffsetValue]]] = {}
            for batch in store.read_batches(p):
                if batch.is_control:
                    txn = open_txns.pop(batch.producer_id, None)
                    if txn and batch.control_type == CONTROL_COMMIT:
                        for gid, offs in txn.items():
                            cur = offsets.setdefault(gid, {})
                            for tp, v in offs.items():
                                if tp not in cur or cur[tp].older_than(v):
                                    cur[tp] = v
                    continue
                for offset, key, value in batch.records:
                    if key is None:
                        continue
                    try:
                        k = parse_key(key)
                    except Exception:  # noqa: BLE001
                        log.warning("__consumer_offsets-%d offset %d: unreadable key", p, offset)
                        continue
                    if isinstance(k, OffsetKey):
                        tp = (k.topic, k.partition)
                        if batch.is_transactional:
                            if value is not None:
                                v = parse_offset_value(value)
                                v.log_offset = offset
                                open_txns.setdefault(batch.producer_id, {}).setdefault(k.group, {})[tp] = v
                        elif value is None:
                            offsets.get(k.group, {}).pop(tp, None)
                            for by_group in open_txns.values():  # a tombstone drops pending offsets too
                                by_group.get(k.group, {}).pop(tp, None)
                        else:
                            v = parse_offset_value(value)
                            v.log_offset = offset
                            offsets.setdefault(k.group, {})[tp] = v
                    elif isinstance(k, GroupKey):
                        if value is None:
                            group_records.pop(k.group, None)
                        else:
                            group_records[k.group] = parse_group_value(value)
                            consumer_groups.pop(k.group, None)
                    elif isinstance(k, ConsumerGroupKey):
                        try:
                            ConsumerGroupManager.load_record(consumer_groups, k, value)
                        except Exception:  # noqa: BLE001
                            log.warning("__consumer_offsets-%d offset %d: unreadable consumer group record", p, offset)
            for pid, by_group in open_txns.items():
                for gid, offs in by_group.items():
                    pending.setdefault(gid, {})[pid] = offs
        for gid in {gid for gid, o in offsets.items() if o} | set(group_records) | set(pending) | set(consumer_groups):
            cg = consumer_groups.get(gid)
            if cg is not None and (cg.group_epoch > 0 or cg.members):
                self.consumer.load_group(cg, now_ms)
            else:
                self.classic.load_group(gid, group_records.get(gid), now_ms)
            if offsets.get(gid):
                self.offsets.committed[gid] = offsets[gid]
            if gid in pending:
                self.offsets.pending[gid] = pending[gid]
        # Kafka schedules the first group metadata cleanup one retention check interval after the
        # load (GroupCoordinatorShard.onLoaded), not at once: an empty group without offsets
        # outlives a restart until then
        self._next_offsets_cleanup_ms = now_ms + self.config.offsets_retention_check_interval_ms
        log.info("loaded %d groups from __consumer_offsets", len(self.classic.groups) + len(self.consumer.groups))
