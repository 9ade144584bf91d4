"""KIP-848 consumer groups: ConsumerGroupHeartbeat joins, epochs, revocation, fencing,
static members, leaving; offsets committed and fetched by member epoch (OffsetCommit,
OffsetFetch, TxnOffsetCommit); ConsumerGroupDescribe, DescribeGroups, ListGroups and
DeleteGroups on consumer groups; KIP-430 authorized operations."""
import uuid

from ..dsl import Scenario, Topic, add_offsets, await_txn, call, end_txn, init_pid, ref, restart

T4 = {"t": Topic(partitions=4)}
ZERO = uuid.UUID(int=0)


def hb(member: str = "{m1}", epoch=0, topics=("{t}",), owned=(), rto: int = 30000, instance=None, assignor=None,
       regex=None, group: str = "{g}", v: int = 1, save: str | None = None, **kw):
    """ConsumerGroupHeartbeat. Defaults make a full join (epoch 0); for a plain heartbeat pass
    topics=None, owned=None, rto=-1. ``owned`` is a list of (saved answer, partitions) pairs:
    the topic id comes from that answer's first assigned topic."""
    tps = None if owned is None else [
        {"topic_id": ref(f"{who}.assignment.topic_partitions.0.topic_id"), "partitions": list(ps)}
        for who, ps in owned]
    return call(68, v, {"group_id": group, "member_id": member, "member_epoch": epoch, "instance_id": instance,
                        "rack_id": None, "rebalance_timeout_ms": rto,
                        "subscribed_topic_names": None if topics is None else list(topics),
                        "subscribed_topic_regex": regex, "server_assignor": assignor,
                        "topic_partitions": tps}, save=save, **kw)


def beat(member: str = "{m1}", epoch=1, owned=None, **kw):
    """A heartbeat that changes nothing (only what the member owns, if given)."""
    return hb(member, epoch, topics=None, owned=owned, rto=-1, **kw)


def describe(groups=("{g}",), ops: bool = True, **kw):
    return call(69, 0, {"group_ids": list(groups), "include_authorized_operations": ops}, **kw)


def describe_groups(v: int = 6, groups=("{g}",), ops: bool = True, **kw):
    return call(15, v, {"groups": list(groups), "include_authorized_operations": ops}, **kw)


def commit(member="{m1}", epoch=1, offset: int = 5, v: int = 9, group: str = "{g}", partition: int = 0, **kw):
    return call(8, v, {"group_id": group, "generation_id_or_member_epoch": epoch, "member_id": member,
                       "group_instance_id": None, "retention_time_ms": -1,
                       "topics": [{"name": "{t}", "partitions": [{"partition_index": partition,
                                                                    "committed_offset": offset,
                                                                    "committed_leader_epoch": -1,
                                                                    "committed_metadata": ""}]}]}, **kw)


def fetch_offsets(member="{m1}", epoch=1, v: int = 9, **kw):
    return call(9, v, {"groups": [{"group_id": "{g}", "member_id": member, "member_epoch": epoch,
                                   "topics": [{"name": "{t}", "partition_indexes": [0]}]}],
                       "require_stable": True}, **kw)


def txn_commit(who: str = "a", member="{m1}", epoch=1, offset: int = 9, v: int = 4, **kw):
    return call(28, v, {"transactional_id": "{tx}", "group_id": "{g}", "producer_id": ref(f"{who}.producer_id"),
                        "producer_epoch": ref(f"{who}.producer_epoch"), "generation_id": epoch,
                        "member_id": member, "group_instance_id": None,
                        "topics": [{"name": "{t}", "partitions": [{"partition_index": 0, "committed_offset": offset,
                                                                     "committed_leader_epoch": -1,
                                                                     "committed_metadata": ""}]}]}, **kw)


def list_groups(v: int = 5, types=(), states=(), **kw):
    body = {"states_filter": list(states)}
    if v >= 5:
        body["types_filter"] = list(types)
    return call(16, v, body, **kw)


def delete_groups(**kw):
    return call(42, 2, {"groups_names": ["{g}"]}, **kw)


def two_members_settled():
    """{m1} joins alone (epoch 1, every partition), {m2} joins (epoch 2, nothing yet),
    {m1} is asked to revoke half, acknowledges, {m2} gets its half."""
    return [
        hb("{m1}", save="a"),
        hb("{m2}", save="b"),
        beat("{m1}", 1),
        beat("{m1}", 1, owned=[("a", [0, 1])]),
        beat("{m2}", 2, owned=[]),
    ]


