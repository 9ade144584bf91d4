"""The classic group coordinator alone (no broker, no trio): an in-memory
__consumer_offsets and explicit clock values."""
from __future__ import annotations

import logging

import pytest

from minikafka.coordinator.group import GroupConfig, GroupCoordinatorShard, MemoryOffsetsStore, OffsetValue
from minikafka.coordinator.group.group import GroupState
from minikafka.coordinator.group.records import (GroupRecord, MemberRecord, group_metadata_value, offset_commit_key,
                                       offset_commit_value, parse_group_value, parse_key, parse_offset_value,
                                       partition_for, OffsetKey, GroupKey)
from minikafka.protocol.errors import ErrorCode as E

PROTOS = [("range", b"meta-r"), ("roundrobin", b"meta-rr")]
T0 = 1_000_000


def make(delay=0, store=None, **kw):
    cfg = GroupConfig(initial_rebalance_delay_ms=delay, **kw)
    return GroupCoordinatorShard(cfg, store or MemoryOffsetsStore(50))


def commit(c, group, member, instance, generation, offsets: dict, now, **kw) -> dict:
    """OffsetCommit of each partition once: {tp: value} -> {tp: error}."""
    return dict(zip(offsets, c.commit_offsets(group, member, instance, generation, list(offsets.items()), now, **kw)))


def txn_commit(c, group, pid, epoch, member, instance, generation, offsets: dict, now) -> dict:
    """TxnOffsetCommit of each partition once: {tp: value} -> {tp: error}."""
    return dict(zip(offsets, c.txn_commit_offsets(group, pid, epoch, member, instance, generation,
                                                  list(offsets.items()), now)))


def join(c, group="g", member="", now=T0, instance=None, protos=PROTOS, session=10_000, rebalance=30_000,
         require_known=True, client="c"):
    return c.join_group(group, member, instance, client, "/127.0.0.1", session, rebalance, "consumer", protos,
                        require_known, now)


def join_new(c, group="g", now=T0, **kw):
    """KIP-394 two-step join; returns the waiter of the second JoinGroup."""
    w = join(c, group, "", now, **kw)
    assert w.done and w.result["error_code"] == E.MEMBER_ID_REQUIRED
    mid = w.result["member_id"]
    assert mid.startswith("c-")
    return join(c, group, mid, now, **kw)


def stable_group_of(c, n, group="g", now=T0):
    waiters = [join_new(c, group, now) for _ in range(n)]
    c.tick(now + 1)
    # the first joiner completed alone (delay 0), the others forced a rebalance:
    # everyone rejoins until a generation holds all n members
    for _ in range(5):
        results = [w.result for w in waiters if w.done]
        if len(results) == n and len({r["generation_id"] for r in results}) == 1 and \
                all(r["error_code"] == 0 for r in results):
            break
        waiters = [w if not w.done else join(c, group, w.result["member_id"], now) for w in waiters]
        c.tick(now + 1)
    results = [w.result for w in waiters]
    gen = results[0]["generation_id"]
    leader = results[0]["leader"]
    members = [r["member_id"] for r in results]
    leader_res = next(r for r in results if r["member_id"] == leader)
    assert sorted(m["member_id"] for m in leader_res["members"]) == sorted(members)
    syncs = {}
    for mid in members:
        if mid != leader:
            syncs[mid] = c.sync_group(group, gen, mid, None, "consumer", None, {}, now)
    syncs[leader] = c.sync_group(group, gen, leader, None, "consumer", "range",
                                 {mid: mid.encode() for mid in members}, now)
    for mid, w in syncs.items():
        assert w.done and w.result["error_code"] == 0 and w.result["assignment"] == mid.encode()
    assert c.group(group).state == GroupState.STABLE
    return gen, leader, members


# ------------------------------------------------------------------ records

def test_partition_for_matches_java_hashcode():
    # "hello".hashCode() == 99162322; a negative hash is folded with Utils.abs
    assert partition_for("hello", 50) == 99162322 % 50
    assert partition_for("", 50) == 0


