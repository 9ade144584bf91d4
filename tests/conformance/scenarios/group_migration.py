"""Groups whose members speak both group protocols (KIP-848 online migration, Kafka 4.1's
default group.consumer.migration.policy=bidirectional): what a consumer fleet rolling from
group.protocol=classic to consumer meets. A ConsumerGroupHeartbeat to a classic group that
uses the consumer embedded protocol upgrades it to a consumer group; its classic members then
live in the consumer group, told of rebalances by REBALANCE_IN_PROGRESS on Heartbeat and given
their assignment by JoinGroup and SyncGroup."""
from ..dsl import Scenario, Subscription, Topic, call, collect, ref, restart
from .classic_groups import ALL, CLASSIC, commit, heartbeat, join, leave, mid, stable_one, sync
from .classic_groups import describe as describe_groups
from .classic_groups import list_groups
from .consumer_groups import beat, describe, hb

T2 = {"t": Topic(partitions=2)}
NO_MIGRATION = dict(CLASSIC, **{"group.consumer.migration.policy": "disabled"})


def upgraded():
    """m1 (classic) is Stable alone with both partitions (generation 1, answers r1, j1);
    {m2} joins with ConsumerGroupHeartbeat (answer b): the group becomes a consumer group."""
    return stable_one() + [hb("{m2}", save="b")]