SCENARIOS = [
    # ------------------------------------------------------------ joining
    Scenario("cg/join/first_member", "The first member gets epoch 1 and every partition; a plain "
             "heartbeat gets no assignment; ConsumerGroupDescribe shows it Stable.", topics=T4, steps=[
        hb(save="a"),
        beat(owned=[("a", [0, 1, 2, 3])]),
        beat(),
        describe(),
    ]),
    Scenario("cg/join/second_member_revocation", "A second member joins: the first keeps its epoch and is "
             "asked to revoke half; once it acknowledges, it moves to the new epoch and the second gets "
             "the released partitions.", topics=T4, steps=two_members_settled() + [
        describe(),
        list_groups(types=["consumer"]),
    ]),
    Scenario("cg/join/unreleased_until_revoked", "The new member waits (epoch 2, nothing assigned) while "
             "the partitions are not yet revoked by their owner.", topics=T4, steps=[
        hb("{m1}", save="a"),
        hb("{m2}", save="b"),
        beat("{m2}", 2, owned=[]),
        beat("{m1}", 1),
        beat("{m2}", 2, owned=[]),
        describe(),
    ]),
    Scenario("cg/join/rejoin_with_epoch_zero", "A member that joins again with epoch 0 keeps its epoch and "
             "gets its full assignment.", topics=T4, steps=[
        hb(save="a"),
        hb(),
        describe(),
    ]),
    Scenario("cg/join/range_assignor", "Two members ask for the range assignor.", topics=T4, steps=[
        hb("{m1}", assignor="range", save="a"),
        hb("{m2}", assignor="range", save="b"),
        beat("{m1}", 1),
        beat("{m1}", 1, owned=[("a", [0, 1])]),
        beat("{m2}", 2, owned=[]),
        describe(),
    ]),
    Scenario("cg/join/partitions_added", "Partitions added to a subscribed topic are assigned at the "
             "next heartbeat with a new group epoch.", topics={"t": Topic(partitions=2)}, steps=[
        hb(save="a"),
        call(37, 3, {"topics": [{"name": "{t}", "count": 3, "assignments": None}], "timeout_ms": 30000,
                     "validate_only": False}),
        beat(epoch=1, until={"member_epoch": 2}),
        describe(),
    ]),
    Scenario("cg/join/subscription_change", "A member that changes its subscription to a topic that does "
             "not exist gives up its partitions.", topics=T4, steps=[
        hb(save="a"),
        hb("{m1}", 1, topics=["{nothere}"], owned=None, rto=-1),
        beat(epoch=1, owned=[]),
        describe(),
    ]),
    # ------------------------------------------------------------ validation
    Scenario("cg/invalid/empty_member_id", "v1: the member id is the client's: empty is INVALID_REQUEST.",
             steps=[hb("")]),
    Scenario("cg/invalid/empty_group_id", "An empty group id is INVALID_REQUEST.", steps=[hb(group="")]),
    Scenario("cg/invalid/join_without_rebalance_timeout", "A join must give the rebalance timeout.",
             steps=[hb(rto=-1)]),
    Scenario("cg/invalid/join_without_subscription", "A join must give topic names or a regex.",
             steps=[hb(topics=None)]),
    Scenario("cg/invalid/join_with_owned_partitions", "A join must send an empty owned list, not null.",
             steps=[hb(owned=None)]),
    Scenario("cg/invalid/unknown_assignor", "An assignor the broker does not have: UNSUPPORTED_ASSIGNOR.",
             steps=[hb(assignor="nope")]),
    Scenario("cg/invalid/static_leave_without_instance", "Epoch -2 without an instance id: INVALID_REQUEST.",
             steps=[hb(epoch=-2)]),
    Scenario("cg/invalid/epoch_below_minus_two", "Epoch -3: INVALID_REQUEST.", steps=[beat(epoch=-3)]),
    # ------------------------------------------------------------ epochs and fencing
    Scenario("cg/fence/greater_epoch", "A heartbeat with an epoch above the member's: FENCED_MEMBER_EPOCH.",
             topics=T4, steps=[hb(save="a"), beat(epoch=7), beat(epoch=1)]),
    Scenario("cg/fence/smaller_epoch", "A smaller epoch than the member's, unless it is the previous epoch "
             "with owned partitions inside the assignment, is FENCED_MEMBER_EPOCH.", topics=T4,
             steps=two_members_settled() + [
        beat("{m1}", 1),
        beat("{m1}", 0, owned=[("a", [0, 1])]),
        beat("{m1}", 2),
    ]),
    Scenario("cg/fence/previous_epoch_with_owned_subset", "A member whose epoch bump was lost may heartbeat "
             "with the previous epoch if what it owns is a subset of its assignment.", topics=T4,
             steps=two_members_settled() + [
        beat("{m1}", 1, owned=[("a", [0, 1])]),
        beat("{m1}", 1, owned=[("a", [0, 1, 2])]),
    ]),
    Scenario("cg/fence/previous_epoch_after_lost_answer", "The answer that moved a member to a new epoch "
             "with more partitions is lost: back with its previous epoch and a subset, a plain heartbeat is "
             "accepted at the new epoch without the assignment; a full heartbeat gets it.", topics=T4,
             steps=two_members_settled() + [
        beat("{m2}", -1),
        beat("{m1}", 2, owned=[("a", [0, 1])]),
        beat("{m1}", 2, owned=[("a", [0, 1])]),
        hb("{m1}", 2, owned=[("a", [0, 1])]),
        describe(),
    ]),
    Scenario("cg/fence/unknown_member", "A heartbeat from a member the group does not know: UNKNOWN_MEMBER_ID.",
             topics=T4, steps=[hb(save="a"), beat("{m2}", 1)]),
    Scenario("cg/fence/unknown_group", "A heartbeat (not a join) to a group that does not exist.",
             steps=[beat("{m1}", 1)]),
    # ------------------------------------------------------------ leaving
    Scenario("cg/leave/dynamic_member", "Epoch -1 leaves: the group epoch moves on, the group is Empty; "
             "a heartbeat after that is UNKNOWN_MEMBER_ID.", topics=T4, steps=[
        hb(save="a"),
        beat(epoch=-1),
        describe(),
        beat(epoch=1),
        list_groups(types=["consumer"]),
    ]),
    Scenario("cg/leave/unknown_member", "Leaving as a member the group does not know.", topics=T4, steps=[
        hb(save="a"),
        beat("{m2}", -1),
    ]),
    Scenario("cg/leave/second_member_leaves", "The second member leaves: the first gets everything back "
             "at the next heartbeat.", topics=T4, steps=two_members_settled() + [
        beat("{m2}", -1),
        beat("{m1}", 2),
        describe(),
    ]),
    # ------------------------------------------------------------ static members
    Scenario("cg/static/replace_after_temporary_leave", "A static member leaves with epoch -2; a new "
             "member id with the same instance id takes over its assignment.", topics=T4, steps=[
        hb("{m1}", instance="{i1}", save="a"),
        hb("{m1}", -2, topics=None, owned=None, rto=-1, instance="{i1}"),
        describe(),
        hb("{m2}", instance="{i1}", save="b"),
        describe(),
        beat("{m1}", 1, instance="{i1}"),
    ]),
    Scenario("cg/static/unreleased_instance", "A second member with an instance id still in use: "
             "UNRELEASED_INSTANCE_ID.", topics=T4, steps=[
        hb("{m1}", instance="{i1}", save="a"),
        hb("{m2}", instance="{i1}"),
    ]),
    Scenario("cg/static/fenced_instance", "A heartbeat naming another member's instance id.", topics=T4, steps=[
        hb("{m1}", instance="{i1}", save="a"),
        hb("{m2}", instance="{i2}", save="b"),
        beat("{m2}", 2, instance="{i1}"),
    ]),
    # ------------------------------------------------------------ offsets
    Scenario("cg/offsets/commit_by_member_epoch", "OffsetCommit v9 from a consumer group member: the epoch "
             "must be the member's; v8 is refused; an empty member id while the group has members.",
             topics=T4, steps=[
        hb(save="a"),
        commit(epoch=1),
        commit(epoch=2),
        commit(epoch=0),
        commit(member="{m2}", epoch=1),
        commit(member="", epoch=-1),
        commit(epoch=1, v=8),
        fetch_offsets(member=None, epoch=-1),
    ]),
    Scenario("cg/offsets/fetch_by_member_epoch", "OffsetFetch v9 with a member id: the epoch must be the "
             "member's; an admin (null member, epoch -1) reads freely.", topics=T4, steps=[
        hb(save="a"),
        commit(epoch=1, offset=3),
        fetch_offsets(epoch=1),
        fetch_offsets(epoch=2),
        fetch_offsets(epoch=0),
        fetch_offsets(member="{m2}", epoch=1),
        fetch_offsets(member="", epoch=-1),
    ]),
    Scenario("cg/offsets/simple_commit_after_leave", "Once the group is empty, a commit without a member "
             "(epoch -1) is accepted.", topics=T4, steps=[
        hb(save="a"),
        beat(epoch=-1),
        commit(member="", epoch=-1, offset=7),
        fetch_offsets(member=None, epoch=-1),
    ]),
    Scenario("cg/txn/offset_commit_by_member_epoch", "TxnOffsetCommit v4 from a consumer group member: a "
             "wrong epoch is ILLEGAL_GENERATION, an unknown member UNKNOWN_MEMBER_ID, no member at all is "
             "accepted; the committed offset shows after the commit marker.", topics=T4, steps=[
        hb(save="a"),
        init_pid("p"),
        add_offsets("p"),
        txn_commit("p", epoch=1, offset=9),
        txn_commit("p", epoch=2),
        txn_commit("p", epoch=0),
        txn_commit("p", member="{m2}", epoch=1),
        txn_commit("p", member="", epoch=-1, offset=9),
        end_txn("p", commit=True),
        await_txn("CompleteCommit"),
        fetch_offsets(epoch=1),
    ]),
    Scenario("cg/txn/stale_epoch_after_rebalance", "A member's epoch moves on with a rebalance; a "
             "TxnOffsetCommit with the old epoch is refused, with the new one accepted.", topics=T4,
             steps=two_members_settled() + [
        init_pid("p"),
        add_offsets("p"),
        txn_commit("p", member="{m1}", epoch=1),
        txn_commit("p", member="{m1}", epoch=2),
        end_txn("p", commit=False),
        await_txn("CompleteAbort"),
        fetch_offsets(epoch=2),
    ]),
    Scenario("cg/txn/offset_commit_v3", "TxnOffsetCommit v3 with the member's epoch.", topics=T4, steps=[
        hb(save="a"),
        init_pid("p"),
        add_offsets("p"),
        txn_commit("p", epoch=1, v=3),
        txn_commit("p", epoch=3, v=3),
        end_txn("p", commit=True),
        await_txn("CompleteCommit"),
    ]),
    # ------------------------------------------------------------ describe, list, delete
    Scenario("cg/describe/unknown_and_classic", "ConsumerGroupDescribe of a group that does not exist and of "
             "a classic (offsets only) group: GROUP_ID_NOT_FOUND.", topics=T4, steps=[
        describe(["{nothere}"]),
        commit(member="", epoch=-1, group="{c}"),
        describe(["{c}"]),
    ]),
    Scenario("cg/describe/describe_groups_on_consumer_group", "DescribeGroups v6 says a consumer group is "
             "not a classic group; v5 calls it Dead.", topics=T4, steps=[
        hb(save="a"),
        describe_groups(6),
        describe_groups(5),
        describe_groups(5, ops=False),
    ]),
    Scenario("cg/list/types_and_states", "ListGroups v5 filters by type (KIP-1043) and state; v4 has no type.",
             topics=T4, steps=[
        hb(save="a"),
        commit(member="", epoch=-1, group="{c}"),
        list_groups(),
        list_groups(types=["consumer"]),
        list_groups(types=["classic"]),
        list_groups(states=["stable"]),
        list_groups(v=4),
    ]),
    Scenario("cg/list/reconciling_states", "ListGroups v5 with state and type filters while a consumer group "
             "moves: one member joined (its assignment not yet acknowledged), a second member that makes the first "
             "revoke (Reconciling, as ListGroups, ConsumerGroupDescribe and DescribeGroups report it), the first "
             "acknowledging, the second taking its partitions.", topics=T4, steps=[
        hb("{m1}", save="a"),
        list_groups(states=["Assigning", "Reconciling", "Stable"]),
        list_groups(states=["assigning"], types=["consumer"]),
        hb("{m2}", save="b"),
        list_groups(),
        list_groups(states=["Reconciling"], types=["Consumer"]),
        list_groups(states=["Assigning"]),
        list_groups(states=["Stable"], types=["consumer"]),
        list_groups(states=["reconciling"], types=["classic"]),
        describe(),
        describe_groups(6),
        beat("{m1}", 1),
        beat("{m1}", 1, owned=[("a", [0, 1])]),
        list_groups(states=["Reconciling", "Stable"]),
        describe(),
        beat("{m2}", 2, owned=[]),
        list_groups(states=["Reconciling", "Stable"]),
        list_groups(v=4, states=["Stable"]),
    ]),
    Scenario("cg/delete/non_empty_then_empty", "DeleteGroups refuses a consumer group with members; once "
             "the member left, the group and its offsets go.", topics=T4, steps=[
        hb(save="a"),
        commit(epoch=1),
        delete_groups(),
        beat(epoch=-1),
        delete_groups(),
        describe(),
        fetch_offsets(member=None, epoch=-1),
    ]),
    Scenario("cg/classic/empty_classic_group_upgrades", "An empty classic group (offsets only) becomes a "
             "consumer group at the first heartbeat; its offsets stay.", topics=T4, steps=[
        commit(member="", epoch=-1, offset=4),
        hb(save="a"),
        describe(),
        fetch_offsets(epoch=1),
    ]),
    # ------------------------------------------------------------ time and restarts
    Scenario("cg/session/expiry_removes_member", "A member that stops heartbeating is removed after the "
             "session timeout; the group epoch moves on.", topics=T4,
             broker={"group.consumer.session.timeout.ms": "1500", "group.consumer.min.session.timeout.ms": "1000",
                     "group.consumer.heartbeat.interval.ms": "500",
                     "group.consumer.min.heartbeat.interval.ms": "500"},
             steps=[
        hb(save="a"),
        describe(until={"groups.0.group_state": "Empty"}),
        beat(epoch=1),
        delete_groups(),
    ]),
    Scenario("cg/restart/state_survives_kill", "Kill -9: the group's epochs, members and assignments are "
             "reloaded from __consumer_offsets; members carry on with their epochs.", topics=T4,
             steps=two_members_settled() + [
        restart(kill=True),
        describe(),
        beat("{m1}", 2),
        beat("{m2}", 2),
    ]),
    Scenario("cg/restart/reconciling_survives_restarts", "A group Reconciling (the first member asked to "
             "revoke half, the second waiting) through a kill -9 and, once the first acknowledged, a clean restart "
             "(the second still waiting): ListGroups' state and ConsumerGroupDescribe's member epochs and "
             "assignments after each; then the second member takes its partitions.", topics=T4, steps=[
        hb("{m1}", save="a"),
        hb("{m2}", save="b"),
        beat("{m1}", 1),
        restart(kill=True),
        list_groups(states=["Reconciling"]),
        describe(),
        beat("{m1}", 1, owned=[("a", [0, 1])]),
        restart(),
        list_groups(),
        describe(),
        beat("{m2}", 2, owned=[]),
        list_groups(states=["Stable"], types=["consumer"]),
    ]),
    Scenario("cg/list/revocation_timeout_while_reconciling", "The first member (rebalance timeout 1 s) is "
             "asked to revoke half for a second member and never acknowledges: once the timeout passes it is "
             "removed and the group epoch moves on with no new target assignment (Assigning, in ListGroups and "
             "ConsumerGroupDescribe, until the next heartbeat computes it), its heartbeat is refused, the second "
             "member gets every partition (Stable).", topics=T4, steps=[
        hb("{m1}", rto=1000, save="a"),
        hb("{m2}", save="b"),
        beat("{m1}", 1),
        list_groups(states=["Reconciling"]),
        describe(until={"groups.0.group_epoch": 3}),
        list_groups(),
        beat("{m1}", 1),
        beat("{m2}", 2, owned=[]),
        list_groups(states=["Stable"], types=["consumer"]),
        describe(),
    ]),
    Scenario("cg/list/assigning_then_join", "A group left Assigning by a member removed at its rebalance "
             "timeout (as cg/list/revocation_timeout_while_reconciling): ListGroups v4 with the Assigning filter, "
             "DescribeGroups v5, an OffsetCommit and an OffsetFetch of the waiting member at its epoch; then a "
             "third member joins (a new group epoch and target assignment: Reconciling) and the waiting member leaves "
             "(the epoch moves on without a target assignment: Assigning again).",
             topics=T4, steps=[
        hb("{m1}", rto=1000, save="a"),
        hb("{m2}", save="b"),
        beat("{m1}", 1),
        describe(until={"groups.0.group_epoch": 3}),
        list_groups(v=4, states=["ASSIGNING"]),
        describe_groups(5),
        commit("{m2}", epoch=2, offset=7),
        fetch_offsets("{m2}", epoch=2),
        hb("{m3}", save="c"),
        list_groups(),
        describe(),
        beat("{m2}", -1),
        list_groups(),
        describe(),
    ]),
    Scenario("cg/restart/assigning_survives_kill", "A group left Assigning by a member removed at its "
             "rebalance timeout, then a kill -9: reloaded Assigning (group epoch ahead of the assignment epoch); "
             "the waiting member's heartbeat then computes the target assignment.", topics=T4, steps=[
        hb("{m1}", rto=1000, save="a"),
        hb("{m2}", save="b"),
        beat("{m1}", 1),
        describe(until={"groups.0.group_epoch": 3}),
        restart(kill=True),
        list_groups(),
        describe(),
        beat("{m2}", 2, owned=[]),
        list_groups(),
    ]),
    # ------------------------------------------------------------ KIP-430
    Scenario("admin/authorized_ops/metadata_and_cluster", "With no authorizer, Metadata and DescribeCluster "
             "give every operation the resource supports when asked, and nothing when not.", steps=[
        call(3, 12, {"topics": [{"name": "{t}", "topic_id": ZERO}],
                     "allow_auto_topic_creation": False, "include_topic_authorized_operations": True}),
        call(3, 12, {"topics": [{"name": "{t}", "topic_id": ZERO}],
                     "allow_auto_topic_creation": False, "include_topic_authorized_operations": False}),
        call(3, 10, {"topics": [{"name": "{t}", "topic_id": ZERO}],
                     "allow_auto_topic_creation": False, "include_cluster_authorized_operations": True,
                     "include_topic_authorized_operations": True}),
        call(60, 1, {"include_cluster_authorized_operations": True, "endpoint_type": 1}),
        call(60, 0, {"include_cluster_authorized_operations": False}),
    ]),
]