def test_record_roundtrip_kafka_layout():
    key = offset_commit_key("grp", "topic", 7)
    assert key[:2] == b"\x00\x01"  # key version 1 = offset commit
    assert parse_key(key) == OffsetKey("grp", "topic", 7)
    v = offset_commit_value(OffsetValue(42, 3, "meta", 1234, -1))
    assert v[:2] == b"\x00\x03"
    back = parse_offset_value(v)
    assert (back.offset, back.leader_epoch, back.metadata, back.commit_timestamp) == (42, 3, "meta", 1234)
    v1 = offset_commit_value(OffsetValue(1, -1, "", 5, 99))
    assert v1[:2] == b"\x00\x01" and parse_offset_value(v1).expire_timestamp == 99
    g = GroupRecord("consumer", 4, "range", "m1", 77,
                    [MemberRecord("m1", "i1", "cid", "/h", 300, 10, b"sub", b"asg")])
    data = group_metadata_value(g)
    assert data[:2] == b"\x00\x03"
    assert parse_group_value(data) == g
    assert parse_key(b"\x00\x02" + b"\x00\x03grp") == GroupKey("grp")


# --------------------------------------------------------------- join/sync

def test_member_id_required_then_join_and_sync():
    c = make()
    gen, leader, members = stable_group_of(c, 1)
    assert gen == 1 and members == [leader]
    assert c.heartbeat("g", gen, leader, None, T0 + 100) == E.NONE


def test_invalid_session_timeout_and_group_id():
    c = make()
    w = join(c, session=10)
    assert w.result["error_code"] == E.INVALID_SESSION_TIMEOUT
    w = join(c, group="")
    assert w.result["error_code"] == E.INVALID_GROUP_ID
    assert c.group("g") is None


def test_inconsistent_protocol():
    c = make()
    stable_group_of(c, 1)
    w = join(c, protos=[("other", b"")], require_known=False)
    assert w.result["error_code"] == E.INCONSISTENT_GROUP_PROTOCOL


def test_three_members_one_generation_and_heartbeat_errors():
    c = make()
    gen, leader, members = stable_group_of(c, 3)
    follower = next(m for m in members if m != leader)
    assert c.heartbeat("g", gen - 1, follower, None, T0) == E.ILLEGAL_GENERATION
    assert c.heartbeat("g", gen, "nobody", None, T0) == E.UNKNOWN_MEMBER_ID
    assert c.heartbeat("nogroup", gen, follower, None, T0) == E.UNKNOWN_MEMBER_ID
    # a new member arrives: the others learn through their heartbeat
    w = join_new(c, now=T0 + 10)
    assert not w.done
    assert c.group("g").state == GroupState.PREPARING_REBALANCE
    assert c.heartbeat("g", gen, follower, None, T0 + 20) == E.REBALANCE_IN_PROGRESS


def test_initial_rebalance_delay_collects_members():
    c = make(delay=3000)
    w1 = join_new(c, now=T0)
    w2 = join_new(c, now=T0 + 1000)
    c.tick(T0 + 2999)
    assert not w1.done and not w2.done
    c.tick(T0 + 3000)  # a member came during the delay: wait another delay
    assert not w1.done
    c.tick(T0 + 6000)
    assert w1.done and w2.done
    assert w1.result["generation_id"] == w2.result["generation_id"] == 1


def test_session_expiry_triggers_rebalance_and_reassignment():
    c = make()
    gen, leader, members = stable_group_of(c, 2)
    survivor, lost = members[0], members[1]
    # the survivor keeps heartbeating, the other goes silent
    for t in range(T0 + 3000, T0 + 12_000, 3000):
        assert c.heartbeat("g", gen, survivor, None, t) == E.NONE
        c.tick(t)
    c.tick(T0 + 10_001)
    g = c.group("g")
    assert lost not in g.members
    assert g.state == GroupState.PREPARING_REBALANCE
    assert c.heartbeat("g", gen, survivor, None, T0 + 10_002) == E.REBALANCE_IN_PROGRESS
    w = join(c, member=survivor, now=T0 + 10_003)
    assert w.done and w.result["generation_id"] == gen + 1 and w.result["leader"] == survivor


