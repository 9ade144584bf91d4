"""Classic groups (Kafka's GroupMetadataManager for ClassicGroup: JoinGroup, SyncGroup,
Heartbeat, LeaveGroup, the rebalance timers).

Sans-I/O in the sense that matters here: every entry point is a plain method taking
`now_ms`; nothing sleeps, nothing awaits. JoinGroup and SyncGroup return a `Waiter` the
broker waits on; timers (session expiry, rebalance and sync timeouts, the initial
rebalance delay) advance when the shard's `tick(now_ms)` calls `tick_group`. A group's
records go to `__consumer_offsets` through the GroupLog; in-memory state is changed only
after they are appended. Which requests reach a classic group is the shard's choice
(shard.py): a group id is a classic group or a consumer group, never both.
"""
from __future__ import annotations

import logging
import uuid

from minikafka.protocol.errors import ErrorCode

from .config import GroupConfig
from .group import ClassicGroup, ClassicMember, GroupState, Waiter
from .records import GroupRecord, MemberRecord, group_metadata_key, group_metadata_value
from .store import GroupLog, GroupWriteError

log = logging.getLogger("minikafka.group")

NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000  # Kafka's GroupCoordinator.NewMemberJoinTimeoutMs


def join_error(member_id: str, error: ErrorCode) -> dict:
    return {"error_code": int(error), "member_id": member_id, "generation_id": -1, "protocol_type": None,
            "protocol_name": None, "leader": "", "members": [], "skip_assignment": False}


def sync_result(error: ErrorCode, group: ClassicGroup | None = None, assignment: bytes = b"") -> dict:
    return {"error_code": int(error),
            "protocol_type": group.protocol_type if group and error == ErrorCode.NONE else None,
            "protocol_name": group.protocol_name if group and error == ErrorCode.NONE else None,
            "assignment": assignment}


def done(result) -> Waiter:
    """A Waiter already answered."""
    w = Waiter()
    w.complete(result)
    return w


def group_metadata_record(g: ClassicGroup, assignment: dict[str, bytes] | None = None) -> bytes:
    """The GroupMetadataValue of the group (with ``assignment``: the members' new assignments)."""
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


def validate_commit(g: ClassicGroup, member_id: str, instance_id, generation_id: int,
                    transactional: bool = False) -> ErrorCode:
    """Kafka's ClassicGroup.validateOffsetCommit, for OffsetCommit and TxnOffsetCommit."""
    if g.state == GroupState.DEAD:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if generation_id < 0 and g.state == GroupState.EMPTY:
        return ErrorCode.NONE  # an admin or a consumer without group management, on an empty group
    if generation_id >= 0 or member_id or instance_id is not None:
        err = g.validate_member(member_id, instance_id)
        if err != ErrorCode.NONE:
            return err
        if generation_id != g.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
    elif not transactional and g.state != GroupState.EMPTY:
        # no member and no generation: only while the group is empty. Not for a
        # TxnOffsetCommit, whose versions before 3 carry neither
        return ErrorCode.UNKNOWN_MEMBER_ID
    if not transactional and g.state == GroupState.COMPLETING_REBALANCE:
        # a member of the new generation that has not synced yet; the group state is
        # not enforced on transactional commits
        return ErrorCode.REBALANCE_IN_PROGRESS
    return ErrorCode.NONE