def describe_config(rtype: int, name: str, keys=None, synonyms: bool = True, **kw):
    return call(32, 4, {"resources": [{"resource_type": rtype, "resource_name": name, "configuration_keys": keys}],
                        "include_synonyms": synonyms, "include_documentation": False}, **kw)


def alter_config(rtype: int, name: str, entries, validate_only: bool = False, **kw):
    """IncrementalAlterConfigs: entries = [(key, op, value)], op 0 SET, 1 DELETE, 2 APPEND, 3 SUBTRACT."""
    return call(44, 1, {"resources": [{"resource_type": rtype, "resource_name": name, "configs": [
        {"name": k, "config_operation": op, "value": v} for k, op, v in entries]}],
        "validate_only": validate_only}, **kw)


GROUP, BROKER = 32, 4

SCENARIOS += [
    Scenario("admin/group_config/describe_alter_delete", "A GROUP resource: Kafka 4.1's keys and defaults; "
             "an override is GROUP_CONFIG; values outside the broker's bounds, unknown keys, non-numbers and "
             "APPEND are INVALID_CONFIG; an empty name INVALID_REQUEST; DELETE restores the default.", steps=[
        describe_config(GROUP, "{g}"),
        alter_config(GROUP, "{g}", [("consumer.session.timeout.ms", 0, "50000")]),
        alter_config(GROUP, "{g}", [("consumer.session.timeout.ms", 0, "5000")]),
        alter_config(GROUP, "{g}", [("consumer.heartbeat.interval.ms", 0, "99999")]),
        alter_config(GROUP, "{g}", [("nope.key", 0, "1")]),
        alter_config(GROUP, "{g}", [("consumer.session.timeout.ms", 0, "abc")]),
        alter_config(GROUP, "{g}", [("consumer.heartbeat.interval.ms", 2, "6000")]),
        alter_config(GROUP, "", [("consumer.session.timeout.ms", 0, "50000")]),
        describe_config(GROUP, "{g}", ["consumer.session.timeout.ms", "consumer.heartbeat.interval.ms"]),
        describe_config(GROUP, "{g}", ["consumer.session.timeout.ms"], synonyms=False),
        alter_config(GROUP, "{g}", [("consumer.session.timeout.ms", 1, None)]),
        describe_config(GROUP, "{g}", ["consumer.session.timeout.ms"]),
    ]),
    Scenario("cg/group_config/heartbeat_interval", "consumer.heartbeat.interval.ms set on the group is what "
             "its members are told.", topics=T4, steps=[
        alter_config(GROUP, "{g}", [("consumer.heartbeat.interval.ms", 0, "6000")]),
        hb(save="a"),
    ]),
    Scenario("admin/broker_config/dynamic_alter", "IncrementalAlterConfigs on the BROKER resource: static keys "
             "are refused, unknown keys accepted, bad values INVALID_REQUEST, dynamic keys set and deleted "
             "(validate_only and for real), on the node and as the cluster default.", steps=[
        alter_config(BROKER, "1", [("log.dirs", 0, "/tmp/x")], validate_only=True),
        alter_config(BROKER, "1", [("num.partitions", 0, "3")], validate_only=True),
        alter_config(BROKER, "1", [("no.such.key", 0, "3")], validate_only=True),
        alter_config(BROKER, "1", [("log.retention.ms", 0, "abc")], validate_only=True),
        alter_config(BROKER, "1", [("log.retention.ms", 0, "604800001")]),
        alter_config(BROKER, "1", [("log.retention.ms", 1, None)]),
        alter_config(BROKER, "", [("log.cleaner.backoff.ms", 0, "15001")]),
        alter_config(BROKER, "", [("log.cleaner.backoff.ms", 1, None)]),
        alter_config(BROKER, "2", [("log.cleaner.backoff.ms", 0, "15001")]),
    ]),
]