def test_rebalance_timeout_removes_members_that_do_not_rejoin():
    c = make()
    gen, leader, members = stable_group_of(c, 2)
    w = join(c, member=members[0], now=T0 + 10)
    assert not w.done
    # the other one heartbeats (REBALANCE_IN_PROGRESS) but never rejoins
    assert c.heartbeat("g", gen, members[1], None, T0 + 20) == E.REBALANCE_IN_PROGRESS
    c.tick(T0 + 10 + 30_000)
    assert w.done and w.result["error_code"] == 0 and w.result["generation_id"] == gen + 1
    assert list(c.group("g").members) == [members[0]]


def test_sync_errors():
    c = make()
    gen, leader, members = stable_group_of(c, 2)
    assert c.sync_group("g", gen + 5, leader, None, None, None, {}, T0).result["error_code"] == E.ILLEGAL_GENERATION
    assert c.sync_group("g", gen, "x", None, None, None, {}, T0).result["error_code"] == E.UNKNOWN_MEMBER_ID
    assert c.sync_group("g", gen, leader, None, "other", None, {}, T0).result["error_code"] == \
        E.INCONSISTENT_GROUP_PROTOCOL
    join(c, member=leader, now=T0)  # leader rejoin -> PreparingRebalance
    assert c.sync_group("g", gen, members[1], None, None, None, {}, T0).result["error_code"] == \
        E.REBALANCE_IN_PROGRESS


def test_rebalance_while_awaiting_sync_answers_rebalance_in_progress():
    c = make()
    gen, leader, members = stable_group_of(c, 2)
    w0 = join(c, member=members[0], now=T0)
    w1 = join(c, member=members[1], now=T0)
    assert w0.done and w1.done
    gen2 = w0.result["generation_id"]
    follower = members[1] if leader == members[0] else members[0]
    s = c.sync_group("g", gen2, follower, None, None, None, {}, T0)
    assert not s.done
    join_new(c, now=T0 + 1)  # new member: rebalance before the leader synced
    assert s.done and s.result["error_code"] == E.REBALANCE_IN_PROGRESS


def test_leave_group_batch_and_by_instance_id():
    c = make()
    gen, leader, members = stable_group_of(c, 2)
    top, errs = c.leave_group("g", [(members[0], None), ("ghost", None)], T0)
    assert top == E.NONE and errs == [E.NONE, E.UNKNOWN_MEMBER_ID]
    assert c.group("g").state == GroupState.PREPARING_REBALANCE
    top, errs = c.leave_group("g", [("", "no-such-instance")], T0)
    assert errs == [E.UNKNOWN_MEMBER_ID]
    top, errs = c.leave_group("g", [(members[1], None)], T0)
    assert errs == [E.NONE]
    g = c.group("g")
    assert g.state == GroupState.EMPTY and not g.members


def test_static_member_rejoin_fences_old_id():
    c = make()
    w = join(c, instance="inst-1", require_known=True)
    # static members skip MEMBER_ID_REQUIRED
    assert w.done and w.result["error_code"] == 0
    old = w.result["member_id"]
    gen = w.result["generation_id"]
    s = c.sync_group("g", gen, old, "inst-1", None, None, {old: b"A"}, T0)
    assert s.result["assignment"] == b"A"
    # restarted client: same instance id, no member id -> new id, same generation, no rebalance
    w2 = join(c, instance="inst-1", now=T0 + 5)
    assert w2.done and w2.result["error_code"] == 0
    new = w2.result["member_id"]
    assert new != old and w2.result["generation_id"] == gen
    assert c.group("g").state == GroupState.STABLE
    assert c.heartbeat("g", gen, old, "inst-1", T0 + 6) == E.FENCED_INSTANCE_ID
    assert c.heartbeat("g", gen, new, "inst-1", T0 + 6) == E.NONE
    assert c.sync_group("g", gen, new, "inst-1", None, None, {}, T0 + 7).result["assignment"] == b"A"
    r = commit(c, "g", old, "inst-1", gen, {("t", 0): OffsetValue(1)}, T0 + 8)
    assert r == {("t", 0): E.FENCED_INSTANCE_ID}
    # admin removal by instance id
    top, errs = c.leave_group("g", [("", "inst-1")], T0 + 9)
    assert errs == [E.NONE] and not c.group("g").members