class ClassicGroupManager:
    """The classic groups of this coordinator, by group id."""

    def __init__(self, config: GroupConfig, log: GroupLog):
        self.config = config
        self.log = log
        self.groups: dict[str, ClassicGroup] = {}

    def get_or_create(self, group_id: str, now_ms: int) -> ClassicGroup:
        g = self.groups.get(group_id)
        if g is None:
            g = self.groups[group_id] = ClassicGroup(group_id, state_timestamp_ms=now_ms)
        return g

    def _store_group(self, g: ClassicGroup, now_ms: int, assignment: dict[str, bytes] | None = None) -> ErrorCode:
        try:
            self.log.append(g.group_id, [(group_metadata_key(g.group_id), group_metadata_record(g, assignment))],
                            now_ms)
        except GroupWriteError as e:
            return e.code
        return ErrorCode.NONE

    # ============================================================= JoinGroup
    def check_join(self, session_timeout_ms: int) -> ErrorCode:
        if not (self.config.min_session_timeout_ms <= session_timeout_ms <= self.config.max_session_timeout_ms):
            return ErrorCode.INVALID_SESSION_TIMEOUT
        return ErrorCode.NONE

    def join(self, group_id: str, member_id: str, group_instance_id: str | None, args: tuple,
             require_known_member_id: bool, now_ms: int, supports_skip_assignment: bool) -> Waiter:
        """A JoinGroup the shard found for a classic group (or no group yet). ``args``:
        (client id, client host, session timeout, rebalance timeout, protocol type, protocols)."""
        is_unknown = member_id == ""
        g = self.groups.get(group_id)
        new_group = g is None
        if new_group:
            if not is_unknown:
                return done(join_error(member_id, ErrorCode.UNKNOWN_MEMBER_ID))
            g = self.get_or_create(group_id, now_ms)
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
                self.log.append(group_id, [(group_metadata_key(group_id), record)], now_ms)
            except GroupWriteError as e:
                # the group was never written: it goes (Kafka reverts to the snapshot before it)
                self.groups.pop(group_id, None)
                w.complete(join_error(member_id, e.code))
        return w


    def _join_new_member(self, g: ClassicGroup, instance_id, require_known, args, now_ms, skip_ok) -> Waiter:
        client_id, client_host, session_ms, rebalance_ms, protocol_type, protocols = args
        if g.state == GroupState.DEAD:
            return done(join_error("", ErrorCode.COORDINATOR_NOT_AVAILABLE))
        if not g.supports_protocols(protocol_type, protocols):
            return done(join_error("", ErrorCode.INCONSISTENT_GROUP_PROTOCOL))
        new_id = f"{instance_id if instance_id is not None else client_id}-{uuid.uuid4()}"
        if instance_id is not None:
            old_id = g.static_member_id(instance_id)
            if old_id is not None:
                return self._update_static_member(g, old_id, new_id, instance_id, args, now_ms, skip_ok)
            return self._add_member_and_rebalance(g, new_id, instance_id, args, now_ms)
        if require_known:
            # KIP-394: hand out the id; the member joins again with it
            g.pending_members[new_id] = now_ms + session_ms
            return done(join_error(new_id, ErrorCode.MEMBER_ID_REQUIRED))
        return self._add_member_and_rebalance(g, new_id, None, args, now_ms)

    def _join_current_member(self, g: ClassicGroup, member_id: str, instance_id, args, now_ms) -> Waiter:
        client_id, client_host, session_ms, rebalance_ms, protocol_type, protocols = args
        if g.state == GroupState.DEAD:
            return done(join_error(member_id, ErrorCode.COORDINATOR_NOT_AVAILABLE))
        if not g.supports_protocols(protocol_type, protocols):
            return done(join_error(member_id, ErrorCode.INCONSISTENT_GROUP_PROTOCOL))
        if member_id in g.pending_members:
            del g.pending_members[member_id]
            return self._add_member_and_rebalance(g, member_id, instance_id, args, now_ms)
        if g.is_static_member_fenced(member_id, instance_id):
            return done(join_error(member_id, ErrorCode.FENCED_INSTANCE_ID))
        if not g.has(member_id) or (instance_id is not None and instance_id not in g.static_members):
            return done(join_error(member_id, ErrorCode.UNKNOWN_MEMBER_ID))
        m = g.members[member_id]
        if g.state == GroupState.PREPARING_REBALANCE:
            return self._update_member_and_rebalance(g, m, args, now_ms)
        if g.state == GroupState.COMPLETING_REBALANCE:
            if m.matches(protocols):
                # a retry of a JoinGroup whose response was lost: same generation again
                m.last_heartbeat_ms = now_ms
                return done(self._join_result(g, m, members=g.leader_id == member_id))
            return self._update_member_and_rebalance(g, m, args, now_ms)
        if g.state == GroupState.STABLE:
            if g.leader_id == member_id or not m.matches(protocols):
                # the leader rejoining forces a rebalance (topic metadata may have changed)
                return self._update_member_and_rebalance(g, m, args, now_ms)
            m.last_heartbeat_ms = now_ms
            return done(self._join_result(g, m, members=False))
        return done(join_error(member_id, ErrorCode.UNKNOWN_MEMBER_ID))

    def _join_result(self, g: ClassicGroup, m: ClassicMember, members: bool, leader: str | None = None,
                     skip_assignment: bool = False) -> dict:
        return {
            "error_code": 0, "generation_id": g.generation_id, "protocol_type": g.protocol_type,
            "protocol_name": g.protocol_name, "leader": leader if leader is not None else (g.leader_id or ""),
            "member_id": m.member_id, "skip_assignment": skip_assignment,
            "members": self._member_metadata(g) if members else [],
        }

    def _member_metadata(self, g: ClassicGroup) -> list[dict]:
        out = []
        for m in g.members.values():
            try:
                meta = m.metadata(g.protocol_name)
            except KeyError:
                meta = b""
            out.append({"member_id": m.member_id, "group_instance_id": m.group_instance_id, "metadata": meta})
        return out

    def _add_member_and_rebalance(self, g: ClassicGroup, member_id: str, instance_id, args, now_ms) -> Waiter:
        client_id, client_host, session_ms, rebalance_ms, protocol_type, protocols = args
        m = ClassicMember(member_id, instance_id, client_id, client_host, rebalance_ms, session_ms, protocol_type,
                   protocols, is_new=True, last_heartbeat_ms=now_ms)
        w = m.join_waiter = Waiter()
        if g.state == GroupState.PREPARING_REBALANCE and g.generation_id == 0:
            g.new_member_added = True
        g.add(m)
        log.info("group %s: member %s joins (%s)", g.group_id, member_id, g.state.value)
        self._maybe_prepare_rebalance(g, now_ms, f"adding new member {member_id}")
        return w

    def _update_member(self, m: ClassicMember, args, waiter: Waiter | None) -> None:
        client_id, client_host, session_ms, rebalance_ms, protocol_type, protocols = args
        m.protocols = protocols
        m.session_timeout_ms = session_ms
        m.rebalance_timeout_ms = rebalance_ms
        old = m.join_waiter
        m.join_waiter = waiter
        if old is not None and old is not waiter:
            # a second JoinGroup from the same member replaces the first
            old.complete(join_error(m.member_id, ErrorCode.REBALANCE_IN_PROGRESS))

    def _update_member_and_rebalance(self, g: ClassicGroup, m: ClassicMember, args, now_ms) -> Waiter:
        w = Waiter()
        self._update_member(m, args, w)
        m.last_heartbeat_ms = now_ms
        self._maybe_prepare_rebalance(g, now_ms, f"member {m.member_id} rejoins")
        return w

    def _replace_static_member(self, g: ClassicGroup, instance_id: str, old_id: str, new_id: str) -> ClassicMember:
        m = g.members.pop(old_id)
        if m.join_waiter is not None:
            w, m.join_waiter = m.join_waiter, None
            w.complete(join_error(old_id, ErrorCode.FENCED_INSTANCE_ID))
        if m.sync_waiter is not None:
            w, m.sync_waiter = m.sync_waiter, None
            w.complete(sync_result(ErrorCode.FENCED_INSTANCE_ID))
        m.member_id = new_id
        g.members[new_id] = m
        if g.leader_id == old_id:
            g.leader_id = new_id
        g.static_members[instance_id] = new_id
        if old_id in g.pending_sync:
            g.pending_sync.discard(old_id)
            g.pending_sync.add(new_id)
        return m

    def _update_static_member(self, g: ClassicGroup, old_id, new_id, instance_id, args, now_ms, skip_ok) -> Waiter:
        current_leader = g.leader_id
        m = self._replace_static_member(g, instance_id, old_id, new_id)
        m.last_heartbeat_ms = now_ms
        old_args = (m.protocols, m.session_timeout_ms, m.rebalance_timeout_ms)
        w = Waiter()
        self._update_member(m, args, w)
        log.info("group %s: static member %s replaces %s as %s (%s)", g.group_id, new_id, old_id, instance_id,
                 g.state.value)
        if g.state == GroupState.STABLE:
            if g.protocol_name == g.select_protocol():
                err = self._store_group(g, now_ms)
                if err != ErrorCode.NONE:
                    m.join_waiter = None
                    m.protocols, m.session_timeout_ms, m.rebalance_timeout_ms = old_args
                    self._replace_static_member(g, instance_id, new_id, old_id)
                    w.complete(join_error(new_id, err))
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
        elif g.state == GroupState.COMPLETING_REBALANCE:
            self.prepare_rebalance(g, now_ms, f"static member {new_id} rejoined while completing a rebalance")
        elif g.state == GroupState.PREPARING_REBALANCE:
            self._check_join(g, now_ms)
        return w

    # ------------------------------------------------------------ rebalance
    def _maybe_prepare_rebalance(self, g: ClassicGroup, now_ms: int, reason: str) -> None:
        if g.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY):
            self.prepare_rebalance(g, now_ms, reason)
        else:
            self._check_join(g, now_ms)

    def prepare_rebalance(self, g: ClassicGroup, now_ms: int, reason: str) -> None:
        if g.state == GroupState.COMPLETING_REBALANCE:
            self._reset_and_propagate_assignment_error(g, ErrorCode.REBALANCE_IN_PROGRESS)
        g.pending_sync.clear()
        rebalance_ms = g.max_rebalance_timeout_ms()
        if g.state == GroupState.EMPTY:
            delay = self.config.initial_rebalance_delay_ms
            g.initial_join = True
            g.join_deadline_ms = now_ms + delay
            g.initial_remaining_ms = max(rebalance_ms - delay, 0)
            g.new_member_added = False
        else:
            g.initial_join = False
            g.join_deadline_ms = now_ms + rebalance_ms
        log.info("group %s: preparing to rebalance (generation %d): %s", g.group_id, g.generation_id, reason)
        g.transition(GroupState.PREPARING_REBALANCE, now_ms)
        self._check_join(g, now_ms)

    def _reset_and_propagate_assignment_error(self, g: ClassicGroup, error: ErrorCode) -> None:
        for m in g.members.values():
            m.assignment = b""
            if m.sync_waiter is not None:
                w, m.sync_waiter = m.sync_waiter, None
                w.complete(sync_result(error))

    def _check_join(self, g: ClassicGroup, now_ms: int) -> None:
        """DelayedJoin / InitialDelayedJoin: complete the join phase when due."""
        if g.state != GroupState.PREPARING_REBALANCE:
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

    def _complete_join(self, g: ClassicGroup, now_ms: int) -> None:
        for mid, m in list(g.members.items()):
            if m.join_waiter is None and m.group_instance_id is None:
                log.info("group %s: removing member %s which did not rejoin", g.group_id, mid)
                self._remove_member(g, mid)
        if g.state == GroupState.DEAD:
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
            g.transition(GroupState.EMPTY, now_ms)
            log.info("group %s: generation %d is empty", g.group_id, g.generation_id)
            err = self._store_group(g, now_ms, {})
            if err != ErrorCode.NONE:
                log.warning("group %s: failed to store empty group: %s", g.group_id, err.name)
            return
        g.protocol_name = g.select_protocol()
        g.transition(GroupState.COMPLETING_REBALANCE, now_ms)
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
    def _elect_joined_leader(g: ClassicGroup) -> bool:
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

    def _remove_member(self, g: ClassicGroup, member_id: str) -> None:
        m = g.remove(member_id)
        if m is None:
            return
        if m.join_waiter is not None:
            # Kafka answers a removed member's waiting JoinGroup without a member id, so that the
            # consumer joins again as a new member
            w, m.join_waiter = m.join_waiter, None
            w.complete(join_error("", ErrorCode.UNKNOWN_MEMBER_ID))
        if m.sync_waiter is not None:
            w, m.sync_waiter = m.sync_waiter, None
            w.complete(sync_result(ErrorCode.UNKNOWN_MEMBER_ID))

    def remove_member_and_update_group(self, g: ClassicGroup, member_id: str, now_ms: int, reason: str) -> None:
        self._remove_member(g, member_id)
        log.info("group %s: removed member %s (%s)", g.group_id, member_id, reason)
        if g.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self.prepare_rebalance(g, now_ms, reason)
        elif g.state == GroupState.PREPARING_REBALANCE:
            self._check_join(g, now_ms)

    # ============================================================= SyncGroup
    def sync(self, g: ClassicGroup, generation_id: int, member_id: str, group_instance_id: str | None,
             protocol_type: str | None, protocol_name: str | None, assignments: dict[str, bytes],
             now_ms: int) -> Waiter:
        if g.state == GroupState.DEAD:
            return done(sync_result(ErrorCode.COORDINATOR_NOT_AVAILABLE))
        err = g.validate_member(member_id, group_instance_id)
        if err != ErrorCode.NONE:
            return done(sync_result(err))
        if generation_id != g.generation_id:
            return done(sync_result(ErrorCode.ILLEGAL_GENERATION))
        if (protocol_type is not None and protocol_type != g.protocol_type) or \
                (protocol_name is not None and protocol_name != g.protocol_name):
            return done(sync_result(ErrorCode.INCONSISTENT_GROUP_PROTOCOL))
        m = g.members[member_id]
        if g.state == GroupState.EMPTY:
            return done(sync_result(ErrorCode.UNKNOWN_MEMBER_ID))
        if g.state == GroupState.PREPARING_REBALANCE:
            return done(sync_result(ErrorCode.REBALANCE_IN_PROGRESS))
        m.last_heartbeat_ms = now_ms
        g.pending_sync.discard(member_id)
        if g.state == GroupState.STABLE:
            return done(sync_result(ErrorCode.NONE, g, m.assignment))
        # CompletingRebalance
        w = Waiter()
        if m.sync_waiter is not None:
            m.sync_waiter.complete(sync_result(ErrorCode.REBALANCE_IN_PROGRESS))
        m.sync_waiter = w
        if g.leader_id == member_id:
            full = {mid: assignments.get(mid, b"") or b"" for mid in g.members}
            err = self._store_group(g, now_ms, full)
            if err != ErrorCode.NONE:
                self._reset_and_propagate_assignment_error(g, err)
                self._maybe_prepare_rebalance(g, now_ms, f"error storing the assignment: {err.name}")
                return w
            for mid, mm in g.members.items():
                mm.assignment = full[mid]
                if mm.sync_waiter is not None:
                    sw, mm.sync_waiter = mm.sync_waiter, None
                    mm.last_heartbeat_ms = now_ms
                    sw.complete(sync_result(ErrorCode.NONE, g, mm.assignment))
            g.transition(GroupState.STABLE, now_ms)
            log.info("group %s: generation %d is stable", g.group_id, g.generation_id)
        return w

    # ============================================================= Heartbeat
    def heartbeat(self, g: ClassicGroup, generation_id: int, member_id: str, group_instance_id: str | None,
                  now_ms: int) -> ErrorCode:
        if g.state == GroupState.DEAD:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        err = g.validate_member(member_id, group_instance_id)
        if err != ErrorCode.NONE:
            return err
        if generation_id != g.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
        if g.state == GroupState.EMPTY:
            return ErrorCode.UNKNOWN_MEMBER_ID
        g.members[member_id].last_heartbeat_ms = now_ms
        if g.state == GroupState.PREPARING_REBALANCE:
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    # ============================================================ LeaveGroup
    def leave(self, g: ClassicGroup, members: list[tuple[str, str | None]], now_ms: int,
              reason: str | None = None) -> tuple[ErrorCode, list[ErrorCode]]:
        if g.state == GroupState.DEAD:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, []
        why = f"member left the group{': ' + reason if reason else ''}"
        errors = []
        for member_id, instance_id in members:
            if not member_id:
                # an admin's removal of a static member by its instance id alone
                current = g.static_member_id(instance_id)
                if current is None:
                    errors.append(ErrorCode.UNKNOWN_MEMBER_ID)
                else:
                    self._remove_member(g, current)
                    errors.append(ErrorCode.NONE)
            elif member_id in g.pending_members:
                del g.pending_members[member_id]
                errors.append(ErrorCode.NONE)
            else:
                err = g.validate_member(member_id, instance_id)
                if err == ErrorCode.NONE:
                    self._remove_member(g, member_id)
                errors.append(err)
        # Kafka rebalances once for the whole batch, and for a pending member's leave too
        if ErrorCode.NONE in errors:
            log.info("group %s: %s", g.group_id, why)
            if g.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
                self.prepare_rebalance(g, now_ms, why)
            elif g.state == GroupState.PREPARING_REBALANCE:
                self._check_join(g, now_ms)
        return ErrorCode.NONE, errors

    # ====================================================== List/Describe
    def list_entry(self, g: ClassicGroup, states: set[str], types: set[str]) -> dict | None:
        """The group's ListGroups entry, None when the filters (lower case) leave it out."""
        if g.state == GroupState.DEAD or (types and "classic" not in types) or \
                (states and g.state.value.lower() not in states):
            return None
        return {"group_id": g.group_id, "protocol_type": g.protocol_type or "",
                "group_state": g.state.value, "group_type": "classic"}

    @staticmethod
    def describe(g: ClassicGroup) -> dict:
        """Kafka's GroupSummary."""
        stable = g.state == GroupState.STABLE
        members = []
        for m in g.members.values():
            meta = b""
            if stable:
                try:
                    meta = m.metadata(g.protocol_name)
                except KeyError:
                    meta = b""
            # outside Stable, Kafka leaves out the metadata but not the assignment a member holds
            members.append({"member_id": m.member_id, "group_instance_id": m.group_instance_id,
                            "client_id": m.client_id, "client_host": m.client_host,
                            "member_metadata": meta, "member_assignment": m.assignment})
        return {"group_id": g.group_id, "group_state": g.state.value, "protocol_type": g.protocol_type or "",
                "protocol_data": (g.protocol_name or "") if stable else "", "members": members}

    # ================================================================ timers
    def tick_group(self, g: ClassicGroup, now_ms: int) -> None:
        """Advance the group's timers to now_ms."""
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
                self.remove_member_and_update_group(g, mid, now_ms, "session timeout expired")
        if g.state == GroupState.PREPARING_REBALANCE:
            self._check_join(g, now_ms)
        if g.state in (GroupState.COMPLETING_REBALANCE, GroupState.STABLE) and g.pending_sync and \
                now_ms >= g.sync_deadline_ms:
            laggards = list(g.pending_sync)
            log.info("group %s: members %s did not sync in time", g.group_id, laggards)
            for mid in laggards:
                self._remove_member(g, mid)
            g.pending_sync.clear()
            self.prepare_rebalance(g, now_ms, "members did not send SyncGroup within the rebalance timeout")

    @staticmethod
    def offset_expiry(g: ClassicGroup):
        """Kafka's ClassicGroup.offsetExpirationCondition and isSubscribedToTopic: (the time an
        offset's retention counts from, given the offset; the topics whose offsets never
        expire), or None when the group's offsets do not expire now."""
        if not g.protocol_type:
            return (lambda v: v.commit_timestamp), set()  # a simple group: from the commit
        if g.state == GroupState.EMPTY:
            # from when the group became empty (the commit, for a group without that time)
            return (lambda v: g.state_timestamp_ms if g.state_timestamp_ms >= 0 else v.commit_timestamp), set()
        if g.state == GroupState.STABLE:
            subscribed = g.subscribed_topics()
            if subscribed is not None:
                # a Stable consumer-protocol group whose subscriptions are known: the offsets of
                # topics no member subscribes to expire, from their commit
                return (lambda v: v.commit_timestamp), subscribed
        return None

    # =============================================================== loading
    def load_group(self, group_id: str, rec: GroupRecord | None, now_ms: int) -> ClassicGroup:
        """A group as its last GroupMetadata record left it (None: a group of offsets only)."""
        g = self.groups[group_id] = ClassicGroup(group_id, state_timestamp_ms=now_ms)
        if rec is None:
            return g
        g.generation_id = rec.generation
        g.protocol_type = rec.protocol_type or None
        g.protocol_name = rec.protocol
        if rec.current_state_timestamp >= 0:
            g.state_timestamp_ms = rec.current_state_timestamp
        for mr in rec.members:
            m = ClassicMember(mr.member_id, mr.group_instance_id, mr.client_id, mr.client_host,
                              mr.rebalance_timeout, mr.session_timeout, rec.protocol_type,
                              [(rec.protocol or "", mr.subscription)], assignment=mr.assignment,
                              last_heartbeat_ms=now_ms)
            g.members[m.member_id] = m
            if m.group_instance_id is not None:
                g.static_members[m.group_instance_id] = m.member_id
        if g.members:
            g.leader_id = rec.leader if rec.leader in g.members else next(iter(g.members))
            g.state = GroupState.STABLE
        return g