def ack(member: str, epoch, answer: str, **kw):
    """A heartbeat that reports as owned exactly what the saved answer assigned."""
    return call(68, 1, {"group_id": "{g}", "member_id": member, "member_epoch": epoch, "instance_id": None,
                        "rack_id": None, "rebalance_timeout_ms": -1, "subscribed_topic_names": None,
                        "subscribed_topic_regex": None, "server_assignor": None,
                        "topic_partitions": ref(f"{answer}.assignment.topic_partitions")}, **kw)


SCENARIOS += [
    Scenario("cg/join/three_members_uniform", "Three members join one after another over six partitions "
             "(uniform assignor); each acknowledges what it was given.", topics={"t": Topic(partitions=6)},
             steps=[
        hb("{m1}", save="a1"),
        hb("{m2}", save="b1"),
        beat("{m1}", 1, save="a2"),
        ack("{m1}", 1, "a2", save="a3"),
        beat("{m2}", 2, owned=[], save="b2"),
        ack("{m2}", 2, "b2"),
        hb("{m3}", save="c1"),
        beat("{m1}", 2, save="a4"),
        beat("{m2}", 2, save="b3"),
        ack("{m1}", 2, "a4"),
        ack("{m2}", 2, "b3"),
        beat("{m3}", 3, owned=[], save="c2"),
        describe(),
    ]),
]