# ------------------------------------------------------------------ offsets

def test_simple_commit_and_fetch():
    c = make()
    r = commit(c, "simple", "", None, -1, {("t", 0): OffsetValue(5, -1, "m", T0)}, T0)
    assert r == {("t", 0): E.NONE}
    err, rows = c.fetch_offsets("simple", [("t", 0), ("t", 1)], False)
    assert err == E.NONE
    assert rows[0][1].offset == 5 and rows[0][1].metadata == "m" and rows[1][1] is None
    err, rows = c.fetch_offsets("simple", None, False)
    assert [(tp, v.offset) for tp, v, _ in rows] == [(("t", 0), 5)]
    # unknown group with a generation: the commit comes from a generation we never had
    # (OffsetCommit v9 says GROUP_ID_NOT_FOUND)
    r = commit(c, "ghost", "m", None, 3, {("t", 0): OffsetValue(5)}, T0, api_version=8)
    assert r == {("t", 0): E.ILLEGAL_GENERATION}
    r = commit(c, "ghost", "m", None, 3, {("t", 0): OffsetValue(5)}, T0, api_version=9)
    assert r == {("t", 0): E.GROUP_ID_NOT_FOUND}


def test_commit_generation_checks():
    c = make()
    gen, leader, members = stable_group_of(c, 2)
    tp = ("t", 0)
    assert commit(c, "g", leader, None, gen, {tp: OffsetValue(1)}, T0) == {tp: E.NONE}
    assert commit(c, "g", leader, None, gen - 1, {tp: OffsetValue(2)}, T0) == {tp: E.ILLEGAL_GENERATION}
    assert commit(c, "g", "x", None, gen, {tp: OffsetValue(2)}, T0) == {tp: E.UNKNOWN_MEMBER_ID}
    assert commit(c, "g", "", None, -1, {tp: OffsetValue(2)}, T0) == {tp: E.UNKNOWN_MEMBER_ID}
    assert commit(c, "g", leader, None, gen, {tp: OffsetValue(3, metadata="x" * 5000)}, T0) == \
        {tp: E.OFFSET_METADATA_TOO_LARGE}
    # the group moves on: the old generation is fenced
    for m in members:
        join(c, member=m, now=T0 + 1)
    assert c.group("g").state == GroupState.COMPLETING_REBALANCE
    assert commit(c, "g", leader, None, gen + 1, {tp: OffsetValue(4)}, T0) == {tp: E.REBALANCE_IN_PROGRESS}
    assert commit(c, "g", leader, None, gen, {tp: OffsetValue(4)}, T0) == {tp: E.ILLEGAL_GENERATION}
    assert c.fetch_offsets("g", [tp], False)[1][0][1].offset == 1


def test_offsets_and_groups_rebuilt_from_log():
    store = MemoryOffsetsStore(50)
    c = make(store=store)
    gen, leader, members = stable_group_of(c, 2)
    commit(c, "g", leader, None, gen, {("t", 0): OffsetValue(10), ("t", 1): OffsetValue(20)}, T0)
    commit(c, "g", leader, None, gen, {("t", 0): OffsetValue(11)}, T0)
    commit(c, "s", "", None, -1, {("u", 0): OffsetValue(3)}, T0)
    assert c.delete_offsets("s", [("u", 0)], T0) == (E.NONE, {("u", 0): E.NONE})
    c2 = make(store=store)
    c2.load(T0 + 50)
    g = c2.group("g")
    assert {tp: v.offset for tp, v in c2.offsets.of("g").items()} == {("t", 0): 11, ("t", 1): 20}
    assert g.state == GroupState.STABLE and g.generation_id == gen and set(g.members) == set(members)
    assert g.leader_id == leader
    assert {m.assignment for m in g.members.values()} == {m.encode() for m in members}
    # members keep their session after a coordinator restart
    assert c2.heartbeat("g", gen, members[0], None, T0 + 60) == E.NONE
    assert c2.group("s") is None  # its only offset was deleted


