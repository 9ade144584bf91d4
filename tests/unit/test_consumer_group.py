"""KIP-848 consumer groups in the group coordinator alone (no broker): an in-memory
__consumer_offsets, explicit clock values, topics given as a dict."""
from __future__ import annotations

import uuid

from minikafka.coordinator.group import GroupConfig, GroupCoordinatorShard, MemoryOffsetsStore
from minikafka.coordinator.group.consumer import (STABLE, UNRELEASED_PARTITIONS, UNREVOKED_PARTITIONS,
                                                  ConsumerMember, reconcile)
from minikafka.coordinator.group.records import ConsumerGroupKey, parse_key
from minikafka.protocol.errors import ErrorCode as E

T0 = 1_000_000
TID = uuid.UUID(int=7)
TOPICS = {"t": (TID, 4)}


class TP:
    def __init__(self, topic_id, partitions):
        self.topic_id, self.partitions = topic_id, partitions


def make(store=None, session_ms=45_000, topics=None):
    cfg = GroupConfig(consumer_session_timeout_ms=session_ms)
    return GroupCoordinatorShard(cfg, store or MemoryOffsetsStore(50), topics=lambda: dict(topics or TOPICS))


def hb(c, member, epoch=0, now=T0, topics=("t",), owned=(), rto=30_000, instance=None, group="g"):
    full = epoch == 0
    return c.consumer_heartbeat(1, group, member, epoch, instance, None, rto if full else -1,
                                list(topics) if full else None, None, None,
                                None if owned is None else [TP(TID, list(owned))] if owned else [],
                                "client", "/127.0.0.1", now)


def parts(resp):
    a = resp["assignment"]
    return None if a is None else sorted(p for tp in a["topic_partitions"] for p in tp["partitions"])


def test_reconcile_revokes_before_assigning():
    m = ConsumerMember("a", member_epoch=1, assigned={TID: {0, 1, 2, 3}})
    owners = {}
    step = reconcile(m, 2, {TID: {0, 1}}, None, lambda t, p: owners.get(p))
    assert (step.state, step.member_epoch, step.assigned, step.pending_revocation) == \
        (UNREVOKED_PARTITIONS, 1, {TID: {0, 1}}, {TID: {2, 3}})
    # still owning 2: nothing moves; once it says it owns only 0, 1 it moves to epoch 2
    assert reconcile(step, 2, {TID: {0, 1}}, {TID: {0, 1, 2}}, lambda t, p: None) is step
    done = reconcile(step, 2, {TID: {0, 1}}, {TID: {0, 1}}, lambda t, p: None)
    assert (done.state, done.member_epoch, done.previous_member_epoch) == (STABLE, 2, 1)
    # a partition still held elsewhere is not given yet
    b = ConsumerMember("b", member_epoch=0)
    wait = reconcile(b, 2, {TID: {2, 3}}, {}, lambda t, p: "a" if p == 3 else None)
    assert (wait.state, wait.member_epoch, wait.assigned) == (UNRELEASED_PARTITIONS, 2, {TID: {2}})


def test_join_revocation_and_records_reload():
    store = MemoryOffsetsStore(50)
    c = make(store)
    a = hb(c, "a")
    assert (a["error_code"], a["member_epoch"], parts(a)) == (0, 1, [0, 1, 2, 3])
    b = hb(c, "b")
    assert (b["member_epoch"], parts(b)) == (2, [])
    a = hb(c, "a", 1, owned=None)
    assert (a["member_epoch"], parts(a)) == (1, [0, 1])
    a = hb(c, "a", 1, owned=[0, 1])
    assert (a["member_epoch"], parts(a)) == (2, None)
    b = hb(c, "b", 2, owned=[])
    assert (b["member_epoch"], parts(b)) == (2, [2, 3])
    # every record type is one Kafka's coordinator reads: 3, 5, 6, 7, 8
    kinds = {parse_key(k).kind for bs in store.partitions.values() for batch in bs for _, k, _ in batch.records
             if isinstance(parse_key(k), ConsumerGroupKey)}
    assert kinds == {3, 5, 6, 7, 8}
    again = make(store)
    again.load(T0 + 5)
    before, after = c.consumer_describe("g", 0), again.consumer_describe("g", 0)
    assert before == after and after["group_state"] == "Stable"


def test_session_expiry_and_fencing():
    c = make(session_ms=2000)
    hb(c, "a")
    assert hb(c, "a", 5)["error_code"] == E.FENCED_MEMBER_EPOCH
    assert hb(c, "zz", 1)["error_code"] == E.UNKNOWN_MEMBER_ID
    c.tick(T0 + 1999)
    assert hb(c, "a", 1, now=T0 + 1999)["error_code"] == 0
    c.tick(T0 + 1999 + 2000)
    assert hb(c, "a", 1, now=T0 + 4000)["error_code"] == E.UNKNOWN_MEMBER_ID
    assert c.consumer_describe("g", 0)["group_epoch"] == 2


def test_delete_groups_evaluates_expired_sessions_at_request_time():
    """No timer tick ran since the session ran out: DeleteGroups still sees the group empty
    (failed before: NON_EMPTY_GROUP until the next tick)."""
    c = make(session_ms=2000)
    hb(c, "a", instance="i1")
    assert c.delete_groups(["g"], T0 + 1000) == {"g": E.NON_EMPTY_GROUP}
    assert c.delete_groups(["g"], T0 + 2000) == {"g": E.NONE}
    # a classic group with a static member, the same way
    w = c.join_group("cl", "", "s1", "c", "/h", 6000, 6000, "consumer", [("range", b"")], False, T0)
    c.tick(T0 + 3001)  # the initial rebalance delay is over: the generation completes
    assert w.done and w.result["error_code"] == 0
    mid = next(iter(c.group("cl").members))
    gen = c.group("cl").generation_id
    c.sync_group("cl", gen, mid, "s1", "consumer", "range", {mid: b"x"}, T0 + 3001)
    assert c.delete_groups(["cl"], T0 + 3002) == {"cl": E.NON_EMPTY_GROUP}
    assert c.delete_groups(["cl"], T0 + 3001 + 6000) == {"cl": E.NONE}