# The uniform assignor's ties (Kafka 4.1's UniformHomogeneousAssignmentBuilder and
# UniformHeterogeneousAssignmentBuilder) follow the order of a Java HashMap keyed by member id,
# i.e. String.hashCode: member ids are literal here (a placeholder's random suffix would change
# the order from run to run). In a table of 16: ann 0, joe 1, hal 2, kim 14; the members join in
# another order, and none of them sorts first by name and by hash both.
def create_topic(name: str, partitions: int, **kw):
    return call(19, 7, {"topics": [{"name": name, "num_partitions": partitions, "replication_factor": 1,
                                    "assignments": [], "configs": []}], "timeout_ms": 30000,
                        "validate_only": False}, **kw)


def new_topic_for(members: list[str], partitions: int) -> list:
    """The members join subscribed to {u}, which does not exist yet (epoch n, nothing to
    assign), heartbeat up to the group epoch; {u} is created, and the first heartbeat that sees
    it computes the target with nobody holding anything."""
    n = len(members)
    steps = [hb(m, topics=("{u}",)) for m in members]
    steps += [beat(m, i + 1) for i, m in enumerate(members[:-1])]
    steps += [create_topic("{u}", partitions),
              beat(members[-1], n, until={"member_epoch": n + 1}),
              describe()]
    return steps