def test_delete_groups():
    c = make()
    gen, leader, members = stable_group_of(c, 1)
    commit(c, "g", leader, None, gen, {("t", 0): OffsetValue(1)}, T0)
    assert c.delete_groups(["g", "missing"], T0) == {"g": E.NON_EMPTY_GROUP, "missing": E.GROUP_ID_NOT_FOUND}
    c.leave_group("g", [(leader, None)], T0)
    assert c.delete_groups(["g"], T0) == {"g": E.NONE}
    assert c.group("g") is None
    c2 = make(store=c.log.store)
    c2.load(T0)
    assert c2.group("g") is None


def test_offset_delete_subscribed_topic_refused():
    from minikafka.protocol import schema
    import struct
    sub = struct.pack(">h", 0) + schema.build(schema.data_message("ConsumerProtocolSubscription", 0),
                                              {"topics": ["t"], "user_data": None})
    c = make()
    w = join(c, protos=[("range", sub)], require_known=False)
    mid, gen = w.result["member_id"], w.result["generation_id"]
    c.sync_group("g", gen, mid, None, None, None, {}, T0)
    commit(c, "g", mid, None, gen, {("t", 0): OffsetValue(1), ("other", 0): OffsetValue(2)}, T0)
    err, res = c.delete_offsets("g", [("t", 0), ("other", 0)], T0)
    assert err == E.NONE and res == {("t", 0): E.GROUP_SUBSCRIBED_TO_TOPIC, ("other", 0): E.NONE}
    assert c.delete_offsets("nope", [("t", 0)], T0)[0] == E.GROUP_ID_NOT_FOUND


def test_offset_retention_for_empty_and_simple_groups():
    c = make(offsets_retention_ms=60_000, offsets_retention_check_interval_ms=1000)
    gen, leader, members = stable_group_of(c, 1)
    commit(c, "g", leader, None, gen, {("t", 0): OffsetValue(1, commit_timestamp=T0)}, T0)
    commit(c, "s", "", None, -1, {("t", 0): OffsetValue(1, commit_timestamp=T0)}, T0)
    # the consumer group is alive (heartbeats): its offsets are kept
    for t in range(T0, T0 + 70_001, 5000):
        assert c.heartbeat("g", gen, leader, None, t) == E.NONE
        c.tick(t)
    assert c.group("s") is None  # simple group: counted from the commit
    assert c.offsets.of("g")
    c.leave_group("g", [(leader, None)], T0 + 70_000)
    c.tick(T0 + 70_000 + 59_000)
    assert c.offsets.of("g")  # empty for less than the retention
    c.tick(T0 + 70_000 + 61_000)
    assert c.group("g") is None
    c2 = make(store=c.log.store)
    c2.load(T0 + 200_000)
    assert c2.group("g") is None and c2.group("s") is None


def test_list_and_describe():
    c = make()
    gen, leader, members = stable_group_of(c, 1)
    commit(c, "s", "", None, -1, {("t", 0): OffsetValue(1)}, T0)
    groups = {g["group_id"]: g for g in c.list_groups()}
    assert groups["g"]["group_state"] == "Stable" and groups["g"]["protocol_type"] == "consumer"
    assert groups["s"]["group_state"] == "Empty" and groups["s"]["protocol_type"] == ""
    assert [g["group_id"] for g in c.list_groups(["stable"])] == ["g"]
    assert c.list_groups(types_filter=["consumer"]) == []
    d = c.describe_group("g")
    assert d["group_state"] == "Stable" and d["protocol_data"] == "range"
    assert d["members"][0]["member_assignment"] == leader.encode()
    assert c.describe_group("zzz") is None


# ----------------------------------------------------- transactional offsets

