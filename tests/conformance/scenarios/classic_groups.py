"""The classic consumer group protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup), as
kafka-python, aiokafka, librdkafka, Spark and the Java client (group.protocol=classic) speak
it: member ids handed out with MEMBER_ID_REQUIRED, generations, rebalances, static members
and their fencing; offsets committed and fetched by generation (OffsetCommit, OffsetFetch,
OffsetDelete), KIP-447 fencing of TxnOffsetCommit by generation, member and instance id, and
what a transactional commit leaves visible; DescribeGroups, ListGroups and DeleteGroups
through the rebalance states.

Every member speaks on a connection of its own (``who``): a JoinGroup or SyncGroup the
coordinator holds back until the rebalance moves on is sent with ``defer=True`` and read
later with ``collect``; the step after it polls (``until=``) until Kafka has taken it in,
since two connections' requests have no order of their own. The group's first join
completes at once: ``group.initial.rebalance.delay.ms=0``.

Kafka answers a JoinGroup that creates a group before the group's first record is committed,
and DescribeGroups and ListGroups read the committed state: a group a join has just created
is described after polling until it shows."""
from ..dsl import (Assignment, Scenario, Subscription, Topic, add_offsets, add_partitions, await_txn, call, collect,
                   end_txn, init_pid, ref, restart)

CLASSIC = {"group.initial.rebalance.delay.ms": "0"}
T2 = {"t": Topic(partitions=2)}
T2O = {"t": Topic(partitions=2), "o": Topic()}
SUB = Subscription(["{t}"])
ALL = Assignment([("{t}", [0, 1])])


def mid(saved: str):
    """The member id in a saved JoinGroup answer."""
    return ref(f"{saved}.member_id")


def join(save, member="", who="m1", instance=None, session=30000, rebalance=60000, ptype="consumer",
         protocols=None, v=9, group="{g}", **kw):
    protocols = [("range", SUB)] if protocols is None else protocols
    body = {"group_id": group, "session_timeout_ms": session, "rebalance_timeout_ms": rebalance,
            "member_id": member, "group_instance_id": instance, "protocol_type": ptype,
            "protocols": [{"name": n, "metadata": m} for n, m in protocols], "reason": None}
    return call(11, v, body, save=save, conn=who, **kw)


def sync(member, generation, assignments=(), who="m1", instance=None, ptype="consumer", pname="range", v=5,
         group="{g}", **kw):
    """SyncGroup; ``assignments`` = [(member id, Assignment)] (the leader's)."""
    return call(14, v, {"group_id": group, "generation_id": generation, "member_id": member,
                        "group_instance_id": instance, "protocol_type": ptype, "protocol_name": pname,
                        "assignments": [{"member_id": m, "assignment": a} for m, a in assignments]},
                conn=who, **kw)


def heartbeat(member, generation, who="m1", instance=None, v=4, group="{g}", **kw):
    return call(12, v, {"group_id": group, "generation_id": generation, "member_id": member,
                        "group_instance_id": instance}, conn=who, **kw)


def leave(members, v=5, group="{g}", **kw):
    """LeaveGroup v3+: ``members`` = [(member id, instance id)]; v0-2: one member id."""
    if v < 3:
        return call(13, v, {"group_id": group, "member_id": members}, **kw)
    return call(13, v, {"group_id": group, "members": [{"member_id": m, "group_instance_id": i, "reason": None}
                                                       for m, i in members]}, **kw)