SCENARIOS += [
    Scenario("cg/uniform/new_topic_three_members_two_partitions",
             "Three members (joining kim, joe, hal; Kafka's order joe, hal, kim) subscribe to a topic "
             "created later with two partitions: the extra partitions go to the last members in Kafka's "
             "order that can still take one (hal 0, kim 1), not to the first joiners.",
             steps=new_topic_for(["kim", "joe", "hal"], 2)),
    Scenario("cg/uniform/new_topic_four_members_one_partition",
             "More members than partitions: four members (joining joe, ann, kim, hal; Kafka's order ann, "
             "joe, hal, kim) and a topic created later with one partition: the last member in Kafka's "
             "order gets it.",
             steps=new_topic_for(["joe", "ann", "kim", "hal"], 1)),
    Scenario("cg/uniform/join_join_join_leave",
             "Four partitions: joe, kim and hal join one after another (each target computed from the "
             "previous target, before anybody acknowledges); the extra partition stays with the first "
             "member in Kafka's order (joe keeps 0, 1; kim gives up 3). joe leaves: its partitions go "
             "to the remaining members in Kafka's order (hal 0, kim 1).", topics=T4, steps=[
        hb("joe", save="a1"),
        hb("kim", save="b1"),
        hb("hal", save="c1"),
        describe(),
        beat("joe", -1),
        beat("kim", 2, save="b2"),
        describe(),
    ]),
    Scenario("cg/uniform/two_partitions_three_members_leave",
             "Two partitions, three members joining kim, joe, hal (Kafka's order joe, hal, kim); then the "
             "member holding partition 0 leaves and a heartbeat recomputes the target.",
             topics={"t": Topic(partitions=2)}, steps=[
        hb("kim"),
        hb("joe"),
        hb("hal"),
        describe(),
        beat("kim", -1),
        beat("joe", 2),
        describe(),
    ]),
    Scenario("cg/uniform/kept_partitions_follow_hash_order",
             "Twenty partitions: a takes them all, b joins and is given 10-19, which Kafka lists (and, "
             "its target reloaded after a restart, iterates) as 16-19 then 10-15; when c joins, b keeps "
             "the first seven of that order (16-19, 10-12) and c gets 7-9 and 13-15.",
             topics={"t": Topic(partitions=20)}, steps=[
        hb("a"),
        hb("b"),
        restart(),
        hb("c"),
        describe(),
    ]),
    Scenario("cg/uniform/heterogeneous_two_topics",
             "Different subscriptions (heterogeneous): kim takes {t} (5 partitions), hal {o} (3), then joe "
             "both; the topics are balanced in order of partitions per subscriber, members by load and "
             "Kafka's order.", topics={"t": Topic(partitions=5), "o": Topic(partitions=3)}, steps=[
        hb("kim"),
        hb("hal", topics=("{o}",)),
        hb("joe", topics=("{t}", "{o}")),
        describe(),
        beat("kim", -1),
        beat("hal", 2),
        describe(),
    ]),
]