def test_txn_offsets_pending_until_marker():
    store = MemoryOffsetsStore(50)
    c = make(store=store)
    tp = ("t", 0)
    commit(c, "g", "", None, -1, {tp: OffsetValue(5)}, T0)
    r = txn_commit(c, "g", 1000, 0, "", None, -1, {tp: OffsetValue(9)}, T0)
    assert r == {tp: E.NONE}
    assert c.fetch_offsets("g", [tp], True)[1] == [(tp, None, E.UNSTABLE_OFFSET_COMMIT)]
    assert c.fetch_offsets("g", [tp], False)[1][0][1].offset == 5
    part = c.partition_for("g")
    c.complete_transaction((part + 1) % 50, 1000, True)  # another partition: no effect
    assert c.fetch_offsets("g", [tp], True)[1][0][2] == E.UNSTABLE_OFFSET_COMMIT
    store.write_marker(part, 1000, commit=False)
    c.complete_transaction(part, 1000, False)
    assert c.fetch_offsets("g", [tp], True)[1][0][1].offset == 5
    txn_commit(c, "g", 1000, 1, "", None, -1, {tp: OffsetValue(12)}, T0)
    store.write_marker(part, 1000, commit=True)
    c.complete_transaction(part, 1000, True)
    assert c.fetch_offsets("g", [tp], True)[1][0][1].offset == 12
    # a third one left open
    txn_commit(c, "g", 2000, 0, "", None, -1, {tp: OffsetValue(20)}, T0)
    # rebuilt from the log: aborted dropped, committed applied, open one still pending
    c2 = make(store=store)
    c2.load(T0)
    assert c2.fetch_offsets("g", [tp], False)[1][0][1].offset == 12
    assert c2.fetch_offsets("g", [tp], True)[1][0][2] == E.UNSTABLE_OFFSET_COMMIT
    store.write_marker(part, 2000, commit=True)
    c2.complete_transaction(part, 2000, True)
    assert c2.fetch_offsets("g", [tp], True)[1][0][1].offset == 20


def test_txn_offset_commit_logs_at_debug_only(caplog):
    # one line per transaction at INFO would flood the log of an exactly-once
    # service (it commits offsets in every transaction): DEBUG (issue 16)
    store = MemoryOffsetsStore(50)
    c = make(store=store)
    tp = ("t", 0)
    with caplog.at_level(logging.DEBUG, logger="minikafka"):
        txn_commit(c, "g", 1000, 0, "", None, -1, {tp: OffsetValue(9)}, T0)
        store.write_marker(c.partition_for("g"), 1000, commit=True)
        c.complete_transaction(c.partition_for("g"), 1000, True)
    assert c.fetch_offsets("g", [tp], True)[1][0][1].offset == 9
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.INFO] == []
    assert "group g: committed 1 transactional offsets of producer 1000" in \
        [r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG]


def test_txn_commit_does_not_overwrite_newer_plain_commit():
    c = make()
    tp = ("t", 0)
    txn_commit(c, "g", 7, 0, "", None, -1, {tp: OffsetValue(9)}, T0)
    commit(c, "g", "", None, -1, {tp: OffsetValue(30)}, T0)
    c.complete_transaction(c.partition_for("g"), 7, True)
    assert c.fetch_offsets("g", [tp], False)[1][0][1].offset == 30


def test_txn_offset_commit_generation_checks():
    c = make()
    gen, leader, members = stable_group_of(c, 1)
    tp = ("t", 0)
    assert txn_commit(c, "g", 1, 0, leader, None, gen - 1, {tp: OffsetValue(1)}, T0) == \
        {tp: E.ILLEGAL_GENERATION}
    assert txn_commit(c, "g", 1, 0, "stranger", None, gen, {tp: OffsetValue(1)}, T0) == \
        {tp: E.UNKNOWN_MEMBER_ID}
    assert txn_commit(c, "g", 1, 0, leader, None, gen, {tp: OffsetValue(1)}, T0) == {tp: E.NONE}
    # v0-2 (no member/generation) is accepted
    assert txn_commit(c, "g", 1, 0, "", None, -1, {tp: OffsetValue(2)}, T0) == {tp: E.NONE}


