"""Groups mixing classic and consumer-protocol members (KIP-848 online migration), on the
coordinator alone: an in-memory __consumer_offsets and explicit clock values."""
from __future__ import annotations

import uuid

from minikafka.coordinator.group import GroupConfig, GroupCoordinatorShard, MemoryOffsetsStore
from minikafka.coordinator.group.records import assignment_bytes, parse_assignment
from minikafka.protocol import schema
from minikafka.protocol.errors import ErrorCode as E

T0 = 1_000_000
TID = uuid.UUID(int=7)
TOPICS = {"t": (TID, 2)}
SUB = b"\x00\x00" + schema.build(schema.data_message("ConsumerProtocolSubscription", 0),
                                  {"topics": ["t"], "user_data": None})
PROTOS = [("range", SUB)]


def make(store):
    return GroupCoordinatorShard(GroupConfig(initial_rebalance_delay_ms=0), store, topics=lambda: dict(TOPICS))


def classic_stable(c):
    """A classic member joins alone (session 10 s) and syncs both partitions: generation 1."""
    mid = c.join_group("g", "", None, "c", "/127.0.0.1", 10_000, 30_000, "consumer", PROTOS, True, T0).result["member_id"]
    j = c.join_group("g", mid, None, "c", "/127.0.0.1", 10_000, 30_000, "consumer", PROTOS, True, T0).result
    assert (j["error_code"], j["generation_id"]) == (0, 1)
    s = c.sync_group("g", 1, mid, None, "consumer", "range", {mid: assignment_bytes({"t": {0, 1}}, 0)}, T0).result
    assert s["error_code"] == 0
    return mid


def hb(c, member, now=T0):
    return c.consumer_heartbeat(1, "g", member, 0, None, None, 30_000, ["t"], None, None, [], "client", "/127.0.0.1",
                                now)


def test_upgrade_is_written_as_a_consumer_group_and_survives_a_reload():
    store = MemoryOffsetsStore(50)
    c = make(store)
    m1 = classic_stable(c)
    r = hb(c, "m2")
    assert (r["error_code"], r["member_epoch"]) == (0, 2)
    again = make(store)
    again.load(T0 + 5)
    before, after = c.consumer_describe("g", 0), again.consumer_describe("g", 0)
    assert before == after
    assert (after["group_epoch"], after["group_state"]) == (2, "Reconciling")
    assert {m["member_id"]: m["member_type"] for m in after["members"]} == {m1: 0, "m2": 1}
    # the classic member is told to rejoin, rejoins at the group epoch and syncs its half
    assert again.heartbeat("g", 1, m1, None, T0 + 6) == E.REBALANCE_IN_PROGRESS
    j = again.join_group("g", m1, None, "c", "/127.0.0.1", 10_000, 30_000, "consumer", PROTOS, True, T0 + 7).result
    assert (j["error_code"], j["generation_id"], j["leader"], j["members"]) == (0, 2, "", [])
    s = again.sync_group("g", 2, m1, None, "consumer", "range", {}, T0 + 8).result
    assert s["error_code"] == 0 and parse_assignment(s["assignment"]) == {"t": {0}}


def test_classic_member_lives_by_its_own_session_timeout():
    c = make(MemoryOffsetsStore(50))
    m1 = classic_stable(c)
    hb(c, "m2")
    # the consumer member keeps heartbeating; the classic one stops: gone after its 10 s, not 45 s
    c.consumer_heartbeat(1, "g", "m2", 2, None, None, -1, None, None, None, None, "client", "/127.0.0.1", T0 + 9_000)
    c.tick(T0 + 10_001)
    assert [m["member_id"] for m in c.consumer_describe("g", 0)["members"]] == ["m2"]
    assert c.heartbeat("g", 1, m1, None, T0 + 10_002) == E.UNKNOWN_MEMBER_ID


def test_classic_join_to_a_consumer_group_asks_for_a_member_id_in_uuid_form():
    c = make(MemoryOffsetsStore(50))
    hb(c, "m1")
    r = c.join_group("g", "", None, "c", "/127.0.0.1", 10_000, 30_000, "consumer", PROTOS, True, T0).result
    assert r["error_code"] == E.MEMBER_ID_REQUIRED and len(r["member_id"]) == 22
    j = c.join_group("g", r["member_id"], None, "c", "/127.0.0.1", 10_000, 30_000, "consumer", PROTOS, True,
                     T0).result
    assert (j["error_code"], j["generation_id"], j["protocol_name"]) == (0, 2, "range")
    other = c.join_group("g", "", None, "c", "/127.0.0.1", 10_000, 30_000, "connect", [("x", b"")], True, T0).result
    assert other["error_code"] == E.INCONSISTENT_GROUP_PROTOCOL