def commit(member="", generation=-1, offsets=None, v=8, instance=None, metadata="", group="{g}", **kw):
    """OffsetCommit; ``offsets`` = {(topic, partition): offset}, default {("{t}", 0): 5}."""
    offsets = {("{t}", 0): 5} if offsets is None else offsets
    topics: dict = {}
    for (t, p), off in offsets.items():
        topics.setdefault(t, []).append({"partition_index": p, "committed_offset": off,
                                         "committed_leader_epoch": -1, "committed_metadata": metadata})
    return call(8, v, {"group_id": group, "generation_id_or_member_epoch": generation, "member_id": member,
                       "group_instance_id": instance, "retention_time_ms": -1,
                       "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]}, **kw)


def fetch(parts=(("{t}", [0, 1]),), groups=("{g}",), stable=False, v=8, **kw):
    """OffsetFetch; ``parts=None`` asks for all of a group's offsets. v8+: every group in ``groups``."""
    topics = None if parts is None else [{"name": t, "partition_indexes": list(ps)} for t, ps in parts]
    if v < 8:
        return call(9, v, {"group_id": groups[0], "topics": topics, "require_stable": stable}, **kw)
    return call(9, v, {"groups": [{"group_id": g, "member_id": None, "member_epoch": -1, "topics": topics}
                                  for g in groups], "require_stable": stable}, **kw)


def describe(groups=("{g}",), v=5, **kw):
    return call(15, v, {"groups": list(groups), "include_authorized_operations": False}, **kw)


def list_groups(states=(), types=(), v=5, **kw):
    body = {"states_filter": list(states)}
    if v >= 5:
        body["types_filter"] = list(types)
    return call(16, v, body, **kw)


def delete_groups(groups=("{g}",), **kw):
    return call(42, 2, {"groups_names": list(groups)}, **kw)


def offset_delete(parts, group="{g}", **kw):
    return call(47, 0, {"group_id": group, "topics": [{"name": t, "partitions": [{"partition_index": p}
                                                                                for p in ps]}
                                                     for t, ps in parts]}, **kw)


def txn_commit(who, offsets, member="", generation=-1, instance=None, v=3, group="{g}", **kw):
    """TxnOffsetCommit of the producer saved as ``who``: {(topic, partition): offset}."""
    topics: dict = {}
    for (t, p), off in offsets.items():
        topics.setdefault(t, []).append({"partition_index": p, "committed_offset": off,
                                         "committed_leader_epoch": -1, "committed_metadata": ""})
    return call(28, v, {"transactional_id": "{tx}", "group_id": group, "producer_id": ref(f"{who}.producer_id"),
                        "producer_epoch": ref(f"{who}.producer_epoch"), "generation_id": generation,
                        "member_id": member, "group_instance_id": instance,
                        "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]}, **kw)


def stable_one(who="m1", n="1", instance=None, assignment=ALL, group="{g}"):
    """A member joins a new group and syncs as its leader: generation 1, Stable. Its JoinGroup
    answer is saved as j<n> (a dynamic member asks for its id first: r<n>)."""
    steps = []
    if instance is None:
        steps.append(join(f"r{n}", who=who, group=group))
        steps.append(join(f"j{n}", member=mid(f"r{n}"), who=who, group=group))
    else:
        steps.append(join(f"j{n}", who=who, instance=instance, group=group))
    steps.append(sync(mid(f"j{n}"), 1, [(mid(f"j{n}"), assignment)], who=who, instance=instance, group=group,
                      save=f"s{n}"))
    return steps


def stable_two():
    """m1 is Stable alone (generation 1); m2 joins (held back), m1 is told to rejoin by its
    heartbeat, rejoins: generation 2 with m1 the leader; m2 syncs first (held back until the
    leader's assignment), m1 syncs with one partition each. Saved: j1 (m1's join, also
    generation 2's: j1b), j2 (m2's), s2 (m2's sync)."""
    return stable_one() + [
        join("r2", who="m2"),
        join("j2", member=mid("r2"), who="m2", defer=True),
        heartbeat(mid("j1"), 1, until={"error_code": 27}),
        join("j1b", member=mid("j1")),
        collect("j2"),
        sync(mid("j2"), 2, who="m2", defer=True, save="s2"),
        sync(mid("j1"), 2, [(mid("j1"), Assignment([("{t}", [0])])), (mid("j2"), Assignment([("{t}", [1])]))]),
        collect("s2"),
    ]


SCENARIOS = [
    # ------------------------------------------------------------ joining
    Scenario("classic/join/member_id_required", "JoinGroup v9 with an empty member id: MEMBER_ID_REQUIRED with "
             "the id the coordinator made; the join with it is generation 1 with the member the leader; the "
             "leader's SyncGroup makes the group Stable.", topics=T2, broker=CLASSIC, steps=[
        join("r1"),
        join("j1", member=mid("r1")),
        sync(mid("j1"), 1, [(mid("j1"), ALL)]),
        heartbeat(mid("j1"), 1),
        describe(),
        list_groups(types=["classic"]),
    ]),
    Scenario("classic/join/unknown_member_id_and_v3", "A member id the coordinator never gave, to a new group: "
             "UNKNOWN_MEMBER_ID; JoinGroup v3 (before KIP-394) joins at once with an empty member id.",
             topics=T2, broker=CLASSIC, steps=[
        join("x", member="{x}"),
        join("j1", v=3),
        describe(until={"groups.0.group_state": "CompletingRebalance"}),
        join("x2", member="{x}", v=3),
    ]),
    Scenario("classic/join/invalid_session_timeout", "Session timeouts outside group.min/max.session.timeout.ms "
             "(6000..1800000): INVALID_SESSION_TIMEOUT, before the member id is asked for; an empty group id: "
             "INVALID_GROUP_ID.", topics=T2, broker=CLASSIC, steps=[
        join("a", session=5999),
        join("b", session=1800001),
        join("c", session=6000),
        join("d", session=30000, rebalance=1),
        join("e", group=""),
        describe(until={"groups.0.group_state": "Empty"}),
    ]),
    Scenario("classic/join/inconsistent_protocol_new_group", "A new group's first member without a protocol type "
             "or without protocols: INCONSISTENT_GROUP_PROTOCOL, yet the group is created (Empty).", topics=T2,
             broker=CLASSIC, steps=[
        join("a", ptype=""),
        join("b", protocols=[]),
        describe(until={"groups.0.group_state": "Empty"}),
        list_groups(types=["classic"]),
    ]),
    Scenario("classic/join/inconsistent_protocol_stable_group", "A Stable consumer group: a join with another "
             "protocol type or no protocol in common is INCONSISTENT_GROUP_PROTOCOL (before MEMBER_ID_REQUIRED); "
             "one protocol in common is enough; the leader rejoining with another type is refused too.",
             topics=T2, broker=CLASSIC, steps=stable_one() + [
        join("a", who="m2", ptype="connect"),
        join("b", who="m2", protocols=[("roundrobin", SUB)]),
        join("c", who="m2", protocols=[("roundrobin", SUB), ("range", SUB)]),
        join("d", member=mid("j1"), ptype="connect"),
        join("e", member=mid("j1"), protocols=[("roundrobin", SUB)]),
        heartbeat(mid("j1"), 1),
        describe(),
    ]),
    Scenario("classic/join/second_member_rebalance", "A second member joins a Stable group: PreparingRebalance; "
             "the first gets REBALANCE_IN_PROGRESS on Heartbeat and OffsetCommit; it rejoins and the join "
             "phase completes for both (generation 2, the first stays leader); CompletingRebalance until the "
             "leader syncs; the follower's early SyncGroup gets its assignment when the leader's comes.",
             topics=T2, broker=CLASSIC, steps=stable_one() + [
        join("r2", who="m2"),
        join("j2", member=mid("r2"), who="m2", defer=True),
        heartbeat(mid("j1"), 1, until={"error_code": 27}),
        describe(),
        commit(mid("j1"), 1),
        list_groups(states=["PreparingRebalance"]),
        join("j1b", member=mid("j1")),
        collect("j2"),
        describe(),
        heartbeat(mid("j2"), 2, who="m2"),
        commit(mid("j2"), 2),
        sync(mid("j2"), 2, who="m2", defer=True, save="s2"),
        sync(mid("j1"), 2, [(mid("j1"), Assignment([("{t}", [0])])), (mid("j2"), Assignment([("{t}", [1])]))]),
        collect("s2"),
        describe(),
        commit(mid("j2"), 2),
        heartbeat(mid("j1"), 1),
    ]),
    Scenario("classic/join/leader_rejoins_stable", "The leader of a Stable group joins again with the same "
             "metadata: a new generation at once (it is the only member); its old generation is then "
             "ILLEGAL_GENERATION for Heartbeat, SyncGroup and OffsetCommit.", topics=T2, broker=CLASSIC,
             steps=stable_one() + [
        join("j1b", member=mid("j1")),
        heartbeat(mid("j1"), 1),
        sync(mid("j1"), 1, [(mid("j1"), ALL)]),
        commit(mid("j1"), 1),
        sync(mid("j1"), 2, [(mid("j1"), ALL)]),
        commit(mid("j1"), 2),
    ]),
    Scenario("classic/join/leader_leaves_during_rebalance", "The leader leaves while a second member waits in "
             "the join phase: the phase completes with the waiting member alone, its leader.", topics=T2,
             broker=CLASSIC, steps=stable_one() + [
        join("r2", who="m2"),
        join("j2", member=mid("r2"), who="m2", defer=True),
        heartbeat(mid("j1"), 1, until={"error_code": 27}),
        leave([(mid("j1"), None)]),
        collect("j2"),
        sync(mid("j2"), 2, [(mid("j2"), ALL)], who="m2"),
        describe(),
        heartbeat(mid("j1"), 2),
    ]),
    # ------------------------------------------------------------ sync and heartbeat
    Scenario("classic/sync/errors", "SyncGroup with a wrong generation, an unknown member, another protocol "
             "type or name (v5), to a group that does not exist; null type and name are not checked.",
             topics=T2, broker=CLASSIC, steps=stable_one() + [
        sync(mid("j1"), 2, [(mid("j1"), ALL)]),
        sync(mid("j1"), 0),
        sync("{x}", 1),
        sync(mid("j1"), 1, ptype="connect"),
        sync(mid("j1"), 1, pname="roundrobin"),
        sync(mid("j1"), 1, ptype=None, pname=None),
        sync(mid("j1"), 1, v=3),
        sync(mid("j1"), 1, group="{h}"),
        sync("", 1, group="{h}"),
    ]),
    Scenario("classic/sync/completing_rebalance", "After the join phase and before the leader's SyncGroup: "
             "CompletingRebalance; Heartbeat is answered, OffsetCommit is REBALANCE_IN_PROGRESS; a leader's "
             "assignment naming an unknown member.", topics=T2, broker=CLASSIC, steps=[
        join("r1"),
        join("j1", member=mid("r1")),
        describe(until={"groups.0.group_state": "CompletingRebalance"}),
        list_groups(states=["CompletingRebalance"], v=4),
        heartbeat(mid("j1"), 1),
        commit(mid("j1"), 1),
        sync(mid("j1"), 1, [(mid("j1"), ALL), ("{x}", ALL)]),
        describe(),
        list_groups(states=["Stable"], types=["classic"]),
        commit(mid("j1"), 1),
    ]),
    Scenario("classic/heartbeat/errors", "Heartbeat with a stale or future generation, an unknown member, "
             "an instance id the group does not know, to a group that does not exist.", topics=T2,
             broker=CLASSIC, steps=stable_one() + [
        heartbeat(mid("j1"), 0),
        heartbeat(mid("j1"), 2),
        heartbeat("{x}", 1),
        heartbeat(mid("j1"), 1, instance="{i1}"),
        heartbeat(mid("j1"), 1, group="{h}"),
        heartbeat("", -1, group="{h}"),
        heartbeat(mid("j1"), 1, v=0),
    ]),
    # ------------------------------------------------------------ leaving
    Scenario("classic/leave/batch_v5", "LeaveGroup v5 of two members and one the group does not know: an "
             "answer per member; the group is Empty, a Heartbeat of a member that left UNKNOWN_MEMBER_ID.",
             topics=T2, broker=CLASSIC, steps=stable_two() + [
        leave([(mid("j2"), None), ("{x}", None), (mid("j1"), None)]),
        describe(),
        heartbeat(mid("j1"), 2),
        leave([(mid("j1"), None)]),
        leave([(mid("j1"), None)], group="{h}"),
    ]),
    Scenario("classic/leave/follower_v2", "LeaveGroup v2 (one member): an unknown member, then the follower; "
             "the leader is told to rejoin.", topics=T2, broker=CLASSIC, steps=stable_two() + [
        leave("{x}", v=2),
        leave(mid("j2"), v=2),
        describe(),
        heartbeat(mid("j1"), 2),
        join("j1c", member=mid("j1")),
        describe(),
    ]),
    # ------------------------------------------------------------ static members
    Scenario("classic/static/replaced_instance_fenced", "A static member (group.instance.id) joins with an empty "
             "member id and gets one at once; a second join with the same instance id takes its place without "
             "a rebalance; the old member id is then FENCED_INSTANCE_ID on Heartbeat, SyncGroup, OffsetCommit, "
             "JoinGroup and LeaveGroup.", topics=T2, broker=CLASSIC,
             steps=stable_one(instance="{i1}") + [
        join("j2", who="m2", instance="{i1}"),
        describe(),
        heartbeat(mid("j1"), 1, instance="{i1}"),
        sync(mid("j1"), 1, instance="{i1}"),
        commit(mid("j1"), 1, instance="{i1}"),
        commit(mid("j1"), 1),
        join("j1b", member=mid("j1"), instance="{i1}"),
        heartbeat(mid("j2"), 1, who="m2", instance="{i1}"),
        commit(mid("j2"), 1, instance="{i1}"),
        leave([(mid("j1"), "{i1}")]),
        describe(),
    ]),
    Scenario("classic/static/leave_by_instance", "LeaveGroup v4 names a static member by its instance id alone; "
             "an instance id the group does not know.", topics=T2, broker=CLASSIC,
             steps=stable_one(instance="{i1}") + [
        leave([("", "{i2}")], v=4),
        leave([("", "{i1}")], v=4),
        describe(),
        heartbeat(mid("j1"), 1, instance="{i1}"),
    ]),
    # ------------------------------------------------------------ offsets
    Scenario("classic/offsets/commit_by_generation", "OffsetCommit by a member of a Stable group: its generation "
             "(v8, v7, v2), an old or future generation, an unknown member, a commit without a member while the "
             "group has one, a dynamic member naming an instance id; OffsetFetch of all of them.", topics=T2,
             broker=CLASSIC, steps=stable_one() + [
        commit(mid("j1"), 1, {("{t}", 0): 5, ("{t}", 1): 6}),
        commit(mid("j1"), 1, {("{t}", 0): 7}, v=2),
        commit(mid("j1"), 1, {("{t}", 1): 8}, v=7),
        commit(mid("j1"), 0),
        commit(mid("j1"), 2),
        commit("{x}", 1),
        commit("", -1),
        commit(mid("j1"), -1),
        commit("", 1),
        commit(mid("j1"), 1, instance="{i1}"),
        fetch(None),
        fetch(None, v=1),
    ]),
    Scenario("classic/offsets/simple_commits", "Commits without a member (generation -1) to a group that does "
             "not exist: it is created, Empty with no protocol type; unknown topics and partitions, metadata "
             "over offset.metadata.max.bytes; a member id or a generation for an empty group; a generation for "
             "a group that does not exist (v9: GROUP_ID_NOT_FOUND); OffsetFetch of unknown partitions and topics.", topics=T2, broker=CLASSIC, steps=[
        commit(offsets={("{t}", 0): 3}),
        commit(offsets={("{nothere}", 0): 3}),
        commit(offsets={("{t}", 7): 3}),
        commit(offsets={("{t}", 1): 4}, metadata="m" * 4097),
        commit(offsets={("{t}", 1): 4}, metadata="m" * 4096),
        commit("{x}", -1),
        commit("", 3),
        commit("{x}", 3),
        commit("{x}", 1, group="{h}"),
        commit("{x}", 1, group="{h}", v=9),
        commit("", -1, group="{h}", v=9),
        fetch([("{t}", [0, 1, 7]), ("{nothere}", [0])]),
        fetch(None),
        fetch([("{t}", [0, 1, 7])], v=5),
        describe(),
        list_groups(types=["classic"]),
    ]),
    Scenario("classic/offsets/fetch_groups", "OffsetFetch v8 of several groups at once: one with offsets, one "
             "that does not exist (offsets -1, no error; all topics: none), an empty group id.", topics=T2,
             broker=CLASSIC, steps=[
        commit(offsets={("{t}", 0): 3}),
        fetch(groups=("{g}", "{h}")),
        fetch(None, groups=("{g}", "{h}")),
        fetch(groups=("",)),
        fetch(None, groups=("{h}",), v=6),
    ]),
    Scenario("classic/offsets/delete_subscribed", "OffsetDelete on a Stable consumer group: a topic its members "
             "subscribe to is GROUP_SUBSCRIBED_TO_TOPIC, others are deleted; an unknown group; once the member "
             "left, the subscribed topic's offsets go too.", topics=T2O, broker=CLASSIC, steps=stable_one() + [
        commit(mid("j1"), 1, {("{t}", 0): 3, ("{o}", 0): 4}),
        offset_delete([("{t}", [0]), ("{o}", [0])]),
        fetch([("{t}", [0]), ("{o}", [0])]),
        offset_delete([("{t}", [0])], group="{h}"),
        offset_delete([("{nothere}", [0])]),
        leave([(mid("j1"), None)]),
        offset_delete([("{t}", [0, 1])]),
        fetch([("{t}", [0]), ("{o}", [0])]),
    ]),
    Scenario("classic/offsets/delete_other_protocol_type", "OffsetDelete on a group with members whose protocol "
             "type is not \"consumer\": the group is not empty.", topics=T2, broker=CLASSIC, steps=[
        join("j1", ptype="connect", protocols=[("v0", b"\x00")], v=3),
        sync(mid("j1"), 1, [(mid("j1"), b"\x01")], ptype="connect", pname="v0"),
        commit(mid("j1"), 1),
        offset_delete([("{t}", [0])]),
        describe(),
    ]),
    # ------------------------------------------------------------ describe, list, delete
    Scenario("classic/describe/unknown_and_empty", "DescribeGroups of a group that does not exist (v5: Dead, "
             "no error), of an empty group id, and of a group with offsets only.", topics=T2, broker=CLASSIC,
             steps=[
        describe(["{h}"]),
        describe([""]),
        commit(offsets={("{t}", 0): 3}),
        describe(["{g}", "{h}"]),
        describe(["{g}"], v=0),
        list_groups(states=["Empty"], types=["classic"]),
        list_groups(types=["consumer"]),
    ]),
    Scenario("classic/delete/groups", "DeleteGroups of a group with a member (NON_EMPTY_GROUP), of an empty "
             "group with offsets, of a group that does not exist; the offsets are gone; again after the member "
             "left.", topics=T2, broker=CLASSIC, steps=stable_one() + [
        commit(offsets={("{t}", 0): 3}, group="{e}"),
        delete_groups(["{g}", "{e}", "{u}"]),
        fetch(groups=("{e}",)),
        describe(["{e}"]),
        delete_groups(["{e}"]),
        commit(mid("j1"), 1),
        leave([(mid("j1"), None)]),
        delete_groups(["{g}"]),
        fetch(groups=("{g}",)),
        heartbeat(mid("j1"), 1),
    ]),
    # ------------------------------------------------------------ KIP-447: TxnOffsetCommit fencing
    Scenario("classic/txn/zombie_generation", "A consumer-producer whose group moved to a new generation: its "
             "TxnOffsetCommit v3 with the old generation is ILLEGAL_GENERATION, with the new one accepted, an "
             "unknown member UNKNOWN_MEMBER_ID, no member at all (generation -1) accepted; only the commit's "
             "offsets become visible.", topics=T2, broker=CLASSIC, steps=stable_one() + [
        join("j1b", member=mid("j1")),
        sync(mid("j1"), 2, [(mid("j1"), ALL)]),
        init_pid("p"),
        add_offsets("p"),
        txn_commit("p", {("{t}", 0): 10}, mid("j1"), 1),
        txn_commit("p", {("{t}", 0): 11}, mid("j1"), 2),
        txn_commit("p", {("{t}", 0): 12}, "{x}", 2),
        txn_commit("p", {("{t}", 1): 13}, "", -1),
        txn_commit("p", {("{t}", 1): 14}, mid("j1"), -1),
        txn_commit("p", {("{t}", 1): 15}, "", 2),
        fetch(stable=True, v=7),
        end_txn("p", commit=True),
        await_txn("CompleteCommit"),
        fetch(stable=True),
    ]),
    Scenario("classic/txn/fenced_static_instance", "A static member replaced by a new instance of itself: the "
             "old member's TxnOffsetCommit is FENCED_INSTANCE_ID; the new member's is accepted, with and "
             "without its instance id.", topics=T2, broker=CLASSIC, steps=stable_one(instance="{i1}") + [
        join("j2", who="m2", instance="{i1}"),
        init_pid("p"),
        add_offsets("p"),
        txn_commit("p", {("{t}", 0): 10}, mid("j1"), 1, "{i1}"),
        txn_commit("p", {("{t}", 0): 11}, mid("j2"), 1, "{i1}"),
        txn_commit("p", {("{t}", 1): 12}, mid("j2"), 1),
        txn_commit("p", {("{t}", 1): 13}, mid("j2"), 1, "{i2}"),
        end_txn("p", commit=True),
        await_txn("CompleteCommit"),
        fetch(stable=True),
    ]),
    Scenario("classic/txn/during_rebalance", "TxnOffsetCommit by the current generation while the group "
             "rebalances (PreparingRebalance), where OffsetCommit is REBALANCE_IN_PROGRESS.", topics=T2,
             broker=CLASSIC, steps=stable_one() + [
        init_pid("p"),
        add_offsets("p"),
        join("r2", who="m2"),
        join("j2", member=mid("r2"), who="m2", defer=True),
        heartbeat(mid("j1"), 1, until={"error_code": 27}),
        commit(mid("j1"), 1),
        txn_commit("p", {("{t}", 0): 10}, mid("j1"), 1),
        join("j1b", member=mid("j1")),
        collect("j2"),
        txn_commit("p", {("{t}", 0): 11}, mid("j1"), 2),
        txn_commit("p", {("{t}", 1): 12}, mid("j2"), 2),
        end_txn("p", commit=True),
        await_txn("CompleteCommit"),
        fetch(stable=True),
    ]),
    Scenario("classic/txn/empty_group", "TxnOffsetCommit v3 to a group with offsets and no members: without a "
             "member accepted, with a member id or a generation refused; v2 carries no member at all.",
             topics=T2, broker=CLASSIC, steps=[
        commit(offsets={("{t}", 0): 3}),
        init_pid("p"),
        add_offsets("p"),
        txn_commit("p", {("{t}", 0): 10}),
        txn_commit("p", {("{t}", 0): 11}, "{x}", -1),
        txn_commit("p", {("{t}", 0): 12}, "", 1),
        txn_commit("p", {("{t}", 0): 13}, "{x}", 1),
        txn_commit("p", {("{t}", 1): 14}, v=2),
        end_txn("p", commit=True),
        await_txn("CompleteCommit"),
        fetch(stable=True),
    ]),
    Scenario("classic/txn/new_group", "TxnOffsetCommit to a group that does not exist yet (AddOffsetsToTxn "
             "does not create it): with a generation ILLEGAL_GENERATION (and still no group), without a member "
             "accepted; the group shows once committed.", topics=T2,
             broker=CLASSIC, steps=[
        init_pid("p"),
        add_offsets("p"),
        describe(),
        txn_commit("p", {("{t}", 0): 9}, "{x}", 1),
        describe(),
        txn_commit("p", {("{t}", 0): 10}),
        describe(),
        fetch(stable=True, v=7),
        fetch(stable=True),
        end_txn("p", commit=True),
        await_txn("CompleteCommit"),
        describe(),
        fetch(stable=True),
    ]),
    Scenario("classic/txn/require_stable_pending", "While a transactional offset commit is pending, OffsetFetch "
             "with require_stable answers UNSTABLE_OFFSET_COMMIT for that partition (others answer), without "
             "it the last committed offset; after the commit, the transaction's offset.", topics=T2,
             broker=CLASSIC, steps=stable_one() + [
        commit(mid("j1"), 1, {("{t}", 0): 3, ("{t}", 1): 4}),
        init_pid("p"),
        add_offsets("p"),
        txn_commit("p", {("{t}", 0): 9}, mid("j1"), 1),
        fetch(stable=True, v=7),
        fetch(stable=True),
        fetch(None, stable=True),
        fetch(stable=False),
        commit(mid("j1"), 1, {("{t}", 0): 5}),
        fetch(stable=False),
        end_txn("p", commit=True),
        await_txn("CompleteCommit"),
        fetch(stable=True),
    ]),
    Scenario("classic/txn/abort_never_visible", "An aborted transaction's offsets never appear, with or without "
             "require_stable; the next transaction's do.", topics=T2, broker=CLASSIC, steps=stable_one() + [
        commit(mid("j1"), 1, {("{t}", 0): 3}),
        init_pid("p"),
        add_offsets("p"),
        txn_commit("p", {("{t}", 0): 9, ("{t}", 1): 9}, mid("j1"), 1),
        fetch(stable=False),
        end_txn("p", commit=False),
        await_txn("CompleteAbort"),
        fetch(stable=True),
        fetch(stable=False),
        add_offsets("p"),
        txn_commit("p", {("{t}", 0): 11}, mid("j1"), 1),
        end_txn("p", commit=True),
        await_txn("CompleteCommit"),
        fetch(stable=True),
    ]),
    Scenario("classic/txn/abort_keeps_later_plain_commit", "A plain commit made while a transactional commit "
             "to the same partition is pending survives the transaction's abort; one made before it, the "
             "transaction's commit replaces.", topics=T2, broker=CLASSIC, steps=stable_one() + [
        init_pid("p"),
        add_offsets("p"),
        txn_commit("p", {("{t}", 0): 9, ("{t}", 1): 9}, mid("j1"), 1),
        commit(mid("j1"), 1, {("{t}", 0): 4}),
        end_txn("p", commit=False),
        await_txn("CompleteAbort"),
        fetch(stable=True),
        add_offsets("p"),
        txn_commit("p", {("{t}", 0): 12}, mid("j1"), 1),
        commit(mid("j1"), 1, {("{t}", 0): 6}),
        end_txn("p", commit=True),
        await_txn("CompleteCommit"),
        fetch(stable=True),
    ]),
]

# Short session timeouts (Kafka's group.min.session.timeout.ms is 6 s by default): members that
# stop heartbeating are removed while the scenario polls.
SHORT_SESSIONS = {"group.initial.rebalance.delay.ms": "0", "group.min.session.timeout.ms": "500"}

SCENARIOS += [
    # ------------------------------------------------------------ more joining and syncing
    Scenario("classic/join/pending_member_leaves", "A member id handed out with MEMBER_ID_REQUIRED leaves "
             "before joining with it (LeaveGroup v3); joining with it then is UNKNOWN_MEMBER_ID.", topics=T2,
             broker=CLASSIC, steps=stable_one() + [
        join("r2", who="m2"),
        leave([(mid("r2"), None)], v=3),
        join("j2", member=mid("r2"), who="m2"),
        heartbeat(mid("j1"), 1),
        describe(),
    ]),
    Scenario("classic/join/follower_rejoins", "A follower of a Stable group joins again with the same metadata: "
             "the current generation at once, no rebalance; with other metadata: a rebalance.", topics=T2O,
             broker=CLASSIC, steps=stable_two() + [
        join("j2b", member=mid("j2"), who="m2"),
        heartbeat(mid("j1"), 2),
        join("j2c", member=mid("j2"), who="m2", protocols=[("range", Subscription(["{t}", "{o}"]))], defer=True),
        heartbeat(mid("j1"), 2, until={"error_code": 27}),
        join("j1c", member=mid("j1")),
        collect("j2c"),
    ]),
    Scenario("classic/join/retry_in_completing_rebalance", "In CompletingRebalance, the leader's JoinGroup again "
             "with the same metadata (its answer was lost) gets the same generation; a follower's SyncGroup "
             "gets an empty assignment when the leader's leaves it out.", topics=T2, broker=CLASSIC,
             steps=stable_one() + [
        join("r2", who="m2"),
        join("j2", member=mid("r2"), who="m2", defer=True),
        heartbeat(mid("j1"), 1, until={"error_code": 27}),
        join("j1b", member=mid("j1")),
        collect("j2"),
        join("j1c", member=mid("j1")),
        heartbeat(mid("j1"), 2),
        sync(mid("j1"), 2, [(mid("j1"), ALL)]),
        sync(mid("j2"), 2, who="m2"),
        heartbeat(mid("j2"), 1, who="m2"),
        describe(),
    ]),
    Scenario("classic/join/rebalance_timeout_removes_member", "A member that does not rejoin within its "
             "rebalance timeout is removed when the join phase ends; the new member leads generation 2; the "
             "removed member's Heartbeat, OffsetCommit and TxnOffsetCommit are UNKNOWN_MEMBER_ID.", topics=T2,
             broker=CLASSIC, steps=[
        join("r1"),
        join("j1", member=mid("r1"), rebalance=1500),
        sync(mid("j1"), 1, [(mid("j1"), ALL)]),
        join("r2", who="m2"),
        join("j2", member=mid("r2"), who="m2", defer=True),
        collect("j2"),
        heartbeat(mid("j1"), 1),
        commit(mid("j1"), 1),
        init_pid("p"),
        add_offsets("p"),
        txn_commit("p", {("{t}", 0): 10}, mid("j1"), 1),
        txn_commit("p", {("{t}", 0): 11}, mid("j2"), 2),
        end_txn("p", commit=True),
        await_txn("CompleteCommit"),
        fetch(stable=True),
    ]),
    Scenario("classic/session/expiry_empties_group", "A member that stops heartbeating is removed after its "
             "session timeout: the group is Empty with a new generation; the member's Heartbeat is then "
             "UNKNOWN_MEMBER_ID, and its commits with its generation too, while a commit without one is "
             "accepted.", topics=T2, broker=SHORT_SESSIONS, steps=[
        join("r1", session=1000),
        join("j1", member=mid("r1"), session=1000),
        sync(mid("j1"), 1, [(mid("j1"), ALL)]),
        describe(until={"groups.0.group_state": "Empty"}),
        heartbeat(mid("j1"), 1),
        commit(mid("j1"), 1),
        commit(mid("j1"), 2),
        commit("", -1),
        join("j1b", member=mid("j1"), session=1000),
    ]),
    # ------------------------------------------------------------ more static members
    Scenario("classic/static/rejoin_known_member", "A static member joining again with its own member id: in "
             "Stable with the same metadata, as the leader, a rebalance it completes alone; with another "
             "instance id or none, refused.", topics=T2, broker=CLASSIC,
             steps=stable_one(instance="{i1}") + [
        join("j1b", member=mid("j1"), instance="{i1}"),
        heartbeat(mid("j1"), 1, instance="{i1}"),
        join("j1c", member=mid("j1"), instance="{i2}"),
        join("j1d", member=mid("j1")),
        describe(),
    ]),
    Scenario("classic/static/replaced_before_v9", "A static member replaced by a JoinGroup v8 of its instance: "
             "the answer names the old leader and no members (it must not compute an assignment).", topics=T2,
             broker=CLASSIC, steps=stable_one(instance="{i1}") + [
        join("j2", who="m2", instance="{i1}", v=8),
        sync(mid("j2"), 1, who="m2", instance="{i1}"),
        heartbeat(mid("j2"), 1, who="m2", instance="{i1}"),
    ]),
    # ------------------------------------------------------------ more offsets
    Scenario("classic/offsets/v9_on_classic_group", "OffsetCommit v9 and OffsetFetch v9 on a classic group: the "
             "generation goes where the member epoch would; a member id and epoch in OffsetFetch are not "
             "checked for a classic group.", topics=T2, broker=CLASSIC, steps=stable_one() + [
        commit(mid("j1"), 1, v=9),
        commit(mid("j1"), 2, v=9),
        call(9, 9, {"groups": [{"group_id": "{g}", "member_id": mid("j1"), "member_epoch": 1,
                                "topics": [{"name": "{t}", "partition_indexes": [0]}]}], "require_stable": True}),
        call(9, 9, {"groups": [{"group_id": "{g}", "member_id": "{x}", "member_epoch": 7,
                                "topics": [{"name": "{t}", "partition_indexes": [0]}]}], "require_stable": True}),
    ]),
    Scenario("classic/offsets/delete_with_pending_txn", "OffsetDelete and DeleteGroups of an empty group while a "
             "transactional commit to it is pending; the transaction then commits.", topics=T2, broker=CLASSIC,
             steps=[
        commit(offsets={("{t}", 0): 3, ("{t}", 1): 4}),
        init_pid("p"),
        add_offsets("p"),
        txn_commit("p", {("{t}", 0): 9}),
        offset_delete([("{t}", [0, 1])]),
        fetch(stable=False),
        delete_groups(),
        fetch(stable=True),
        end_txn("p", commit=True),
        await_txn("CompleteCommit"),
        fetch(stable=True),
        describe(),
    ]),
    # ------------------------------------------------------------ more KIP-447
    Scenario("classic/txn/completing_rebalance", "TxnOffsetCommit by the new generation before the SyncGroup "
             "(CompletingRebalance) is accepted where OffsetCommit is REBALANCE_IN_PROGRESS; TxnOffsetCommit "
             "v2 (no member) on a group with members is accepted.", topics=T2, broker=CLASSIC, steps=[
        join("r1"),
        join("j1", member=mid("r1")),
        init_pid("p"),
        add_offsets("p"),
        commit(mid("j1"), 1),
        txn_commit("p", {("{t}", 0): 10}, mid("j1"), 1),
        txn_commit("p", {("{t}", 1): 11}, v=2),
        txn_commit("p", {("{t}", 1): 12}, mid("j1"), 0),
        end_txn("p", commit=True),
        await_txn("CompleteCommit"),
        fetch(stable=True),
    ]),
    Scenario("classic/txn/zombie_after_group_emptied", "The member left and the group is Empty: its "
             "TxnOffsetCommit with its generation is UNKNOWN_MEMBER_ID, with generation -1 (even naming its "
             "member id) accepted.", topics=T2, broker=CLASSIC, steps=stable_one() + [
        leave([(mid("j1"), None)]),
        init_pid("p"),
        add_offsets("p"),
        txn_commit("p", {("{t}", 0): 10}, mid("j1"), 1),
        txn_commit("p", {("{t}", 0): 11}, mid("j1"), 2),
        txn_commit("p", {("{t}", 0): 12}, mid("j1"), -1),
        txn_commit("p", {("{t}", 1): 13}, mid("j1"), -1, "{i1}"),
        end_txn("p", commit=True),
        await_txn("CompleteCommit"),
        fetch(stable=True),
    ]),
    Scenario("classic/list/states_and_types", "ListGroups filters through the rebalance states: several states, "
             "an unknown state name, a type filter, v4 without types.", topics=T2, broker=CLASSIC,
             steps=stable_one() + [
        commit(offsets={("{t}", 0): 3}, group="{e}"),
        list_groups(states=["Stable", "Empty"]),
        list_groups(states=["stable"], types=["Classic"]),
        list_groups(states=["Bogus"]),
        list_groups(types=["share"]),
        list_groups(states=["Empty"], v=4),
        list_groups(v=3),
    ]),
]

SCENARIOS += [
    Scenario("classic/leave/waiting_member_removed", "A member waiting in the join phase is removed by a "
             "LeaveGroup naming it (an admin's): its JoinGroup is answered UNKNOWN_MEMBER_ID without a member "
             "id; the phase completes with the members left.", topics=T2, broker=CLASSIC, steps=stable_one() + [
        join("r2", who="m2"),
        join("j2", member=mid("r2"), who="m2", defer=True),
        heartbeat(mid("j1"), 1, until={"error_code": 27}),
        leave([(mid("r2"), None)], v=4),
        collect("j2"),
        heartbeat(mid("j1"), 1),
        join("j1b", member=mid("j1")),
        describe(),
    ]),
]

SCENARIOS += [
    Scenario("classic/versions/oldest", "The oldest versions Kafka 4.1 serves, through one member's life: "
             "JoinGroup v2 (no member id asked for), SyncGroup v0, Heartbeat v0, OffsetCommit v2, OffsetFetch v1, "
             "DescribeGroups v0, ListGroups v0, LeaveGroup v0, DeleteGroups v0.", topics=T2, broker=CLASSIC,
             steps=[
        join("j1", v=2),
        sync(mid("j1"), 1, [(mid("j1"), ALL)], v=0),
        heartbeat(mid("j1"), 1, v=0),
        commit(mid("j1"), 1, v=2, metadata=None),
        fetch(v=1),
        describe(v=0),
        list_groups(v=0),
        leave(mid("j1"), v=0),
        call(42, 0, {"groups_names": ["{g}"]}),
    ]),
    Scenario("classic/txn/without_add_offsets", "TxnOffsetCommit v3 before AddOffsetsToTxn put the group's "
             "partition in the transaction, from a consumer of the group.", topics=T2, broker=CLASSIC,
             steps=stable_one() + [
        init_pid("p"),
        txn_commit("p", {("{t}", 0): 10}, mid("j1"), 1),
        add_partitions("p"),
        txn_commit("p", {("{t}", 0): 11}, mid("j1"), 1),
        end_txn("p", commit=True),
        await_txn("CompleteCommit"),
        fetch(stable=True),
    ]),
    Scenario("classic/txn/fenced_producer_epoch", "A producer fenced by a new instance of its transactional id "
             "commits offsets for its group: the old epoch is refused, also with a stale generation.", topics=T2, broker=CLASSIC, steps=stable_one() + [
        init_pid("p"),
        add_offsets("p"),
        init_pid("q", retry_while=(51,)),   # CONCURRENT_TRANSACTIONS while the fenced one's abort completes
        txn_commit("p", {("{t}", 0): 10}, mid("j1"), 1),
        txn_commit("p", {("{t}", 0): 10}, mid("j1"), 7),
        fetch(stable=True),
    ]),
]

SCENARIOS += [
    Scenario("classic/sync/leader_never_syncs", "The leader never sends its SyncGroup: when the rebalance "
             "timeout passes in CompletingRebalance, the members that did not sync are removed; their "
             "Heartbeat is then UNKNOWN_MEMBER_ID.", topics=T2, broker=CLASSIC, steps=[
        join("r1"),
        join("j1", member=mid("r1"), rebalance=1500),
        describe(until={"groups.0.group_state": ["Empty", "PreparingRebalance", "Stable"]}),
        heartbeat(mid("j1"), 1),
        sync(mid("j1"), 1, [(mid("j1"), ALL)]),
    ]),
    Scenario("classic/session/static_member_expires", "A static member that stops heartbeating is removed after "
             "its session timeout like any other; its instance id joins again as a new member id.", topics=T2,
             broker=SHORT_SESSIONS, steps=[
        join("j1", instance="{i1}", session=1000),
        sync(mid("j1"), 1, [(mid("j1"), ALL)], instance="{i1}"),
        describe(until={"groups.0.group_state": "Empty"}),
        heartbeat(mid("j1"), 1, instance="{i1}"),
        join("j2", who="m2", instance="{i1}", session=1000),
        describe(until={"groups.0.group_state": "CompletingRebalance"}),
    ]),
    Scenario("classic/offsets/delete_unreadable_subscription", "OffsetDelete on a Stable group whose members' "
             "consumer-protocol metadata cannot be read: the subscribed topics are unknown.", topics=T2,
             broker=CLASSIC, steps=[
        join("j1", protocols=[("range", b"\x00")], v=3),
        sync(mid("j1"), 1, [(mid("j1"), ALL)]),
        commit(mid("j1"), 1),
        offset_delete([("{t}", [0])]),
        fetch(),
    ]),
    Scenario("classic/offsets/leader_epoch_and_null_metadata", "A committed leader epoch comes back from "
             "OffsetFetch; null metadata comes back empty.", topics=T2, broker=CLASSIC, steps=[
        call(8, 8, {"group_id": "{g}", "generation_id_or_member_epoch": -1, "member_id": "",
                    "group_instance_id": None, "retention_time_ms": -1,
                    "topics": [{"name": "{t}", "partitions": [
                        {"partition_index": 0, "committed_offset": 7, "committed_leader_epoch": 3,
                         "committed_metadata": None},
                        {"partition_index": 1, "committed_offset": 8, "committed_leader_epoch": -1,
                         "committed_metadata": "m"}]}]}),
        fetch(),
        fetch(v=4),
    ]),
    Scenario("classic/describe/v6_errors", "DescribeGroups v6 of a classic group, of a group that does not "
             "exist, and of an empty group id.", topics=T2, broker=CLASSIC, steps=stable_one() + [
        describe(["{g}", "{h}", ""], v=6),
    ]),
]

SCENARIOS += [
    Scenario("classic/invalid/empty_group_id", "An empty group id on every classic group API.", topics=T2,
             broker=CLASSIC, steps=[
        sync("", 1, group=""),
        heartbeat("", 1, group=""),
        leave([("", None)], group=""),
        leave("", v=2, group=""),
        commit("", -1, group=""),
        fetch(groups=("",), v=7),
        offset_delete([("{t}", [0])], group=""),
        delete_groups([""]),
        init_pid("p"),
        call(25, 3, {"transactional_id": "{tx}", "producer_id": ref("p.producer_id"),
                     "producer_epoch": ref("p.producer_epoch"), "group_id": ""}),
        txn_commit("p", {("{t}", 0): 1}, group=""),
    ]),
    Scenario("classic/delete/repeated_and_unknown", "DeleteGroups naming one group twice and a group that does "
             "not exist twice.", topics=T2, broker=CLASSIC, steps=[
        commit(offsets={("{t}", 0): 3}),
        delete_groups(["{g}", "{u}", "{g}", "{u}"]),
        fetch(),
    ]),
]

SCENARIOS += [
    Scenario("classic/join/new_member_during_completing", "A third member joins while the group completes a "
             "rebalance: the follower's waiting SyncGroup and the leader's SyncGroup of that generation get "
             "REBALANCE_IN_PROGRESS; a member id only handed out (MEMBER_ID_REQUIRED) is not a member for "
             "Heartbeat and OffsetCommit.", topics=T2, broker=CLASSIC, steps=stable_one() + [
        join("r2", who="m2"),
        join("j2", member=mid("r2"), who="m2", defer=True),
        heartbeat(mid("j1"), 1, until={"error_code": 27}),
        join("j1b", member=mid("j1")),
        collect("j2"),
        sync(mid("j2"), 2, who="m2", defer=True, save="s2"),
        describe(until={"groups.0.group_state": "CompletingRebalance"}),
        join("r3", who="m3"),
        heartbeat(mid("r3"), 2, who="m3"),
        commit(mid("r3"), 2),
        join("j3", member=mid("r3"), who="m3", defer=True),
        collect("s2"),
        sync(mid("j1"), 2, [(mid("j1"), ALL)]),
        describe(),
        heartbeat(mid("j1"), 2),
    ]),
    Scenario("classic/static/join_during_rebalance", "A static member's instance joins with a new member id "
             "while the group is in PreparingRebalance: it takes the old member's place in the join phase.",
             topics=T2, broker=CLASSIC, steps=stable_one(instance="{i1}") + [
        join("r2", who="m2"),
        join("j2", member=mid("r2"), who="m2", defer=True),
        heartbeat(mid("j1"), 1, instance="{i1}", until={"error_code": 27}),
        join("j3", who="m3", instance="{i1}", defer=True),
        heartbeat(mid("j1"), 1, instance="{i1}", until={"error_code": 82}),
        collect("j2"),
        collect("j3"),
        describe(),
    ]),
]

SCENARIOS += [
    Scenario("classic/restart/state_survives_kill", "Kill -9 and restart: a Stable classic group comes back with "
             "its generation, member and assignment (the member heartbeats on), its offsets, a transactional "
             "commit still pending (UNSTABLE_OFFSET_COMMIT, then visible after the commit), and the Empty group "
             "a refused JoinGroup created.", topics=T2, broker=CLASSIC, steps=[
        join("r1", session=120000),
        join("j1", member=mid("r1"), session=120000),
        sync(mid("j1"), 1, [(mid("j1"), ALL)]),
        commit(mid("j1"), 1, {("{t}", 0): 3}),
        join("h", ptype="", group="{h}"),
        describe(["{h}"], until={"groups.0.group_state": "Empty"}),
        init_pid("p"),
        add_offsets("p"),
        txn_commit("p", {("{t}", 1): 9}, mid("j1"), 1),
        restart(kill=True),
        describe(["{g}", "{h}"]),
        heartbeat(mid("j1"), 1),
        fetch(stable=True),
        end_txn("p", commit=True),
        await_txn("CompleteCommit"),
        fetch(stable=True),
    ]),
]