def test_storage_failure_maps_to_kafka_error():
    from minikafka.protocol.errors import KafkaError
    store = MemoryOffsetsStore(50)
    c = make(store=store)
    store.fail_with = KafkaError(E.RECORD_LIST_TOO_LARGE)
    r = commit(c, "s", "", None, -1, {("t", 0): OffsetValue(1)}, T0)
    assert r == {("t", 0): E.INVALID_COMMIT_OFFSET_SIZE}
    assert c.fetch_offsets("s", [("t", 0)], False)[1][0][1] is None


def test_group_config_from_broker_properties():
    from minikafka.broker.config import BrokerConfig
    cfg = BrokerConfig.from_dict({"offsets.retention.minutes": "2", "group.initial.rebalance.delay.ms": "0",
                                  "group.min.session.timeout.ms": "100"})
    gc = GroupConfig.from_broker_config(cfg)
    assert gc.offsets_retention_ms == 120_000
    assert gc.initial_rebalance_delay_ms == 0 and gc.min_session_timeout_ms == 100
    assert gc.max_session_timeout_ms == 1_800_000


# ------------------------------------------------ offsets as Kafka 4.1 answers them (tests/conformance offsets/)

def test_metadata_limit_counts_utf16_units():
    # Kafka compares offset.metadata.max.bytes with a Java String's length (UTF-16 units)
    c = make()
    tp = ("t", 0)
    assert commit(c, "g", "", None, -1, {tp: OffsetValue(1, metadata="é" * 4096)}, T0) == {tp: E.NONE}
    assert commit(c, "g", "", None, -1, {tp: OffsetValue(1, metadata="\U0001F600" * 2048)}, T0) == \
        {tp: E.NONE}
    assert commit(c, "g", "", None, -1, {tp: OffsetValue(1, metadata="\U0001F600" * 2049)}, T0) == \
        {tp: E.OFFSET_METADATA_TOO_LARGE}


def test_same_partition_twice_answered_per_entry():
    c = make()
    tp = ("t", 0)
    r = c.commit_offsets("g", "", None, -1, [(tp, OffsetValue(11)), (tp, OffsetValue(12, metadata="m" * 4097))], T0)
    assert r == [E.NONE, E.OFFSET_METADATA_TOO_LARGE]
    assert c.fetch_offsets("g", [tp], False)[1][0][1].offset == 11


def test_offset_delete_drops_pending_txn_offset():
    store = MemoryOffsetsStore(50)
    c = make(store=store)
    tp = ("t", 0)
    commit(c, "g", "", None, -1, {tp: OffsetValue(2)}, T0)
    txn_commit(c, "g", 1000, 0, "", None, -1, {tp: OffsetValue(9)}, T0)
    assert c.delete_offsets("g", [tp], T0) == (E.NONE, {tp: E.NONE})
    assert c.fetch_offsets("g", [tp], True)[1] == [(tp, None, E.NONE)]
    # the same from the log: the tombstone after the transactional record drops it
    c2 = make(store=store)
    c2.load(T0)
    assert c2.fetch_offsets("g", [tp], True)[1] == [(tp, None, E.NONE)]
    store.write_marker(c.partition_for("g"), 1000, commit=True)
    for coord in (c, c2):
        coord.complete_transaction(c.partition_for("g"), 1000, True)
        assert coord.fetch_offsets("g", [tp], True)[1] == [(tp, None, E.NONE)]


def test_topic_deletion_drops_committed_and_pending_offsets():
    c = make()
    commit(c, "g", "", None, -1, {("t", 0): OffsetValue(2), ("u", 0): OffsetValue(3)}, T0)
    txn_commit(c, "h", 1000, 0, "", None, -1, {("t", 1): OffsetValue(9)}, T0)
    c.on_topic_deleted("t", T0)
    assert c.fetch_offsets("g", None, True)[1] == [(("u", 0), c.offsets.of("g")[("u", 0)], E.NONE)]
    assert c.fetch_offsets("h", [("t", 1)], True)[1] == [(("t", 1), None, E.NONE)]
    c.complete_transaction(c.partition_for("h"), 1000, True)
    assert c.fetch_offsets("h", [("t", 1)], True)[1] == [(("t", 1), None, E.NONE)]
