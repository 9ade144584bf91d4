"""The classic group coordinator (Kafka's GroupCoordinator / GroupMetadataManager).

Sans-I/O in the sense that matters here: every entry point is a plain method
taking `now_ms`; nothing sleeps, nothing awaits. JoinGroup and SyncGroup return
a `Waiter` the broker waits on; timers (session expiry, rebalance and sync
timeouts, the initial rebalance delay, offset expiry) advance when the broker
calls `tick(now_ms)`. Persistence goes through an `OffsetsStore` (the
`__consumer_offsets` topic); appends are synchronous, and in-memory state is
changed only after they succeed.
"""
from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass

from minikafka.protocol.errors import ErrorCode, KafkaError

from .consumer import UNREVOKED_PARTITIONS
from .consumer_coordinator import ConsumerGroupMixin
from .group import Group, GroupState, Member, Waiter
from .migration import GroupMigrationMixin
from .records import (CG_METADATA, CG_TARGET_META, ConsumerGroupKey, cg_key, GroupKey, GroupRecord, MemberRecord, OffsetKey, OffsetValue, group_metadata_key,
                      group_metadata_value, offset_commit_key, offset_commit_value, parse_group_value,
                      parse_key, parse_offset_value, partition_for)
from .store import CONTROL_COMMIT, OffsetsStore

log = logging.getLogger("minikafka.group")

E = ErrorCode
S = GroupState
TP = tuple  # (topic, partition)

NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000  # Kafka's GroupCoordinator.NewMemberJoinTimeoutMs


@dataclass
class GroupConfig:
    initial_rebalance_delay_ms: int = 3000
    min_session_timeout_ms: int = 6000
    max_session_timeout_ms: int = 1800000
    offsets_retention_ms: int = 7 * 24 * 3600 * 1000
    offsets_retention_check_interval_ms: int = 600000
    offset_metadata_max_bytes: int = 4096
    # KIP-848 (group.consumer.*, group.coordinator.rebalance.protocols)
    rebalance_protocols: tuple = ("classic", "consumer", "streams")
    consumer_heartbeat_interval_ms: int = 5000
    consumer_session_timeout_ms: int = 45000
    consumer_assignors: tuple = ("uniform", "range")
    consumer_max_size: int = 2147483647
    migration_policy: str = "bidirectional"  # group.consumer.migration.policy

    @classmethod
    def from_broker_config(cls, config) -> "GroupConfig":
        return cls(
            initial_rebalance_delay_ms=config["group.initial.rebalance.delay.ms"],
            min_session_timeout_ms=config["group.min.session.timeout.ms"],
            max_session_timeout_ms=config["group.max.session.timeout.ms"],
            offsets_retention_ms=config["offsets.retention.minutes"] * 60_000,
            offsets_retention_check_interval_ms=config["offsets.retention.check.interval.ms"],
            rebalance_protocols=tuple(config["group.coordinator.rebalance.protocols"]),
            consumer_heartbeat_interval_ms=config["group.consumer.heartbeat.interval.ms"],
            consumer_session_timeout_ms=config["group.consumer.session.timeout.ms"],
            consumer_assignors=tuple(config["group.consumer.assignors"]),
            consumer_max_size=config["group.consumer.max.size"],
            migration_policy=config["group.consumer.migration.policy"].lower(),
        )


def _join_error(member_id: str, error: ErrorCode) -> dict:
    return {"error_code": int(error), "member_id": member_id, "generation_id": -1, "protocol_type": None,
            "protocol_name": None, "leader": "", "members": [], "skip_assignment": False}


def _sync_result(error: ErrorCode, group: Group | None = None, assignment: bytes = b"") -> dict:
    return {"error_code": int(error),
            "protocol_type": group.protocol_type if group and error == E.NONE else None,
            "protocol_name": group.protocol_name if group and error == E.NONE else None,
            "assignment": assignment}


def _done(result) -> Waiter:
    w = Waiter()
    w.complete(result)
    return w


def _storage_error(exc: Exception) -> ErrorCode:
    """Kafka's mapping of append errors for coordinator writes."""
    if isinstance(exc, KafkaError):
        code = exc.code
        if code in (E.UNKNOWN_TOPIC_OR_PARTITION, E.NOT_ENOUGH_REPLICAS, E.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
                    E.REQUEST_TIMED_OUT):
            return E.COORDINATOR_NOT_AVAILABLE
        if code == E.NOT_LEADER_OR_FOLLOWER:
            return E.NOT_COORDINATOR
        if code in (E.MESSAGE_TOO_LARGE, E.RECORD_LIST_TOO_LARGE, E.INVALID_FETCH_SIZE):
            return E.INVALID_COMMIT_OFFSET_SIZE
        return code
    log.exception("append to __consumer_offsets failed")
    return E.UNKNOWN_SERVER_ERROR