SCENARIOS = [
    Scenario("group_migration/upgrade/consumer_member_joins_classic_group",
             "A ConsumerGroupHeartbeat joins a Stable classic group: the group is upgraded to a consumer "
             "group (the classic generation is its epoch, bumped by the join), the classic member is listed by "
             "ConsumerGroupDescribe and DescribeGroups answers Dead; the classic member's Heartbeat is told to "
             "rejoin, its JoinGroup and SyncGroup give it its half, its OffsetCommit by generation and its "
             "LeaveGroup are a consumer group's.", topics=T2, broker=CLASSIC, steps=[
        *upgraded(),
        describe(),
        describe_groups(),
        list_groups(),
        heartbeat(mid("j1"), 1),
        join("j1b", member=mid("j1")),
        sync(mid("j1"), 2),
        beat("{m2}", 2, owned=[]),
        heartbeat(mid("j1"), 2),
        commit(mid("j1"), 2),
        commit(mid("j1"), 1),
        describe(),
        leave([(mid("j1"), None)]),
        describe(),
        describe_groups(),
    ]),
    Scenario("group_migration/upgrade/member_type_v1",
             "ConsumerGroupDescribe v1 tells the members apart: member_type 0 for the classic member, 1 for the "
             "consumer-protocol one.", topics=T2, broker=CLASSIC, steps=[
        *upgraded(),
        call(69, 1, {"group_ids": ["{g}"], "include_authorized_operations": False}),
    ]),
    Scenario("group_migration/upgrade/stale_generation_and_unknown_member",
             "Classic requests to the upgraded group with a wrong generation or an unknown member id: "
             "Heartbeat, SyncGroup and OffsetCommit answer as a consumer group answers classic members.",
             topics=T2, broker=CLASSIC, steps=[
        *upgraded(),
        heartbeat(mid("j1"), 7),
        heartbeat("conformance-unknown", 1),
        sync(mid("j1"), 1),
        sync(mid("j1"), 7),
        sync("conformance-unknown", 1),
        commit(mid("j1"), 7),
        commit("conformance-unknown", 1),
        leave([("conformance-unknown", None)]),
    ]),
    Scenario("group_migration/upgrade/refused_for_other_protocol_type",
             "A classic group whose protocol type is not 'consumer' (Kafka Connect's, here) is not upgraded: "
             "the ConsumerGroupHeartbeat is GROUP_ID_NOT_FOUND and the group stays classic.",
             topics=T2, broker=CLASSIC, steps=[
        join("r1", ptype="connect", protocols=[("default", b"")]),
        join("j1", member=mid("r1"), ptype="connect", protocols=[("default", b"")]),
        sync(mid("j1"), 1, [(mid("j1"), b"")], ptype="connect", pname="default"),
        hb("{m2}"),
        describe_groups(),
        describe(),
    ]),
    Scenario("group_migration/upgrade/during_rebalance",
             "A ConsumerGroupHeartbeat to a classic group in PreparingRebalance upgrades it: the held "
             "JoinGroup is answered REBALANCE_IN_PROGRESS, and the member that sent it is a member of the "
             "consumer group at the classic generation, told to rejoin by its Heartbeat.",
             topics=T2, broker=CLASSIC, steps=[
        *stable_one(),
        join("r2", who="m2"),
        join("j2", member=mid("r2"), who="m2", defer=True),
        describe_groups(until={"groups.0.group_state": "PreparingRebalance"}),
        hb("{m3}"),
        collect("j2"),
        heartbeat(mid("j2"), 1, who="m2"),
        heartbeat(mid("j1"), 1),
        describe_groups(),
        list_groups(),
    ]),
    # ------------------------------------------------- classic members join a consumer group
    Scenario("group_migration/classic_join/member_id_required",
             "A classic JoinGroup v9 to a consumer group with a member: MEMBER_ID_REQUIRED with a member id in "
             "Kafka's UUID form; with it the member joins the consumer group (the group epoch is bumped, the "
             "generation is its member epoch, no leader and no member list), SyncGroup gives it what is free, "
             "its Heartbeat asks it to rejoin until the consumer member released its partition.",
             topics=T2, broker=CLASSIC, steps=[
        hb("{m1}", save="a"),
        join("r2", who="m2"),
        join("j2", member=mid("r2"), who="m2"),
        sync(mid("j2"), ref("j2.generation_id"), who="m2"),
        heartbeat(mid("j2"), ref("j2.generation_id"), who="m2"),
        beat("{m1}", 1),
        beat("{m1}", 1, owned=[("a", [0])]),
        heartbeat(mid("j2"), ref("j2.generation_id"), who="m2"),
        join("j2b", member=mid("j2"), who="m2"),
        sync(mid("j2"), ref("j2b.generation_id"), who="m2"),
        heartbeat(mid("j2"), ref("j2b.generation_id"), who="m2"),
        describe(),
        describe_groups(),
    ]),
    Scenario("group_migration/classic_join/rebalance_timeouts",
             "A classic member of a consumer group that does not sync within its rebalance timeout after its "
             "JoinGroup, or does not rejoin within it after its Heartbeat was answered REBALANCE_IN_PROGRESS, is "
             "removed from the group (the group epoch is bumped).", topics=T2, broker=CLASSIC, steps=[
        hb("{m1}", save="a"),
        join("r2", who="m2", rebalance=1000),
        join("j2", member=mid("r2"), who="m2", rebalance=1000),
        describe(until={"groups.0.group_epoch": 3}),
        heartbeat(mid("j2"), ref("j2.generation_id"), who="m2"),
        join("r3", who="m3", rebalance=1000),
        join("j3", member=mid("r3"), who="m3", rebalance=1000),
        sync(mid("j3"), ref("j3.generation_id"), who="m3"),
        hb("{m4}"),
        heartbeat(mid("j3"), ref("j3.generation_id"), who="m3"),
        describe(until={"groups.0.group_epoch": 6}),
        heartbeat(mid("j3"), ref("j3.generation_id"), who="m3"),
    ]),
    Scenario("group_migration/static/classic_replaces_last_consumer_member",
             "A classic static member joins a consumer group; another classic static member takes the instance "
             "id of the last consumer-protocol member: the group is a classic group again.",
             topics=T2, broker=CLASSIC, steps=[
        hb("{m1}", instance="{i1}", save="a"),
        join("j2", who="m2", instance="{i2}"),
        sync(mid("j2"), ref("j2.generation_id"), who="m2", instance="{i2}"),
        join("j3", who="m3", instance="{i1}"),
        describe_groups(),
        describe(),
        heartbeat(mid("j3"), ref("j3.generation_id"), who="m3", instance="{i1}"),
        heartbeat(mid("j2"), ref("j2.generation_id"), who="m2", instance="{i2}"),
        sync(mid("j3"), ref("j3.generation_id"), who="m3", instance="{i1}"),
    ]),
    Scenario("group_migration/classic_join/refused",
             "Classic JoinGroups a consumer group with a member refuses: another protocol type, and a "
             "protocol no classic member supports (INCONSISTENT_GROUP_PROTOCOL); a JoinGroup v3 (no "
             "MEMBER_ID_REQUIRED) joins at once.",
             topics=T2, broker=CLASSIC, steps=[
        hb("{m1}", save="a"),
        join("x1", who="m2", ptype="connect", protocols=[("default", b"")]),
        join("r2", who="m2"),
        join("j2", member=mid("r2"), who="m2"),
        join("x2", who="m3", protocols=[("roundrobin", Subscription(["{t}"]))], v=3),
        join("j3", who="m3", protocols=[("range", Subscription(["{t}"])), ("roundrobin", Subscription(["{t}"]))],
             v=3),
        describe(),
    ]),
    # ------------------------------------------- the last consumer member leaves: a classic group again
    Scenario("group_migration/downgrade/last_consumer_member_leaves",
             "The consumer-protocol member leaves a group whose other members are classic: the group is a "
             "classic group again (generation = the group epoch, the members' target assignments theirs) and "
             "rebalances; the classic member rejoins, leads the next generation and syncs.",
             topics=T2, broker=CLASSIC, steps=[
        *upgraded(),
        join("j1b", member=mid("j1")),
        sync(mid("j1"), 2),
        beat("{m2}", 2, owned=[]),
        hb("{m2}", -1, topics=None, owned=None, rto=-1),
        describe_groups(),
        describe(),
        list_groups(),
        heartbeat(mid("j1"), 1),
        heartbeat(mid("j1"), 2),
        join("j1c", member=mid("j1")),
        sync(mid("j1"), ref("j1c.generation_id"), [(mid("j1"), ALL)]),
        heartbeat(mid("j1"), ref("j1c.generation_id")),
        describe_groups(),
    ]),
    Scenario("group_migration/downgrade/not_while_consumer_members_remain",
             "A consumer-protocol member leaves while another one stays: the group stays a consumer group; a "
             "classic member's LeaveGroup never downgrades it either.", topics=T2, broker=CLASSIC, steps=[
        *upgraded(),
        hb("{m3}"),
        hb("{m2}", -1, topics=None, owned=None, rto=-1),
        describe(),
        describe_groups(),
        leave([(mid("j1"), None)]),
        describe(),
    ]),
    Scenario("group_migration/downgrade/survives_kill",
             "The downgrade is written as Kafka writes it (the consumer group's tombstones, then the classic "
             "group's record): after a kill -9 the group is the classic group, its member in it.",
             topics=T2, broker=CLASSIC, steps=[
        *upgraded(),
        hb("{m2}", -1, topics=None, owned=None, rto=-1),
        restart(kill=True),
        describe_groups(),
        describe(),
        heartbeat(mid("j1"), 2),
        join("j1c", member=mid("j1")),
        sync(mid("j1"), ref("j1c.generation_id"), [(mid("j1"), ALL)]),
        describe_groups(),
    ]),
    Scenario("group_migration/policy/disabled",
             "group.consumer.migration.policy=disabled: a ConsumerGroupHeartbeat to a classic group with members "
             "is GROUP_ID_NOT_FOUND; a classic member still joins a consumer group, which stays a consumer "
             "group when its last consumer-protocol member leaves.", topics=T2, broker=NO_MIGRATION, steps=[
        *stable_one(group="{g2}"),
        hb("{m9}", group="{g2}"),
        describe_groups(groups=("{g2}",)),
        hb("{m1}", save="a"),
        join("r2", who="m2"),
        join("j2", member=mid("r2"), who="m2"),
        hb("{m1}", -1, topics=None, owned=None, rto=-1),
        describe(),
        describe_groups(),
    ]),
    Scenario("group_migration/upgrade/survives_kill",
             "The upgraded group is written to __consumer_offsets as a consumer group (the classic group's "
             "tombstone, the members with their classic metadata): after a kill -9 it is the same consumer "
             "group, its classic member still told to rejoin.", topics=T2, broker=CLASSIC, steps=[
        *upgraded(),
        restart(kill=True),
        describe(),
        describe_groups(),
        heartbeat(mid("j1"), 1),
        join("j1b", member=mid("j1")),
        sync(mid("j1"), 2),
    ]),
]