def test_last_consumer_member_leaving_makes_a_classic_group_again_that_survives_a_reload():
    store = MemoryOffsetsStore(50)
    c = make(store)
    m1 = classic_stable(c)
    hb(c, "m2")
    r = c.consumer_heartbeat(1, "g", "m2", -1, None, None, -1, None, None, None, None, "client", "/127.0.0.1", T0 + 1)
    assert (r["error_code"], r["member_epoch"]) == (0, -1)
    d = c.describe_group("g")
    assert (d["group_state"], [m["member_id"] for m in d["members"]]) == ("PreparingRebalance", [m1])
    assert parse_assignment(d["members"][0]["member_assignment"]) == {"t": {0}}  # its target in the consumer group
    assert c.consumer_describe("g", 0)["error_code"] == E.GROUP_ID_NOT_FOUND
    assert c.heartbeat("g", 2, m1, None, T0 + 2) == E.REBALANCE_IN_PROGRESS
    again = make(store)
    again.load(T0 + 5)
    d = again.describe_group("g")
    assert (d["group_state"], d["protocol_data"], [m["member_id"] for m in d["members"]]) == ("Stable", "range", [m1])
    assert again.heartbeat("g", 2, m1, None, T0 + 6) == E.NONE


def test_migration_policy_disabled_refuses_the_upgrade_and_keeps_the_consumer_group():
    c = GroupCoordinatorShard(GroupConfig(initial_rebalance_delay_ms=0, migration_policy="disabled"),
                         MemoryOffsetsStore(50), topics=lambda: dict(TOPICS))
    classic_stable(c)
    assert hb(c, "m2")["error_code"] == E.GROUP_ID_NOT_FOUND
    assert c.describe_group("g")["group_state"] == "Stable"


def test_classic_member_must_sync_and_rejoin_within_its_rebalance_timeout():
    c = make(MemoryOffsetsStore(50))
    hb(c, "m1")

    def join(member, now):
        return c.join_group("g", member, None, "c", "/127.0.0.1", 60_000, 1_000, "consumer", PROTOS, True, now).result
    m2 = join(join("", T0)["member_id"], T0)["member_id"]
    c.tick(T0 + 999)
    assert m2 in [m["member_id"] for m in c.consumer_describe("g", 0)["members"]]
    c.tick(T0 + 1_000)  # no SyncGroup within its rebalance timeout: fenced
    assert [m["member_id"] for m in c.consumer_describe("g", 0)["members"]] == ["m1"]
    j = join(join("", T0 + 2_000)["member_id"], T0 + 2_000)
    m3 = j["member_id"]
    assert c.sync_group("g", j["generation_id"], m3, None, "consumer", "range", {}, T0 + 2_100).result["error_code"] == 0
    c.tick(T0 + 3_500)  # synced: no sync timeout any more
    hb(c, "m4", now=T0 + 3_500)
    assert c.heartbeat("g", j["generation_id"], m3, None, T0 + 4_000) == E.REBALANCE_IN_PROGRESS
    assert c.heartbeat("g", j["generation_id"], m3, None, T0 + 4_500) == E.REBALANCE_IN_PROGRESS
    c.tick(T0 + 4_999)
    assert m3 in [m["member_id"] for m in c.consumer_describe("g", 0)["members"]]
    c.tick(T0 + 5_000)  # the first REBALANCE_IN_PROGRESS started its rebalance timeout
    assert sorted(m["member_id"] for m in c.consumer_describe("g", 0)["members"]) == ["m1", "m4"]


def test_classic_static_member_replacing_the_last_consumer_member_downgrades_without_a_rebalance():
    store = MemoryOffsetsStore(50)
    c = make(store)
    c.consumer_heartbeat(1, "g", "m1", 0, "i1", None, 30_000, ["t"], None, None, [], "client", "/127.0.0.1", T0)

    def join(instance):
        return c.join_group("g", "", instance, "c", "/127.0.0.1", 10_000, 30_000, "consumer", PROTOS, True, T0).result
    j2 = join("i2")
    assert (j2["error_code"], j2["generation_id"], len(j2["member_id"])) == (0, 2, 22)
    j3 = join("i1")
    assert (j3["error_code"], j3["generation_id"]) == (0, 2)
    d = c.describe_group("g")
    assert d["group_state"] == "Stable" and c.consumer_describe("g", 0)["error_code"] == E.GROUP_ID_NOT_FOUND
    # the joining member has the replaced member's target assignment
    assert {m["member_id"]: parse_assignment(m["member_assignment"]) for m in d["members"]} == \
        {j2["member_id"]: {"t": {1}}, j3["member_id"]: {"t": {0}}}
    again = make(store)
    again.load(T0 + 5)
    assert again.describe_group("g")["members"] == d["members"]