class GroupCoordinator(GroupMigrationMixin, ConsumerGroupMixin):
    def __init__(self, config: GroupConfig, store: OffsetsStore, topics=None, group_configs=None):
        self.config = config
        self.store = store
        # topics() -> {name: (topic id, partitions)} of the non-internal topics (KIP-848 assignment)
        self.topics = topics or (lambda: {})
        # group_configs(group id) -> {key: value} of its GROUP config overrides (KIP-848)
        self._group_configs = group_configs or (lambda gid: {})
        self.groups: dict[str, Group] = {}
        self._next_offsets_cleanup_ms = 0
        self.loaded = False

    # ================================================================ helpers
    def group_config(self, group_id: str, key: str):
        """A GROUP config's value for this group: its override, else the broker's default."""
        value = self._group_configs(group_id).get(key)
        if value is not None:
            return value
        return {"consumer.session.timeout.ms": self.config.consumer_session_timeout_ms,
                "consumer.heartbeat.interval.ms": self.config.consumer_heartbeat_interval_ms}[key]

    def partition_for(self, group_id: str) -> int:
        return partition_for(group_id, self.store.num_partitions)

    def group(self, group_id: str) -> Group | None:
        return self.groups.get(group_id)

    def _get_or_create(self, group_id: str, now_ms: int) -> Group:
        g = self.groups.get(group_id)
        if g is None:
            g = self.groups[group_id] = Group(group_id, state_timestamp_ms=now_ms)
        return g

    def _append(self, group_id: str, records, now_ms: int, producer_id: int = -1, producer_epoch: int = -1,
                transactional: bool = False) -> int:
        return self.store.append(self.partition_for(group_id), records, now_ms, producer_id, producer_epoch,
                                 transactional)

    def _group_record(self, g: Group, assignment: dict[str, bytes] | None = None) -> bytes:
        members = []
        for m in g.members.values():
            try:
                sub = m.metadata(g.protocol_name) if g.protocol_name is not None else b""
            except KeyError:
                sub = b""
            members.append(MemberRecord(
                member_id=m.member_id, group_instance_id=m.group_instance_id, client_id=m.client_id,
                client_host=m.client_host, rebalance_timeout=m.rebalance_timeout_ms,
                session_timeout=m.session_timeout_ms, subscription=sub,
                assignment=(assignment or {}).get(m.member_id, m.assignment) if assignment is not None
                else m.assignment))
        return group_metadata_value(GroupRecord(
            protocol_type=g.protocol_type or "", generation=g.generation_id, protocol=g.protocol_name,
            leader=g.leader_id, current_state_timestamp=g.state_timestamp_ms, members=members))

    def _store_group(self, g: Group, now_ms: int, assignment: dict[str, bytes] | None = None) -> ErrorCode:
        try:
            self._append(g.group_id, [(group_metadata_key(g.group_id), self._group_record(g, assignment))], now_ms)
        except Exception as e:  # noqa: BLE001 - mapped to a Kafka error
            return _storage_error(e)
        return E.NONE

    @staticmethod
    def _validate_group_id(group_id: str | None, allow_empty: bool = False) -> bool:
        """Kafka's isValidGroupId: OffsetCommit/OffsetFetch/DescribeGroups/DeleteGroups
        accept an empty id, everything else needs a non-empty one."""
        return group_id is not None and (allow_empty or group_id != "")

    # ============================================================= JoinGroup
    def join_group(self, group_id: str, member_id: str, group_instance_id: str | None, client_id: str,
                   client_host: str, session_timeout_ms: int, rebalance_timeout_ms: int, protocol_type: str,
                   protocols: list[tuple[str, bytes]], require_known_member_id: bool, now_ms: int,
                   reason: str | None = None, supports_skip_assignment: bool = False) -> Waiter:
        member_id = member_id or ""
        if not self._validate_group_id(group_id):
            return _done(_join_error(member_id, E.INVALID_GROUP_ID))
        if not (self.config.min_session_timeout_ms <= session_timeout_ms <= self.config.max_session_timeout_ms):
            return _done(_join_error(member_id, E.INVALID_SESSION_TIMEOUT))
        if rebalance_timeout_ms < 0:
            rebalance_timeout_ms = session_timeout_ms
        is_unknown = member_id == ""
        g = self.groups.get(group_id)
        if g is not None and g.consumer is not None:
            if g.consumer.members:
                return _done(self.classic_join_to_consumer(
                    g, member_id, group_instance_id, client_id, client_host, session_timeout_ms,
                    rebalance_timeout_ms, protocol_type, list(protocols), require_known_member_id, now_ms))
            # an empty consumer group becomes a classic group again (its offsets stay)
            try:
                self._append(group_id, [(cg_key(CG_TARGET_META, group_id), None),
                                        (cg_key(CG_METADATA, group_id), None)], now_ms)
            except Exception as e:  # noqa: BLE001
                return _done(_join_error(member_id, _storage_error(e)))
            g.generation_id = g.consumer.group_epoch
            g.consumer = None
            g.protocol_type = None
        new_group = g is None
        if new_group:
            if not is_unknown:
                return _done(_join_error(member_id, E.UNKNOWN_MEMBER_ID))
            g = self._get_or_create(group_id, now_ms)
        args = (client_id, client_host, session_timeout_ms, rebalance_timeout_ms, protocol_type, list(protocols))
        if is_unknown:
            w = self._join_new_member(g, group_instance_id, require_known_member_id, args, now_ms,
                                      supports_skip_assignment)
        else:
            w = self._join_current_member(g, member_id, group_instance_id, args, now_ms)
        if new_group:
            # Kafka commits a group the join created with an empty GroupMetadata record, whatever
            # the join answered (MEMBER_ID_REQUIRED, INCONSISTENT_GROUP_PROTOCOL included): the
            # group then exists, Empty until a member's join completes, also after a restart
            record = group_metadata_value(GroupRecord(
                protocol_type=g.protocol_type or "", generation=0, protocol=None, leader=None,
                current_state_timestamp=now_ms, members=[]))
            try:
                self._append(group_id, [(group_metadata_key(group_id), record)], now_ms)
            except Exception as e:  # noqa: BLE001 - mapped to a Kafka error
                # the group was never written: it goes (Kafka reverts to the snapshot before it)
                self.groups.pop(group_id, None)
                w.complete(_join_error(member_id, _storage_error(e)))
        return w

    def _join_new_member(self, g: Group, instance_id, require_known, args, now_ms, skip_ok) -> Waiter:
        client_id, client_host, session_ms, rebalance_ms, protocol_type, protocols = args
        if g.state == S.DEAD:
            return _done(_join_error("", E.COORDINATOR_NOT_AVAILABLE))
        if not g.supports_protocols(protocol_type, protocols):
            return _done(_join_error("", E.INCONSISTENT_GROUP_PROTOCOL))
        new_id = f"{instance_id if instance_id is not None else client_id}-{uuid.uuid4()}"
        if instance_id is not None:
            old_id = g.static_member_id(instance_id)
            if old_id is not None:
                return self._update_static_member(g, old_id, new_id, instance_id, args, now_ms, skip_ok)
            return self._add_member_and_rebalance(g, new_id, instance_id, args, now_ms)
        if require_known:
            # KIP-394: hand out the id; the member joins again with it
            g.pending_members[new_id] = now_ms + session_ms
            return _done(_join_error(new_id, E.MEMBER_ID_REQUIRED))
        return self._add_member_and_rebalance(g, new_id, None, args, now_ms)

    def _join_current_member(self, g: Group, member_id: str, instance_id, args, now_ms) -> Waiter:
        client_id, client_host, session_ms, rebalance_ms, protocol_type, protocols = args
        if g.state == S.DEAD:
            return _done(_join_error(member_id, E.COORDINATOR_NOT_AVAILABLE))
        if not g.supports_protocols(protocol_type, protocols):
            return _done(_join_error(member_id, E.INCONSISTENT_GROUP_PROTOCOL))
        if member_id in g.pending_members:
            del g.pending_members[member_id]
            return self._add_member_and_rebalance(g, member_id, instance_id, args, now_ms)
        if g.is_static_member_fenced(member_id, instance_id):
            return _done(_join_error(member_id, E.FENCED_INSTANCE_ID))
        if not g.has(member_id) or (instance_id is not None and instance_id not in g.static_members):
            return _done(_join_error(member_id, E.UNKNOWN_MEMBER_ID))
        m = g.members[member_id]
        if g.state == S.PREPARING_REBALANCE:
            return self._update_member_and_rebalance(g, m, args, now_ms)
        if g.state == S.COMPLETING_REBALANCE:
            if m.matches(protocols):
                # a retry of a JoinGroup whose response was lost: same generation again
                m.last_heartbeat_ms = now_ms
                return _done(self._join_result(g, m, members=g.leader_id == member_id))
            return self._update_member_and_rebalance(g, m, args, now_ms)
        if g.state == S.STABLE:
            if g.leader_id == member_id or not m.matches(protocols):
                # the leader rejoining forces a rebalance (topic metadata may have changed)
                return self._update_member_and_rebalance(g, m, args, now_ms)
            m.last_heartbeat_ms = now_ms
            return _done(self._join_result(g, m, members=False))
        return _done(_join_error(member_id, E.UNKNOWN_MEMBER_ID))

    def _join_result(self, g: Group, m: Member, members: bool, leader: str | None = None,
                     skip_assignment: bool = False) -> dict:
        return {
            "error_code": 0, "generation_id": g.generation_id, "protocol_type": g.protocol_type,
            "protocol_name": g.protocol_name, "leader": leader if leader is not None else (g.leader_id or ""),
            "member_id": m.member_id, "skip_assignment": skip_assignment,
            "members": self._member_metadata(g) if members else [],
        }

    def _member_metadata(self, g: Group) -> list[dict]:
        out = []
        for m in g.members.values():
            try:
                meta = m.metadata(g.protocol_name)
            except KeyError:
                meta = b""
            out.append({"member_id": m.member_id, "group_instance_id": m.group_instance_id, "metadata": meta})
        return out

    def _add_member_and_rebalance(self, g: Group, member_id: str, instance_id, args, now_ms) -> Waiter:
        client_id, client_host, session_ms, rebalance_ms, protocol_type, protocols = args
        m = Member(member_id, instance_id, client_id, client_host, rebalance_ms, session_ms, protocol_type,
                   protocols, is_new=True, last_heartbeat_ms=now_ms)
        w = m.join_waiter = Waiter()
        if g.state == S.PREPARING_REBALANCE and g.generation_id == 0:
            g.new_member_added = True
        g.add(m)
        log.info("group %s: member %s joins (%s)", g.group_id, member_id, g.state.value)
        self._maybe_prepare_rebalance(g, now_ms, f"adding new member {member_id}")
        return w

    def _update_member(self, m: Member, args, waiter: Waiter | None) -> None:
        client_id, client_host, session_ms, rebalance_ms, protocol_type, protocols = args
        m.protocols = protocols
        m.session_timeout_ms = session_ms
        m.rebalance_timeout_ms = rebalance_ms
        old = m.join_waiter
        m.join_waiter = waiter
        if old is not None and old is not waiter:
            # a second JoinGroup from the same member replaces the first
            old.complete(_join_error(m.member_id, E.REBALANCE_IN_PROGRESS))

    def _update_member_and_rebalance(self, g: Group, m: Member, args, now_ms) -> Waiter:
        w = Waiter()
        self._update_member(m, args, w)
        m.last_heartbeat_ms = now_ms
        self._maybe_prepare_rebalance(g, now_ms, f"member {m.member_id} rejoins")
        return w

    def _replace_static_member(self, g: Group, instance_id: str, old_id: str, new_id: str) -> Member:
        m = g.members.pop(old_id)
        if m.join_waiter is not None:
            w, m.join_waiter = m.join_waiter, None
            w.complete(_join_error(old_id, E.FENCED_INSTANCE_ID))
        if m.sync_waiter is not None:
            w, m.sync_waiter = m.sync_waiter, None
            w.complete(_sync_result(E.FENCED_INSTANCE_ID))
        m.member_id = new_id
        g.members[new_id] = m
        if g.leader_id == old_id:
            g.leader_id = new_id
        g.static_members[instance_id] = new_id
        if old_id in g.pending_sync:
            g.pending_sync.discard(old_id)
            g.pending_sync.add(new_id)
        return m

    def _update_static_member(self, g: Group, old_id, new_id, instance_id, args, now_ms, skip_ok) -> Waiter:
        current_leader = g.leader_id
        m = self._replace_static_member(g, instance_id, old_id, new_id)
        m.last_heartbeat_ms = now_ms
        old_args = (m.protocols, m.session_timeout_ms, m.rebalance_timeout_ms)
        w = Waiter()
        self._update_member(m, args, w)
        log.info("group %s: static member %s replaces %s as %s (%s)", g.group_id, new_id, old_id, instance_id,
                 g.state.value)
        if g.state == S.STABLE:
            if g.protocol_name == g.select_protocol():
                err = self._store_group(g, now_ms)
                if err != E.NONE:
                    m.join_waiter = None
                    m.protocols, m.session_timeout_ms, m.rebalance_timeout_ms = old_args
                    self._replace_static_member(g, instance_id, new_id, old_id)
                    w.complete(_join_error(new_id, err))
                    return w
                m.join_waiter = None
                if skip_ok:
                    # KIP-814 (v9): the replaced leader is told it leads, with the members, and to
                    # skip computing an assignment the stable group would not take
                    is_leader = g.leader_id == new_id
                    w.complete(self._join_result(g, m, members=is_leader, skip_assignment=is_leader))
                else:
                    # before v9, the *old* leader id, so that a replaced leader does not compute
                    # an assignment
                    w.complete(self._join_result(g, m, members=False, leader=current_leader))
                return w
            self._maybe_prepare_rebalance(g, now_ms, f"static member {new_id} changed protocols")
        elif g.state == S.COMPLETING_REBALANCE:
            self._prepare_rebalance(g, now_ms, f"static member {new_id} rejoined while completing a rebalance")
        elif g.state == S.PREPARING_REBALANCE:
            self._check_join(g, now_ms)
        return w

    # ------------------------------------------------------------ rebalance
    def _maybe_prepare_rebalance(self, g: Group, now_ms: int, reason: str) -> None:
        if g.state in (S.STABLE, S.COMPLETING_REBALANCE, S.EMPTY):
            self._prepare_rebalance(g, now_ms, reason)
        else:
            self._check_join(g, now_ms)

    def _prepare_rebalance(self, g: Group, now_ms: int, reason: str) -> None:
        if g.state == S.COMPLETING_REBALANCE:
            self._reset_and_propagate_assignment_error(g, E.REBALANCE_IN_PROGRESS)
        g.pending_sync.clear()
        rebalance_ms = g.max_rebalance_timeout_ms()
        if g.state == S.EMPTY:
            delay = self.config.initial_rebalance_delay_ms
            g.initial_join = True
            g.join_deadline_ms = now_ms + delay
            g.initial_remaining_ms = max(rebalance_ms - delay, 0)
            g.new_member_added = False
        else:
            g.initial_join = False
            g.join_deadline_ms = now_ms + rebalance_ms
        log.info("group %s: preparing to rebalance (generation %d): %s", g.group_id, g.generation_id, reason)
        g.transition(S.PREPARING_REBALANCE, now_ms)
        self._check_join(g, now_ms)

    def _reset_and_propagate_assignment_error(self, g: Group, error: ErrorCode) -> None:
        for m in g.members.values():
            m.assignment = b""
            if m.sync_waiter is not None:
                w, m.sync_waiter = m.sync_waiter, None
                w.complete(_sync_result(error))

    def _check_join(self, g: Group, now_ms: int) -> None:
        """DelayedJoin / InitialDelayedJoin: complete the join phase when due."""
        if g.state != S.PREPARING_REBALANCE:
            return
        if g.initial_join:
            if now_ms < g.join_deadline_ms:
                return
            if g.new_member_added and g.initial_remaining_ms > 0:
                delay = min(self.config.initial_rebalance_delay_ms, g.initial_remaining_ms)
                g.initial_remaining_ms = max(g.initial_remaining_ms - delay, 0)
                g.new_member_added = False
                g.join_deadline_ms = now_ms + delay
                if delay > 0:
                    return
            self._complete_join(g, now_ms)
        elif g.all_joined() or now_ms >= g.join_deadline_ms:
            self._complete_join(g, now_ms)

    def _complete_join(self, g: Group, now_ms: int) -> None:
        for mid, m in list(g.members.items()):
            if m.join_waiter is None and m.group_instance_id is None:
                log.info("group %s: removing member %s which did not rejoin", g.group_id, mid)
                self._remove_member(g, mid)
        if g.state == S.DEAD:
            return
        if g.members and not self._elect_joined_leader(g):
            # nobody rejoined (only static members that stayed away): wait another round
            log.warning("group %s: no member rejoined; waiting another rebalance timeout", g.group_id)
            g.initial_join = False
            g.join_deadline_ms = now_ms + g.max_rebalance_timeout_ms()
            return
        g.generation_id += 1
        g.pending_sync.clear()
        if not g.members:
            g.protocol_name = None
            g.leader_id = None
            g.transition(S.EMPTY, now_ms)
            log.info("group %s: generation %d is empty", g.group_id, g.generation_id)
            err = self._store_group(g, now_ms, {})
            if err != E.NONE:
                log.warning("group %s: failed to store empty group: %s", g.group_id, err.name)
            return
        g.protocol_name = g.select_protocol()
        g.transition(S.COMPLETING_REBALANCE, now_ms)
        log.info("group %s: generation %d with %d members, protocol %s, leader %s", g.group_id, g.generation_id,
                 len(g.members), g.protocol_name, g.leader_id)
        for m in g.members.values():
            m.last_heartbeat_ms = now_ms
            m.is_new = False
            g.pending_sync.add(m.member_id)
            if m.join_waiter is not None:
                w, m.join_waiter = m.join_waiter, None
                w.complete(self._join_result(g, m, members=g.leader_id == m.member_id))
        g.sync_deadline_ms = now_ms + g.max_rebalance_timeout_ms()

    @staticmethod
    def _elect_joined_leader(g: Group) -> bool:
        if g.leader_id is None:
            return False
        leader = g.members.get(g.leader_id)
        if leader is not None and leader.join_waiter is not None:
            return True
        for mid, m in g.members.items():
            if m.join_waiter is not None:
                g.leader_id = mid
                return True
        return False

    def _remove_member(self, g: Group, member_id: str) -> None:
        m = g.remove(member_id)
        if m is None:
            return
        if m.join_waiter is not None:
            # Kafka answers a removed member's waiting JoinGroup without a member id, so that the
            # consumer joins again as a new member
            w, m.join_waiter = m.join_waiter, None
            w.complete(_join_error("", E.UNKNOWN_MEMBER_ID))
        if m.sync_waiter is not None:
            w, m.sync_waiter = m.sync_waiter, None
            w.complete(_sync_result(E.UNKNOWN_MEMBER_ID))

    def _remove_member_and_update_group(self, g: Group, member_id: str, now_ms: int, reason: str) -> None:
        self._remove_member(g, member_id)
        log.info("group %s: removed member %s (%s)", g.group_id, member_id, reason)
        if g.state in (S.STABLE, S.COMPLETING_REBALANCE):
            self._prepare_rebalance(g, now_ms, reason)
        elif g.state == S.PREPARING_REBALANCE:
            self._check_join(g, now_ms)

    # ============================================================= SyncGroup
    def sync_group(self, group_id: str, generation_id: int, member_id: str, group_instance_id: str | None,
                   protocol_type: str | None, protocol_name: str | None, assignments: dict[str, bytes],
                   now_ms: int) -> Waiter:
        if not self._validate_group_id(group_id):
            return _done(_sync_result(E.INVALID_GROUP_ID))
        g = self.groups.get(group_id)
        if g is None:
            return _done(_sync_result(E.UNKNOWN_MEMBER_ID))
        if g.consumer is not None:
            return _done(self.classic_sync_to_consumer(g, generation_id, member_id, group_instance_id,
                                                       protocol_type, protocol_name, now_ms))
        if g.state == S.DEAD:
            return _done(_sync_result(E.COORDINATOR_NOT_AVAILABLE))
        err = g.validate_member(member_id, group_instance_id)
        if err != E.NONE:
            return _done(_sync_result(err))
        if generation_id != g.generation_id:
            return _done(_sync_result(E.ILLEGAL_GENERATION))
        if (protocol_type is not None and protocol_type != g.protocol_type) or \
                (protocol_name is not None and protocol_name != g.protocol_name):
            return _done(_sync_result(E.INCONSISTENT_GROUP_PROTOCOL))
        m = g.members[member_id]
        if g.state == S.EMPTY:
            return _done(_sync_result(E.UNKNOWN_MEMBER_ID))
        if g.state == S.PREPARING_REBALANCE:
            return _done(_sync_result(E.REBALANCE_IN_PROGRESS))
        m.last_heartbeat_ms = now_ms
        g.pending_sync.discard(member_id)
        if g.state == S.STABLE:
            return _done(_sync_result(E.NONE, g, m.assignment))
        # CompletingRebalance
        w = Waiter()
        if m.sync_waiter is not None:
            m.sync_waiter.complete(_sync_result(E.REBALANCE_IN_PROGRESS))
        m.sync_waiter = w
        if g.leader_id == member_id:
            full = {mid: assignments.get(mid, b"") or b"" for mid in g.members}
            err = self._store_group(g, now_ms, full)
            if err != E.NONE:
                self._reset_and_propagate_assignment_error(g, err)
                self._maybe_prepare_rebalance(g, now_ms, f"error storing the assignment: {err.name}")
                return w
            for mid, mm in g.members.items():
                mm.assignment = full[mid]
                if mm.sync_waiter is not None:
                    sw, mm.sync_waiter = mm.sync_waiter, None
                    mm.last_heartbeat_ms = now_ms
                    sw.complete(_sync_result(E.NONE, g, mm.assignment))
            g.transition(S.STABLE, now_ms)
            log.info("group %s: generation %d is stable", g.group_id, g.generation_id)
        return w

    # ============================================================= Heartbeat
    def heartbeat(self, group_id: str, generation_id: int, member_id: str, group_instance_id: str | None,
                  now_ms: int) -> ErrorCode:
        if not self._validate_group_id(group_id):
            return E.INVALID_GROUP_ID
        g = self.groups.get(group_id)
        if g is None:
            return E.UNKNOWN_MEMBER_ID
        if g.consumer is not None:
            return self.classic_heartbeat_to_consumer(g, generation_id, member_id, group_instance_id, now_ms)
        if g.state == S.DEAD:
            return E.COORDINATOR_NOT_AVAILABLE
        err = g.validate_member(member_id, group_instance_id)
        if err != E.NONE:
            return err
        if generation_id != g.generation_id:
            return E.ILLEGAL_GENERATION
        if g.state == S.EMPTY:
            return E.UNKNOWN_MEMBER_ID
        g.members[member_id].last_heartbeat_ms = now_ms
        if g.state == S.PREPARING_REBALANCE:
            return E.REBALANCE_IN_PROGRESS
        return E.NONE

    # ============================================================ LeaveGroup
    def leave_group(self, group_id: str, members: list[tuple[str, str | None]], now_ms: int,
                    reason: str | None = None) -> tuple[ErrorCode, list[ErrorCode]]:
        if not self._validate_group_id(group_id):
            return E.INVALID_GROUP_ID, []
        g = self.groups.get(group_id)
        if g is None:
            return E.NONE, [E.UNKNOWN_MEMBER_ID for _ in members]
        if g.consumer is not None:
            return E.NONE, [err for _, err in self.classic_leave_to_consumer(g, members, now_ms)]
        if g.state == S.DEAD:
            return E.COORDINATOR_NOT_AVAILABLE, []
        why = f"member left the group{': ' + reason if reason else ''}"
        errors = []
        for member_id, instance_id in members:
            if not member_id:
                # an admin's removal of a static member by its instance id alone
                current = g.static_member_id(instance_id)
                if current is None:
                    errors.append(E.UNKNOWN_MEMBER_ID)
                else:
                    self._remove_member(g, current)
                    errors.append(E.NONE)
            elif member_id in g.pending_members:
                del g.pending_members[member_id]
                errors.append(E.NONE)
            else:
                err = g.validate_member(member_id, instance_id)
                if err == E.NONE:
                    self._remove_member(g, member_id)
                errors.append(err)
        # Kafka rebalances once for the whole batch, and for a pending member's leave too
        if E.NONE in errors:
            log.info("group %s: %s", g.group_id, why)
            if g.state in (S.STABLE, S.COMPLETING_REBALANCE):
                self._prepare_rebalance(g, now_ms, why)
            elif g.state == S.PREPARING_REBALANCE:
                self._check_join(g, now_ms)
        return E.NONE, errors

    # ====================================================== List/Describe/Delete
    def list_groups(self, states_filter=None, types_filter=None) -> list[dict]:
        states = {s.lower() for s in states_filter or []}
        types = {t.lower() for t in types_filter or []}
        out = []
        for g in self.groups.values():
            if g.state == S.DEAD:
                continue
            if g.consumer is not None:
                state = g.consumer.state_name()
                if (types and "consumer" not in types) or (states and state.lower() not in states):
                    continue
                out.append({"group_id": g.group_id, "protocol_type": "consumer", "group_state": state,
                            "group_type": "consumer"})
                continue
            if types and "classic" not in types:
                continue
            if states and g.state.value.lower() not in states:
                continue
            out.append({"group_id": g.group_id, "protocol_type": g.protocol_type or "",
                        "group_state": g.state.value, "group_type": "classic"})
        return out

    def describe_group(self, group_id: str) -> dict | None:
        """Kafka's GroupSummary; None when the group does not exist."""
        g = self.groups.get(group_id)
        if g is None or g.state == S.DEAD:
            return None
        stable = g.state == S.STABLE
        members = []
        for m in g.members.values():
            meta = b""
            if stable:
                try:
                    meta = m.metadata(g.protocol_name)
                except KeyError:
                    meta = b""
            # outside Stable, Kafka leaves out the metadata but not the assignment a member holds
            assignment = m.assignment
            members.append({"member_id": m.member_id, "group_instance_id": m.group_instance_id,
                            "client_id": m.client_id, "client_host": m.client_host,
                            "member_metadata": meta, "member_assignment": assignment})
        return {"group_id": g.group_id, "group_state": g.state.value, "protocol_type": g.protocol_type or "",
                "protocol_data": (g.protocol_name or "") if stable else "", "members": members}

    def delete_groups(self, group_ids: list[str], now_ms: int) -> dict[str, ErrorCode]:
        out = {}
        for gid in group_ids:
            if not self._validate_group_id(gid, allow_empty=True):
                out[gid] = E.INVALID_GROUP_ID
                continue
            g = self.groups.get(gid)
            if g is not None and g.state != S.DEAD:
                # expired sessions are evaluated now, not at the next timer tick (as Kafka)
                self._tick_group(g, now_ms)
                g = self.groups.get(gid)
            if g is None or g.state == S.DEAD:
                out[gid] = E.GROUP_ID_NOT_FOUND
                continue
            if g.state != S.EMPTY or g.members or (g.consumer is not None and g.consumer.members):
                out[gid] = E.NON_EMPTY_GROUP
                continue
            records = [(offset_commit_key(gid, t, p), None) for (t, p) in g.offsets]
            if g.consumer is not None:
                records += [(cg_key(CG_TARGET_META, gid), None), (cg_key(CG_METADATA, gid), None)]
            records.append((group_metadata_key(gid), None))
            try:
                self._append(gid, records, now_ms)
            except Exception as e:  # noqa: BLE001
                out[gid] = _storage_error(e)
                continue
            g.transition(S.DEAD, now_ms)
            del self.groups[gid]
            log.info("group %s deleted", gid)
            out[gid] = E.NONE
        return out

    # =========================================================== OffsetCommit
    def commit_offsets(self, group_id: str, member_id: str, group_instance_id: str | None, generation_id: int,
                       offsets: list[tuple[TP, OffsetValue]], now_ms: int, api_version: int = 9) -> list[ErrorCode]:
        """``offsets`` in request order, one partition possibly more than once (Kafka answers and
        writes each entry: the last accepted one stays); the answer is one error per entry."""
        def all_(err):
            return [err] * len(offsets)
        if not self._validate_group_id(group_id, allow_empty=True):
            return all_(E.INVALID_GROUP_ID)
        g = self.groups.get(group_id)
        if g is None:
            if generation_id >= 0:
                # a commit from a generation this coordinator never had; v9 says so plainly
                return all_(E.GROUP_ID_NOT_FOUND if api_version >= 9 else E.ILLEGAL_GENERATION)
            g = self._get_or_create(group_id, now_ms)  # a "simple" group: offsets only
        if g.consumer is not None:
            err = self.consumer_validate_commit(g, member_id or "", generation_id, False, api_version)
            if err != E.NONE:
                return all_(err)
            return self._store_offsets(g, offsets, now_ms)
        err = self._validate_commit(g, member_id or "", group_instance_id, generation_id)
        if err != E.NONE:
            return all_(err)
        if g.has(member_id):
            g.members[member_id].last_heartbeat_ms = now_ms
        return self._store_offsets(g, offsets, now_ms)

    @staticmethod
    def _validate_commit(g: Group, member_id: str, instance_id, generation_id: int,
                         transactional: bool = False) -> ErrorCode:
        """Kafka's ClassicGroup.validateOffsetCommit, for OffsetCommit and TxnOffsetCommit."""
        if g.state == S.DEAD:
            return E.COORDINATOR_NOT_AVAILABLE
        if generation_id < 0 and g.state == S.EMPTY:
            return E.NONE  # an admin or a consumer without group management, on an empty group
        if generation_id >= 0 or member_id or instance_id is not None:
            err = g.validate_member(member_id, instance_id)
            if err != E.NONE:
                return err
            if generation_id != g.generation_id:
                return E.ILLEGAL_GENERATION
        elif not transactional and g.state != S.EMPTY:
            # no member and no generation: only while the group is empty. Not for a
            # TxnOffsetCommit, whose versions before 3 carry neither
            return E.UNKNOWN_MEMBER_ID
        if not transactional and g.state == S.COMPLETING_REBALANCE:
            # a member of the new generation that has not synced yet; the group state is
            # not enforced on transactional commits
            return E.REBALANCE_IN_PROGRESS
        return E.NONE

    def metadata_too_large(self, metadata: str | None) -> bool:
        """Kafka compares offset.metadata.max.bytes with the length of a Java String: UTF-16 code
        units, not bytes (4096 'é' are 8192 UTF-8 bytes and accepted; an emoji counts 2)."""
        return metadata is not None and len(metadata.encode("utf-16-le")) // 2 > self.config.offset_metadata_max_bytes

    def _store_offsets(self, g: Group, offsets: list[tuple[TP, OffsetValue]], now_ms: int, producer_id: int = -1,
                       producer_epoch: int = -1) -> list[ErrorCode]:
        result: list[ErrorCode] = []
        valid: list[tuple[TP, OffsetValue]] = []
        for tp, v in offsets:
            if self.metadata_too_large(v.metadata):
                result.append(E.OFFSET_METADATA_TOO_LARGE)
            else:
                result.append(E.NONE)
                valid.append((tp, v))
        if valid:
            records = [(offset_commit_key(g.group_id, tp[0], tp[1]), offset_commit_value(v)) for tp, v in valid]
            txn = producer_id >= 0
            try:
                base = self._append(g.group_id, records, now_ms, producer_id, producer_epoch, transactional=txn)
            except Exception as e:  # noqa: BLE001
                err = _storage_error(e)
                return [err if r == E.NONE else r for r in result]
            for i, (tp, v) in enumerate(valid):
                v.log_offset = base + i
                if txn:
                    g.pending_txn_offsets.setdefault(producer_id, {})[tp] = v
                else:
                    g.offsets[tp] = v
        return result

    # ======================================================== TxnOffsetCommit
    def txn_commit_offsets(self, group_id: str, producer_id: int, producer_epoch: int, member_id: str,
                           group_instance_id: str | None, generation_id: int,
                           offsets: list[tuple[TP, OffsetValue]], now_ms: int) -> list[ErrorCode]:
        """``offsets`` and the answer as in commit_offsets: one entry per request partition."""
        def all_(err):
            return [err] * len(offsets)
        if not self._validate_group_id(group_id):
            return all_(E.INVALID_GROUP_ID)
        g = self.groups.get(group_id)
        if g is None:
            if generation_id >= 0:
                return all_(E.ILLEGAL_GENERATION)  # a generation this coordinator never had
            g = self._get_or_create(group_id, now_ms)  # a "simple" group: offsets only
        member_id = member_id or ""
        if g.consumer is not None:
            if not (member_id == "" and generation_id < 0):  # a producer without group metadata
                err = self.consumer_validate_commit(g, member_id, generation_id, True, 9)
                if err != E.NONE:
                    return all_(err)
            return self._store_offsets(g, offsets, now_ms, producer_id, producer_epoch)
        # KIP-447: a zombie's commit is fenced by its member id, instance id and generation
        err = self._validate_commit(g, member_id, group_instance_id, generation_id, transactional=True)
        if err != E.NONE:
            return all_(err)
        return self._store_offsets(g, offsets, now_ms, producer_id, producer_epoch)

    def complete_transaction(self, offsets_partition: int, producer_id: int, commit: bool) -> None:
        """The transaction coordinator wrote a COMMIT/ABORT marker for producer_id to
        __consumer_offsets partition `offsets_partition`: apply or drop its offsets."""
        for g in list(self.groups.values()):
            if producer_id not in g.pending_txn_offsets or self.partition_for(g.group_id) != offsets_partition:
                continue
            pending = g.pending_txn_offsets.pop(producer_id)
            if commit:
                for tp, v in pending.items():
                    cur = g.offsets.get(tp)
                    if cur is None or cur.older_than(v):
                        g.offsets[tp] = v
            log.debug("group %s: %s %d transactional offsets of producer %d", g.group_id,
                      "committed" if commit else "aborted", len(pending), producer_id)

    # ============================================================ OffsetFetch
    def fetch_offsets(self, group_id: str, partitions: list[TP] | None, require_stable: bool,
                      member_id: str | None = None, member_epoch: int = -1
                      ) -> tuple[ErrorCode, list[tuple[TP, OffsetValue | None, ErrorCode]]]:
        """(group error, [(tp, committed or None, partition error)]). `partitions`
        None means every partition with a committed offset."""
        if not self._validate_group_id(group_id, allow_empty=True):
            return E.INVALID_GROUP_ID, []
        g = self.groups.get(group_id)
        if g is None or g.state == S.DEAD:
            return E.NONE, [(tp, None, E.NONE) for tp in partitions or []]
        if g.consumer is not None:
            err = self.consumer_validate_fetch(g, member_id, member_epoch)
            if err != E.NONE:
                return err, []
        tps = list(g.offsets) if partitions is None else partitions
        out = []
        for tp in tps:
            if require_stable and g.has_pending_txn_offset(tp):
                out.append((tp, None, E.UNSTABLE_OFFSET_COMMIT))
            else:
                out.append((tp, g.offsets.get(tp), E.NONE))
        return E.NONE, out

    @staticmethod
    def _drop_offsets(g: Group, tps) -> None:
        """What an offset tombstone does (Kafka's OffsetMetadataManager.replay of a null value): the
        committed offset goes, and so does every open transaction's pending offset of the partition.
        The transactions stay open (their producers still count as open transactions of the group)."""
        for tp in tps:
            g.offsets.pop(tp, None)
            for pending in g.pending_txn_offsets.values():
                pending.pop(tp, None)

    def on_topic_deleted(self, topic: str, now_ms: int) -> None:
        """A topic was deleted: every group's committed and pending transactional offsets of its
        partitions are tombstoned (Kafka's GroupCoordinator.onPartitionsDeleted), so a topic
        re-created with the same name starts without offsets, and a transaction committing
        offsets of the deleted topic afterwards makes none visible."""
        for g in list(self.groups.values()):
            tps = {tp for tp in g.offsets if tp[0] == topic}
            for pending in g.pending_txn_offsets.values():
                tps |= {tp for tp in pending if tp[0] == topic}
            if not tps:
                continue
            tps = sorted(tps)
            try:
                self._append(g.group_id, [(offset_commit_key(g.group_id, t, p), None) for t, p in tps], now_ms)
            except Exception as e:  # noqa: BLE001
                log.warning("group %s: could not delete the offsets of deleted topic %s: %s", g.group_id, topic, e)
                continue
            self._drop_offsets(g, tps)

    # =========================================================== OffsetDelete
    def delete_offsets(self, group_id: str, partitions: list[TP], now_ms: int
                       ) -> tuple[ErrorCode, dict[TP, ErrorCode]]:
        if not self._validate_group_id(group_id):
            return E.INVALID_GROUP_ID, {}
        g = self.groups.get(group_id)
        if g is None or g.state == S.DEAD:
            return E.GROUP_ID_NOT_FOUND, {}
        result: dict[TP, ErrorCode] = {}
        if g.consumer is not None and g.consumer.members:
            topics = self.topics()
            subscribed = set()
            for m in g.consumer.members.values():
                subscribed |= self._member_topics(g.consumer, m, topics) | set(m.subscribed_topic_names)
            eligible = []
            for tp in partitions:
                if tp[0] in subscribed:
                    result[tp] = E.GROUP_SUBSCRIBED_TO_TOPIC
                else:
                    eligible.append(tp)
        elif g.state == S.EMPTY:
            eligible = list(partitions)
        elif g.protocol_type == "consumer":
            subscribed = g.subscribed_topics()
            eligible = []
            for tp in partitions:
                if subscribed is None or tp[0] in subscribed:
                    result[tp] = E.GROUP_SUBSCRIBED_TO_TOPIC
                else:
                    eligible.append(tp)
        else:
            return E.NON_EMPTY_GROUP, {}
        # a partition with only a pending transactional offset gets its tombstone too, which
        # drops that offset: it never shows, even when its transaction commits (Kafka's replay
        # of an offset tombstone)
        present = [tp for tp in dict.fromkeys(eligible) if tp in g.offsets or g.has_pending_txn_offset(tp)]
        if present:
            try:
                self._append(group_id, [(offset_commit_key(group_id, t, p), None) for t, p in present], now_ms)
            except Exception as e:  # noqa: BLE001
                return _storage_error(e), {}
            self._drop_offsets(g, present)
        for tp in eligible:
            result[tp] = E.NONE
        return E.NONE, result

    # ================================================================ timers
    def tick(self, now_ms: int) -> None:
        """Advance every timer to now_ms (the broker calls this periodically)."""
        for g in list(self.groups.values()):
            self._tick_group(g, now_ms)
        if now_ms >= self._next_offsets_cleanup_ms:
            self._next_offsets_cleanup_ms = now_ms + self.config.offsets_retention_check_interval_ms
            self.expire_offsets(now_ms)

    def _tick_group(self, g: Group, now_ms: int) -> None:
        if g.consumer is not None:
            self._consumer_tick(g, now_ms)
            return
        for mid, deadline in list(g.pending_members.items()):
            if now_ms >= deadline:
                del g.pending_members[mid]
                log.info("group %s: pending member %s expired", g.group_id, mid)
                self._check_join(g, now_ms)
        for mid, m in list(g.members.items()):
            if mid not in g.members:
                continue
            if m.join_waiter is not None:
                expired = m.is_new and now_ms >= m.last_heartbeat_ms + NEW_MEMBER_JOIN_TIMEOUT_MS
            elif m.sync_waiter is not None:
                expired = False
            else:
                expired = now_ms >= m.last_heartbeat_ms + m.session_timeout_ms
            if expired:
                self._remove_member_and_update_group(g, mid, now_ms, "session timeout expired")
        if g.state == S.PREPARING_REBALANCE:
            self._check_join(g, now_ms)
        if g.state in (S.COMPLETING_REBALANCE, S.STABLE) and g.pending_sync and now_ms >= g.sync_deadline_ms:
            laggards = list(g.pending_sync)
            log.info("group %s: members %s did not sync in time", g.group_id, laggards)
            for mid in laggards:
                self._remove_member(g, mid)
            g.pending_sync.clear()
            self._prepare_rebalance(g, now_ms, "members did not send SyncGroup within the rebalance timeout")

    def next_deadline_ms(self) -> int | None:
        """Earliest time tick() has work to do (None: nothing scheduled but offset cleanup)."""
        best = self._next_offsets_cleanup_ms
        for g in self.groups.values():
            if g.consumer is not None:
                d = self._consumer_next_deadline(g)
                if d is not None:
                    best = min(best, d)
                continue
            for d in g.pending_members.values():
                best = min(best, d)
            for m in g.members.values():
                if m.join_waiter is None and m.sync_waiter is None:
                    best = min(best, m.last_heartbeat_ms + m.session_timeout_ms)
                elif m.join_waiter is not None and m.is_new:
                    best = min(best, m.last_heartbeat_ms + NEW_MEMBER_JOIN_TIMEOUT_MS)
            if g.state == S.PREPARING_REBALANCE:
                best = min(best, g.join_deadline_ms)
            if g.pending_sync:
                best = min(best, g.sync_deadline_ms)
        return best

    def _expiry_rule(self, g: Group):
        """Kafka's Group.offsetExpirationCondition and isSubscribedToTopic: (the time an offset's
        retention counts from, given the offset; the topics whose offsets never expire), or None
        when the group's offsets do not expire now."""
        if g.consumer is not None:
            # a consumer group: from the commit, for every topic no member subscribes to
            topics = self.topics()
            subscribed: set[str] = set()
            for m in g.consumer.members.values():
                subscribed |= self._member_topics(g.consumer, m, topics) | set(m.subscribed_topic_names)
            return (lambda v: v.commit_timestamp), subscribed
        if not g.protocol_type:
            return (lambda v: v.commit_timestamp), set()  # a simple group: from the commit
        if g.state == S.EMPTY:
            # from when the group became empty (the commit, for a group without that time)
            return (lambda v: g.state_timestamp_ms if g.state_timestamp_ms >= 0 else v.commit_timestamp), set()
        if g.state == S.STABLE:
            subscribed = g.subscribed_topics()
            if subscribed is not None:
                # a Stable consumer-protocol group whose subscriptions are known: the offsets of
                # topics no member subscribes to expire, from their commit
                return (lambda v: v.commit_timestamp), subscribed
        return None

    def expire_offsets(self, now_ms: int) -> None:
        """offsets.retention.minutes (or v2-4's retention_time_ms), as Kafka's
        OffsetMetadataManager.cleanupExpiredOffsets: offsets of topics the group does not
        subscribe to, without a pending transactional offset; a group left with no offsets,
        no open transaction and no members is removed."""
        retention = self.config.offsets_retention_ms
        for g in list(self.groups.values()):
            if g.state == S.DEAD:
                continue
            rule = self._expiry_rule(g)
            if rule is None:
                continue
            base, subscribed = rule
            expired = [tp for tp, v in g.offsets.items()
                       if tp[0] not in subscribed and not g.has_pending_txn_offset(tp)
                       and (now_ms >= v.expire_timestamp if v.expire_timestamp >= 0
                            else now_ms - base(v) >= retention)]
            members = g.members or (g.consumer is not None and g.consumer.members)
            records = [(offset_commit_key(g.group_id, t, p), None) for t, p in expired]
            remove_group = (g.state == S.EMPTY and not members and not g.pending_txn_offsets
                            and len(expired) == len(g.offsets))
            if remove_group:
                if g.consumer is not None:
                    records += [(cg_key(CG_TARGET_META, g.group_id), None), (cg_key(CG_METADATA, g.group_id), None)]
                records.append((group_metadata_key(g.group_id), None))
            if not records:
                continue
            try:
                self._append(g.group_id, records, now_ms)
            except Exception as e:  # noqa: BLE001
                log.warning("group %s: could not expire offsets: %s", g.group_id, e)
                continue
            for tp in expired:
                g.offsets.pop(tp, None)
            if expired:
                log.info("group %s: expired %d offsets", g.group_id, len(expired))
            if remove_group:
                g.transition(S.DEAD, now_ms)
                del self.groups[g.group_id]
                log.info("group %s: removed (empty, no offsets)", g.group_id)

    # ================================================================ loading
    def load(self, now_ms: int) -> None:
        """Rebuild groups, committed and pending transactional offsets from the log."""
        offsets: dict[str, dict[TP, OffsetValue]] = {}
        group_records: dict[str, GroupRecord] = {}
        pending: dict[str, dict[int, dict[TP, OffsetValue]]] = {}
        consumer_states: dict = {}
        for p in range(self.store.num_partitions):
            # producer id -> group -> tp -> value, for transactions open on this partition
            open_txns: dict[int, dict[str, dict[TP, OffsetValue]]] = {}
            for batch in self.store.read_batches(p):
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
                            consumer_states.pop(k.group, None)
                    elif isinstance(k, ConsumerGroupKey):
                        try:
                            self.load_consumer_record(consumer_states, k, value)
                        except Exception:  # noqa: BLE001
                            log.warning("__consumer_offsets-%d offset %d: unreadable consumer group record", p, offset)
            for pid, by_group in open_txns.items():
                for gid, offs in by_group.items():
                    pending.setdefault(gid, {})[pid] = offs
        for gid in {gid for gid, o in offsets.items() if o} | set(group_records) | set(pending) | set(consumer_states):
            g = Group(gid, state_timestamp_ms=now_ms)
            cs = consumer_states.get(gid)
            if cs is not None and (cs.group_epoch > 0 or cs.members):
                for m in cs.members.values():
                    m.last_heartbeat_ms = now_ms  # sessions start again after a load, as in Kafka
                    if m.state == UNREVOKED_PARTITIONS:  # and so does a pending revocation's timeout
                        m.revocation_deadline_ms = now_ms + max(m.rebalance_timeout_ms, 0)
                cs.subscription_metadata = self._subscribed_topics(cs, self.topics())
                g.consumer = cs
                g.protocol_type = "consumer"
                group_records.pop(gid, None)
            rec = group_records.get(gid)
            if rec is not None:
                g.generation_id = rec.generation
                g.protocol_type = rec.protocol_type or None
                g.protocol_name = rec.protocol
                if rec.current_state_timestamp >= 0:
                    g.state_timestamp_ms = rec.current_state_timestamp
                for mr in rec.members:
                    m = Member(mr.member_id, mr.group_instance_id, mr.client_id, mr.client_host,
                               mr.rebalance_timeout, mr.session_timeout, rec.protocol_type,
                               [(rec.protocol or "", mr.subscription)], assignment=mr.assignment,
                               last_heartbeat_ms=now_ms)
                    g.members[m.member_id] = m
                    if m.group_instance_id is not None:
                        g.static_members[m.group_instance_id] = m.member_id
                if g.members:
                    g.leader_id = rec.leader if rec.leader in g.members else next(iter(g.members))
                    g.state = S.STABLE
            g.offsets = offsets.get(gid, {})
            g.pending_txn_offsets = pending.get(gid, {})
            self.groups[gid] = g
        # Kafka schedules the first group metadata cleanup one retention check interval after the
        # load (GroupCoordinatorShard.onLoaded), not at once: an empty group without offsets
        # outlives a restart until then
        self._next_offsets_cleanup_ms = now_ms + self.config.offsets_retention_check_interval_ms
        self.loaded = True
        log.info("loaded %d groups from __consumer_offsets", len(self.groups))