def test_commit_checks_member_epoch():
    c = make()
    hb(c, "a")
    g = c.group("g")
    assert c.consumer.validate_commit(g, "a", 1, False, 9) == E.NONE
    assert c.consumer.validate_commit(g, "a", 2, False, 9) == E.STALE_MEMBER_EPOCH
    assert c.consumer.validate_commit(g, "a", 1, False, 8) == E.UNSUPPORTED_VERSION
    assert c.consumer.validate_commit(g, "a", 0, True, 4) == E.ILLEGAL_GENERATION
    assert c.consumer.validate_commit(g, "b", 1, True, 4) == E.UNKNOWN_MEMBER_ID


def test_v0_join_gets_a_member_id_from_the_coordinator():
    c = make()
    r = c.consumer_heartbeat(0, "g", "", 0, None, None, 30_000, ["t"], None, None, [], "client", "/h", T0)
    assert r["error_code"] == 0 and len(r["member_id"]) == 22 and r["member_epoch"] == 1
    assert c.consumer_heartbeat(1, "g", "", 0, None, None, 30_000, ["t"], None, None, [], "c", "/h", T0)[
        "error_code"] == E.INVALID_REQUEST


def test_static_member_replaced_then_reloaded_keeps_its_target():
    store = MemoryOffsetsStore(50)
    c = make(store)
    hb(c, "a", instance="i1")
    r = c.consumer_heartbeat(1, "g", "a", -2, "i1", None, -1, None, None, None, None, "c", "/h", T0)
    assert r["member_epoch"] == -2
    b = hb(c, "b", instance="i1")
    assert (b["member_epoch"], parts(b)) == (1, [0, 1, 2, 3])
    again = make(store)
    again.load(T0 + 1)
    assert again.consumer_describe("g", 0) == c.consumer_describe("g", 0)
    b = hb(again, "b", 1, now=T0 + 2, owned=[0, 1, 2, 3])
    assert (b["error_code"], b["member_epoch"], parts(b)) == (0, 1, None)


def test_member_that_does_not_revoke_in_time_is_removed():
    """The rebalance timeout bounds a revocation: past it the member is fenced and its
    partitions go to the others."""
    c = make(session_ms=60_000)
    hb(c, "a", rto=5000)
    hb(c, "b", rto=5000)
    a = hb(c, "a", 1, now=T0 + 10, owned=None)
    assert parts(a) == [0, 1]  # asked to give up 2 and 3
    c.tick(T0 + 10 + 4999)
    assert len(c.consumer_describe("g", 0)["members"]) == 2
    c.tick(T0 + 10 + 5000)
    assert [m["member_id"] for m in c.consumer_describe("g", 0)["members"]] == ["b"]
    b = hb(c, "b", 2, now=T0 + 5011, owned=[])
    assert (b["error_code"], parts(b)) == (0, [0, 1, 2, 3])


def test_pending_revocation_timeout_starts_again_after_a_reload():
    store = MemoryOffsetsStore(50)
    c = make(store, session_ms=60_000)
    hb(c, "a", rto=5000)
    hb(c, "b", rto=5000)
    assert parts(hb(c, "a", 1, now=T0 + 10, owned=None)) == [0, 1]  # revoking 2, 3
    again = make(store, session_ms=60_000)
    again.load(T0 + 100)
    again.tick(T0 + 100 + 4999)
    assert len(again.consumer_describe("g", 0)["members"]) == 2
    again.tick(T0 + 100 + 5000)
    assert [m["member_id"] for m in again.consumer_describe("g", 0)["members"]] == ["b"]


def test_previous_epoch_after_a_lost_answer_gets_the_assignment_only_when_full():
    """The answer that gave {a} partitions and a new epoch was lost: {a} comes back with its
    previous epoch, owning less than its assignment. As in Kafka 4.1 (recorded in
    cg/fence/previous_epoch_after_lost_answer), a plain heartbeat is accepted at the new epoch
    without the assignment; the full heartbeat a client sends after a lost answer gets it."""
    c = make()
    hb(c, "a")
    hb(c, "b")
    hb(c, "a", 1, owned=None)                       # revoke 2, 3
    assert parts(hb(c, "a", 1, owned=[0, 1])) is None  # acknowledged: epoch 2
    hb(c, "b", 2, owned=[])                         # b gets 2, 3
    assert c.consumer_heartbeat(1, "g", "b", -1, None, None, -1, None, None, None, None, "c", "/h", T0)[
        "error_code"] == 0                          # b leaves: epoch 3, a is to get 2, 3 back
    lost = hb(c, "a", 2, owned=[0, 1])
    assert (lost["member_epoch"], parts(lost)) == (3, [0, 1, 2, 3])  # this answer is lost
    plain = hb(c, "a", 2, owned=[0, 1])
    assert (plain["error_code"], plain["member_epoch"], parts(plain)) == (0, 3, None)
    full = c.consumer_heartbeat(1, "g", "a", 2, None, None, 30_000, ["t"], None, None, [TP(TID, [0, 1])],
                                "client", "/127.0.0.1", T0)
    assert (full["error_code"], full["member_epoch"], parts(full)) == (0, 3, [0, 1, 2, 3])