SCENARIOS += [
    Scenario("cg/describe/v1_member_type", "ConsumerGroupDescribe v1 gives each member's type (1: consumer "
             "protocol).", topics=T4, steps=[
        hb(save="a"),
        call(69, 1, {"group_ids": ["{g}", "{nothere}"], "include_authorized_operations": True}),
    ]),
]


def commit_to(topic: str, member="{m1}", epoch=1, offset: int = 3):
    return call(8, 9, {"group_id": "{g}", "generation_id_or_member_epoch": epoch, "member_id": member,
                       "group_instance_id": None, "retention_time_ms": -1,
                       "topics": [{"name": topic, "partitions": [{"partition_index": 0, "committed_offset": offset,
                                                                  "committed_leader_epoch": -1,
                                                                  "committed_metadata": ""}]}]})


def offset_delete():
    return call(47, 0, {"group_id": "{g}", "topics": [{"name": "{t}", "partitions": [{"partition_index": 0}]},
                                                     {"name": "{o}", "partitions": [{"partition_index": 0}]}]})


SCENARIOS += [
    Scenario("cg/offsets/offset_delete_subscribed", "OffsetDelete on a consumer group: offsets of a topic its "
             "members subscribe to stay (GROUP_SUBSCRIBED_TO_TOPIC), others go; once the group is empty, all go.",
             topics={"t": Topic(partitions=4), "o": Topic()}, steps=[
        hb(save="a"),
        commit_to("{t}"),
        commit_to("{o}"),
        offset_delete(),
        beat(epoch=-1),
        offset_delete(),
    ]),
]
