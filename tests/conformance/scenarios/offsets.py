"""The committed-offsets APIs under attack: OffsetCommit, OffsetFetch, OffsetDelete and
TxnOffsetCommit (+ AddOffsetsToTxn) with what a buggy client, a zombie, a late retry, a
restart or an admin throws at them, and what the classic and consumer group scenarios left
unrecorded: metadata sizes counted as Kafka counts them (UTF-16 units of a Java String),
offsets Kafka does not check, one partition twice in a request, deleted and re-created topics,
retention (v2's retention_time_ms and offsets.retention.check.interval.ms), batched OffsetFetch
v8/v9 mixing groups that answer and groups that refuse, classic members of a consumer group
(group.consumer.migration.policy=bidirectional) committing plain and transactional offsets,
pending transactional offsets across a group upgrade, a topic deletion, a fence, a timeout
abort and a kill -9, and TxnOffsetCommit from producers that must be refused.

Exactly-once is the point: no read_committed consumer may ever be handed an offset of an
aborted or undecided transaction, and no zombie may commit one."""
from ..dsl import (TV2, Scenario, Topic, add_offsets, add_partitions, await_txn, call, describe_txn, end_txn, init_pid,
                   ref, restart, txn_offset_commit)
from .admin_topics import create1, delete_names, gone, served
from .classic_groups import CLASSIC, commit, fetch, join, mid, offset_delete, stable_one, txn_commit
from .classic_groups import describe as describe_groups
from .consumer_groups import beat, hb
from .txn_time import TIMEOUT
from .txn_v2 import end2, init2

T2 = {"t": Topic(partitions=2)}
T2O = {"t": Topic(partitions=2), "o": Topic()}
# offsets.retention.check.interval.ms short, so that v2's retention_time_ms expires offsets within
# a second; one __consumer_offsets partition, so that any two groups share one (what a transaction's
# AddOffsetsToTxn of one group means for a TxnOffsetCommit to another then does not hang on a hash)
# consumer_groups.py's short sessions (the same settings: the same broker)
CG_SHORT = {"group.consumer.session.timeout.ms": "1500", "group.consumer.min.session.timeout.ms": "1000",
            "group.consumer.heartbeat.interval.ms": "500", "group.consumer.min.heartbeat.interval.ms": "500"}
HELD = {"t": Topic(partitions=2), "h": Topic(held=True)}
ONE_PART = {"group.initial.rebalance.delay.ms": "0", "offsets.retention.check.interval.ms": "500",
            "offsets.topic.num.partitions": "1"}


def raw_commit(parts, member="", generation=-1, instance=None, retention=-1, v=8, group="{g}", **kw):
    """OffsetCommit with every field given: ``parts`` = [(topic, partition, offset, leader epoch,
    metadata), ...] in this order (the same partition may come twice)."""
    topics: list = []
    for t, p, off, epoch, meta in parts:
        if not topics or topics[-1]["name"] != t:
            topics.append({"name": t, "partitions": []})
        topics[-1]["partitions"].append({"partition_index": p, "committed_offset": off,
                                         "committed_leader_epoch": epoch, "committed_metadata": meta})
    return call(8, v, {"group_id": group, "generation_id_or_member_epoch": generation, "member_id": member,
                       "group_instance_id": instance, "retention_time_ms": retention, "topics": topics}, **kw)


def raw_txn_commit(who, parts, member="", generation=-1, instance=None, v=3, group="{g}", txn="{tx}",
                   pid=None, epoch=None, **kw):
    """TxnOffsetCommit with every partition field given (as ``raw_commit``)."""
    topics: list = []
    for t, p, off, lepoch, meta in parts:
        if not topics or topics[-1]["name"] != t:
            topics.append({"name": t, "partitions": []})
        topics[-1]["partitions"].append({"partition_index": p, "committed_offset": off,
                                         "committed_leader_epoch": lepoch, "committed_metadata": meta})
    return call(28, v, {"transactional_id": txn, "group_id": group,
                        "producer_id": ref(f"{who}.producer_id") if pid is None else pid,
                        "producer_epoch": ref(f"{who}.producer_epoch") if epoch is None else epoch,
                        "generation_id": generation, "member_id": member, "group_instance_id": instance,
                        "topics": topics}, **kw)


def fetch9(groups, stable=False, **kw):
    """OffsetFetch v9: ``groups`` = [(group, member id, member epoch, parts or None), ...]."""
    return call(9, 9, {"groups": [{"group_id": g, "member_id": m, "member_epoch": e,
                                   "topics": None if parts is None else
                                   [{"name": t, "partition_indexes": list(ps)} for t, ps in parts]}
                                  for g, m, e, parts in groups], "require_stable": stable}, **kw)


def upgraded():
    """m1 (classic) is Stable alone with both partitions (generation 1: j1); {m2} joins with
    ConsumerGroupHeartbeat (answer b): the group is a consumer group with a classic member."""
    return stable_one() + [hb("{m2}", save="b")]


E2 = "é" * 2048          # 2048 UTF-16 units, 4096 UTF-8 bytes
SMILE = "\U0001F600"     # one code point, two UTF-16 units, four UTF-8 bytes

SCENARIOS = [
    # ================================================================ OffsetCommit
    Scenario("offsets/commit/metadata_counted_as_java_string",
             "offset.metadata.max.bytes (4096) is compared with the length of a Java String, in UTF-16 units: "
             "4096 'é' (8192 UTF-8 bytes) are accepted, 2048 emoji (4096 units) too, 2049 emoji are "
             "OFFSET_METADATA_TOO_LARGE; one refused partition beside accepted ones in the same request.",
             topics=T2, broker=CLASSIC, steps=[
        raw_commit([("{t}", 0, 1, -1, "é" * 4096), ("{t}", 1, 2, -1, "é" * 4097)]),
        raw_commit([("{t}", 0, 3, -1, SMILE * 2048), ("{t}", 1, 4, -1, SMILE * 2049)]),
        raw_commit([("{t}", 1, 5, -1, E2 + "x" * 2048)]),
        fetch(),
    ]),
    Scenario("offsets/commit/offsets_not_checked",
             "OffsetCommit does not check the offset: -1, -2, a large negative, Long.MAX_VALUE and a leader "
             "epoch of -5 or Integer.MAX_VALUE are stored and come back as given.", topics=T2, broker=CLASSIC,
             steps=[
        raw_commit([("{t}", 0, -1, -1, "a"), ("{t}", 1, -2, -5, "b")]),
        fetch(),
        raw_commit([("{t}", 0, -(1 << 62), 2147483647, ""), ("{t}", 1, (1 << 63) - 1, 0, "")]),
        fetch(),
        fetch(v=4),
    ]),
    Scenario("offsets/commit/same_partition_twice",
             "One partition twice in one OffsetCommit (and the topic twice): both are answered, the later one "
             "stays; one partition twice where the first is refused for its metadata.", topics=T2,
             broker=CLASSIC, steps=[
        raw_commit([("{t}", 0, 5, -1, "first"), ("{t}", 0, 6, -1, "second")]),
        fetch(),
        call(8, 8, {"group_id": "{g}", "generation_id_or_member_epoch": -1, "member_id": "",
                    "group_instance_id": None, "retention_time_ms": -1, "topics": [
                        {"name": "{t}", "partitions": [{"partition_index": 1, "committed_offset": 7,
                                                        "committed_leader_epoch": -1, "committed_metadata": ""}]},
                        {"name": "{t}", "partitions": [{"partition_index": 1, "committed_offset": 8,
                                                        "committed_leader_epoch": -1, "committed_metadata": ""}]}]}),
        fetch(),
        raw_commit([("{t}", 0, 9, -1, "m" * 4097), ("{t}", 0, 10, -1, "")]),
        raw_commit([("{t}", 1, 11, -1, ""), ("{t}", 1, 12, -1, "m" * 4097)]),
        fetch(),
    ]),
    Scenario("offsets/commit/versions",
             "One simple commit per version: v2-v4 carry retention_time_ms (-1), v5 drops it, v6 adds the "
             "leader epoch, v7 the instance id; what each version's OffsetFetch gives back.", topics=T2,
             broker=CLASSIC, steps=[
        raw_commit([("{t}", 0, 1, 4, "v2")], v=2),
        fetch(v=1),
        raw_commit([("{t}", 0, 2, 4, "v3")], v=3),
        raw_commit([("{t}", 0, 3, 4, "v5")], v=5),
        fetch(v=4),
        fetch(v=5),
        raw_commit([("{t}", 1, 4, 4, "v6")], v=6),
        raw_commit([("{t}", 1, 5, 6, "v7")], v=7, instance=None),
        fetch(v=5),
        fetch(v=6),
    ]),
    Scenario("offsets/commit/static_member",
             "A static classic member commits with its instance id (v7), with another member id behind its "
             "instance id (FENCED_INSTANCE_ID), with another instance id, and without one (v6 and v7).",
             topics=T2, broker=CLASSIC, steps=stable_one(instance="{i1}") + [
        commit(mid("j1"), 1, v=7, instance="{i1}"),
        commit("{x}", 1, v=7, instance="{i1}"),
        commit(mid("j1"), 1, v=7, instance="{i2}"),
        commit(mid("j1"), 1, v=7),
        commit(mid("j1"), 1, v=6),
        commit(mid("j1"), 0, v=7, instance="{i1}"),
        fetch(),
    ]),
    Scenario("offsets/commit/deleted_and_recreated_topic",
             "Offsets of a topic that is deleted: OffsetFetch no longer has them, a commit to it is "
             "UNKNOWN_TOPIC_OR_PARTITION; the re-created topic (same name, new id) starts without offsets.",
             topics=T2, broker=CLASSIC, steps=[
        commit(offsets={("{t}", 0): 5, ("{t}", 1): 6}),
        fetch(),
        delete_names("{t}"),
        gone(),
        fetch(until={"groups.0.topics.0.partitions.0.committed_offset": -1}, timeout_s=15),
        fetch(None),
        commit(offsets={("{t}", 0): 7}),
        create1("{t}", 2),
        served(),
        fetch(),
        commit(offsets={("{t}", 1): 8}),
        fetch(None),
    ]),
    Scenario("offsets/commit/consumer_group_versions_and_members",
             "A consumer group with a member: OffsetCommit v9 by the member with its epoch, with an empty "
             "member id and epoch -1 (a simple commit beside members), with the member's id and epoch -1, with "
             "an instance id it does not have, v8 with the member's epoch; a topic its member does not subscribe "
             "to.", topics={"t": Topic(partitions=4), "o": Topic()}, steps=[
        hb(save="a"),
        raw_commit([("{t}", 0, 1, -1, "")], "{m1}", 1, v=9),
        raw_commit([("{t}", 1, 2, -1, "")], "", -1, v=9),
        raw_commit([("{t}", 1, 3, -1, "")], "{m1}", -1, v=9),
        raw_commit([("{t}", 1, 4, -1, "")], "{m1}", 1, instance="{i1}", v=9),
        raw_commit([("{t}", 2, 5, -1, "")], "{m1}", 1, v=8),
        raw_commit([("{o}", 0, 6, -1, "")], "{m1}", 1, v=9),
        raw_commit([("{t}", 3, 7, -1, "")], "{m1}", 2, v=9),
        fetch9([("{g}", None, -1, [("{t}", [0, 1, 2, 3]), ("{o}", [0])])]),
    ]),
    # ================================================================ retention
    Scenario("offsets/retention/v2_retention_time",
             "OffsetCommit v2 with retention_time_ms 1000 on a group without members: the offset expires once "
             "the time passed (offsets.retention.check.interval.ms 500); one committed with -1 stays; a "
             "partition with a pending transactional offset is kept until the transaction aborts, then "
             "expires; the group is gone once its last offset is.", topics=T2, broker=ONE_PART, steps=[
        init_pid("p"),
        add_offsets("p"),
        txn_offset_commit("p", {("{t}", 1): 9}),
        raw_commit([("{t}", 0, 3, -1, "")], retention=1000, v=2),
        raw_commit([("{t}", 1, 4, -1, "")], retention=1000, v=2),
        raw_commit([("{t}", 0, 5, -1, "")], retention=-1, v=2, group="{h}"),
        fetch(until={"groups.0.topics.0.partitions.0.committed_offset": -1}, timeout_s=20),
        fetch(groups=("{h}",)),
        end_txn("p", commit=False),
        await_txn("CompleteAbort"),
        fetch(until={"groups.0.topics.0.partitions.1.committed_offset": -1}, timeout_s=20),
        describe_groups(["{g}", "{h}"], until={"groups.0.group_state": "Dead"}, timeout_s=20),
    ]),
    Scenario("offsets/retention/unsubscribed_topic_of_stable_group",
             "A Stable classic group whose member subscribes to {t}: offsets committed with a retention time "
             "(v2) expire for a topic it does not subscribe to, while the subscribed topic's stay.",
             topics=T2O, broker=ONE_PART, steps=stable_one() + [
        raw_commit([("{t}", 0, 3, -1, ""), ("{o}", 0, 4, -1, "")], mid("j1"), 1, retention=1000, v=2),
        fetch([("{t}", [0]), ("{o}", [0])], until={"groups.0.topics.1.partitions.0.committed_offset": -1},
              timeout_s=20),
        describe_groups(),
    ]),
    # ================================================================ OffsetFetch
    Scenario("offsets/fetch/never_committed",
             "A Stable classic group and a consumer group that never committed: named partitions are -1, all "
             "partitions are none, with and without require_stable, v1 and v8.", topics=T2, broker=CLASSIC,
             steps=stable_one() + [
        fetch(),
        fetch(None),
        fetch(None, stable=True),
        fetch(v=1),
        hb("{m1}", group="{c}", save="a"),
        fetch9([("{c}", "{m1}", 1, [("{t}", [0, 1])]), ("{c}", "{m1}", 1, None)], stable=True),
    ]),
    Scenario("offsets/fetch/batched_mixed",
             "OffsetFetch v8 and v9 asking for several groups at once: a classic group with offsets, one that "
             "does not exist, a consumer group (v8 without a member; v9 with the member's epoch, a stale one, "
             "an unknown member), the same group twice, an empty group id: each group answers on its own.",
             topics=T2, broker=CLASSIC, steps=[
        commit(offsets={("{t}", 0): 3}, group="{h}"),
        hb("{m1}", save="a"),
        raw_commit([("{t}", 1, 4, -1, "")], "{m1}", 1, v=9),
        fetch(groups=("{h}", "{u}", "{g}", "{h}", "")),
        fetch(None, groups=("{g}", "{u}", "{h}")),
        fetch9([("{h}", None, -1, [("{t}", [0])]), ("{g}", "{m1}", 1, [("{t}", [1])]),
                ("{g}", "{m1}", 2, [("{t}", [1])]), ("{g}", "{x}", 1, None), ("{u}", "{x}", 1, None)]),
        fetch9([("{g}", None, 1, [("{t}", [1])]), ("{g}", "", -1, [("{t}", [1])]),
                ("{g}", "{m1}", -1, [("{t}", [1])])]),
    ]),
    Scenario("offsets/fetch/require_stable_two_producers",
             "Two transactional producers commit offsets for one group: require_stable answers "
             "UNSTABLE_OFFSET_COMMIT while either is pending on the partition (named and all partitions); one "
             "commits, the other aborts: only the committed one's offset ever shows.", topics=T2,
             broker=CLASSIC, steps=[
        commit(offsets={("{t}", 0): 1, ("{t}", 1): 2}),
        init_pid("p"),
        init_pid("q", txn="{tx2}"),
        add_offsets("p"),
        add_offsets("q", txn="{tx2}"),
        txn_offset_commit("p", {("{t}", 0): 10}),
        txn_offset_commit("q", {("{t}", 0): 20, ("{t}", 1): 21}, txn="{tx2}"),
        fetch(stable=True),
        fetch(None, stable=True),
        fetch(stable=False),
        end_txn("p", commit=True),
        await_txn("CompleteCommit"),
        fetch(stable=True),
        end_txn("q", commit=False, txn="{tx2}"),
        await_txn("CompleteAbort", txn="{tx2}"),
        fetch(stable=True),
        fetch(None, stable=True),
    ]),
    Scenario("offsets/fetch/pending_only_partition",
             "A partition with only a pending transactional offset (never committed before): named with "
             "require_stable it is UNSTABLE_OFFSET_COMMIT, without it -1; asked for as all partitions, whether "
             "it is listed at all; a v6 OffsetFetch (no require_stable).", topics=T2, broker=CLASSIC, steps=[
        commit(offsets={("{t}", 0): 1}),
        init_pid("p"),
        add_offsets("p"),
        txn_offset_commit("p", {("{t}", 1): 10}),
        fetch(stable=True),
        fetch(None, stable=True),
        fetch(None, stable=False),
        fetch(v=6),
        end_txn("p", commit=True),
        await_txn("CompleteCommit"),
        fetch(None, stable=True),
    ]),
    Scenario("offsets/restart/pending_abort_after_kill",
             "A transactional offset pending at a kill -9 is still pending after the restart "
             "(UNSTABLE_OFFSET_COMMIT); the transaction aborts: the partition shows its last plain commit, never "
             "the aborted offset; a new transaction of the same id commits.", topics=T2, broker=CLASSIC, steps=[
        commit(offsets={("{t}", 0): 3}),
        init_pid("p"),
        add_offsets("p"),
        txn_offset_commit("p", {("{t}", 0): 9, ("{t}", 1): 9}),
        restart(kill=True),
        fetch(stable=True),
        fetch(stable=False),
        end_txn("p", commit=False),
        await_txn("CompleteAbort"),
        fetch(stable=True),
        add_offsets("p"),
        txn_offset_commit("p", {("{t}", 1): 11}),
        end_txn("p", commit=True),
        await_txn("CompleteCommit"),
        fetch(stable=True),
    ]),
    # ================================================================ OffsetDelete
    Scenario("offsets/delete/uncommitted_unknown_and_twice",
             "OffsetDelete on a group without members: a committed partition, one never committed, the same "
             "partition twice, a partition past the end, a topic that does not exist; OffsetFetch after it; a "
             "commit after the delete.", topics=T2, broker=CLASSIC, steps=[
        commit(offsets={("{t}", 0): 3}),
        offset_delete([("{t}", [0, 1, 0, 5]), ("{nothere}", [0])]),
        fetch(),
        fetch(None),
        offset_delete([("{t}", [0])]),
        commit(offsets={("{t}", 0): 4}),
        fetch(),
        describe_groups(),
    ]),
    Scenario("offsets/delete/empty_and_unknown_groups",
             "OffsetDelete on a group that only ever had a refused JoinGroup (Empty, no offsets), on a group "
             "that does not exist, with no partitions at all, and on a group that was deleted.", topics=T2,
             broker=CLASSIC, steps=[
        join("e", ptype=""),
        describe_groups(until={"groups.0.group_state": "Empty"}),
        offset_delete([("{t}", [0])]),
        offset_delete([("{t}", [0])], group="{u}"),
        offset_delete([]),
        offset_delete([], group="{u}"),
        commit(offsets={("{t}", 0): 3}, group="{h}"),
        call(42, 2, {"groups_names": ["{h}"]}),
        offset_delete([("{t}", [0])], group="{h}"),
    ]),
    Scenario("offsets/delete/during_rebalance",
             "OffsetDelete while a classic consumer group completes a rebalance (the member joined, no "
             "SyncGroup yet): a subscribed topic's offsets stay, another's go.", topics=T2O, broker=CLASSIC,
             steps=[
        commit(offsets={("{t}", 0): 3, ("{o}", 0): 4}),
        join("r1"),
        join("j1", member=mid("r1")),
        describe_groups(until={"groups.0.group_state": "CompletingRebalance"}),
        offset_delete([("{t}", [0]), ("{o}", [0])]),
        fetch([("{t}", [0]), ("{o}", [0])]),
    ]),
    Scenario("offsets/delete/pending_txn_consumer_group",
             "OffsetDelete of a partition whose transactional offset is pending, on an empty consumer group: "
             "answered, the committed offset goes; the transaction then commits and its offset shows.",
             topics={"t": Topic(partitions=4)}, steps=[
        hb(save="a"),
        raw_commit([("{t}", 0, 2, -1, "")], "{m1}", 1, v=9),
        beat(epoch=-1),
        init_pid("p"),
        add_offsets("p"),
        txn_offset_commit("p", {("{t}", 0): 9}),
        offset_delete([("{t}", [0])]),
        fetch9([("{g}", None, -1, [("{t}", [0])])]),
        fetch9([("{g}", None, -1, [("{t}", [0])])], stable=True),
        end_txn("p", commit=True),
        await_txn("CompleteCommit"),
        fetch9([("{g}", None, -1, [("{t}", [0])])], stable=True),
    ]),
    # ================================================================ classic members of a consumer group
    Scenario("offsets/mixed/classic_member_commits",
             "A classic member living in a consumer group (upgraded by a ConsumerGroupHeartbeat): its "
             "OffsetCommit v8 and v9 with its generation (its member epoch), a stale one, with an instance id "
             "it does not have; the consumer member's v8; OffsetFetch v9 naming the classic member with its "
             "epoch and a wrong one; OffsetDelete of the topic both subscribe to.", topics=T2O, broker=CLASSIC,
             steps=upgraded() + [
        commit(mid("j1"), 1, {("{t}", 0): 3}),
        commit(mid("j1"), 1, {("{t}", 0): 4}, v=9),
        commit(mid("j1"), 0, {("{t}", 0): 5}),
        commit(mid("j1"), 2, {("{t}", 0): 5}, v=9),
        commit(mid("j1"), 1, {("{o}", 0): 6}, v=7, instance="{i1}"),
        raw_commit([("{t}", 1, 7, -1, "")], "{m2}", ref("b.member_epoch"), v=8),
        raw_commit([("{t}", 1, 8, -1, "")], "{m2}", ref("b.member_epoch"), v=9),
        fetch9([("{g}", mid("j1"), 1, [("{t}", [0, 1])]), ("{g}", mid("j1"), 2, None),
                ("{g}", "{m2}", ref("b.member_epoch"), None)]),
        offset_delete([("{t}", [0]), ("{o}", [0])]),
    ]),
    Scenario("offsets/mixed/classic_member_txn_commits",
             "TxnOffsetCommit from a classic member of a consumer group: its generation, a stale one, an "
             "unknown member, an instance id it does not have, v2 (no member); the transaction commits.",
             topics=T2, broker=CLASSIC, steps=upgraded() + [
        init_pid("p"),
        add_offsets("p"),
        txn_commit("p", {("{t}", 0): 10}, mid("j1"), 1),
        txn_commit("p", {("{t}", 0): 11}, mid("j1"), 7),
        txn_commit("p", {("{t}", 0): 12}, "{x}", 1),
        txn_commit("p", {("{t}", 0): 13}, mid("j1"), 1, "{i1}"),
        txn_commit("p", {("{t}", 1): 14}, v=2),
        end_txn("p", commit=True),
        await_txn("CompleteCommit"),
        fetch(stable=True),
    ]),
    Scenario("offsets/mixed/pending_across_upgrade",
             "A classic member's transactional offset is pending when a ConsumerGroupHeartbeat upgrades the "
             "group: still UNSTABLE_OFFSET_COMMIT in the consumer group, visible once the transaction commits.",
             topics=T2, broker=CLASSIC, steps=stable_one() + [
        init_pid("p"),
        add_offsets("p"),
        txn_commit("p", {("{t}", 0): 10}, mid("j1"), 1),
        hb("{m2}", save="b"),
        fetch(stable=True),
        txn_commit("p", {("{t}", 1): 11}, mid("j1"), 1),
        end_txn("p", commit=True),
        await_txn("CompleteCommit"),
        fetch(stable=True),
    ]),
    Scenario("offsets/mixed/pending_across_downgrade",
             "The consumer member leaves while a transactional offset is pending, and the group becomes a "
             "classic group again: the transaction aborts, the offset never shows; the plain commit from "
             "before stays.", topics=T2, broker=CLASSIC, steps=upgraded() + [
        commit(mid("j1"), 1, {("{t}", 0): 3}),
        init_pid("p"),
        add_offsets("p"),
        txn_commit("p", {("{t}", 0): 10}, mid("j1"), 1),
        hb("{m2}", -1, topics=None, owned=None, rto=-1),
        describe_groups(),
        fetch(stable=True),
        end_txn("p", commit=False),
        await_txn("CompleteAbort"),
        fetch(stable=True),
    ]),
    # ================================================================ TxnOffsetCommit
    Scenario("offsets/txn/wrong_producer",
             "TxnOffsetCommit naming another producer id, an epoch above the producer's, a transactional id "
             "never initialized, and the right producer before AddOffsetsToTxn; nothing of it shows.",
             topics=T2, broker=CLASSIC, steps=[
        init_pid("p"),
        add_offsets("p"),
        txn_offset_commit("p", {("{t}", 0): 1}, pid=ref("p.producer_id") + 1),
        txn_offset_commit("p", {("{t}", 0): 2}, epoch=ref("p.producer_epoch") + 1),
        txn_offset_commit("p", {("{t}", 0): 3}, txn="{tx2}"),
        init_pid("q", txn="{tx3}"),
        txn_offset_commit("q", {("{t}", 0): 4}, txn="{tx3}"),
        txn_offset_commit("p", {("{t}", 1): 5}),
        end_txn("p", commit=True),
        await_txn("CompleteCommit"),
        fetch(stable=True),
    ]),
    Scenario("offsets/txn/late_retry_after_end",
             "A TxnOffsetCommit retried after its transaction committed (transactions V1: the epoch is the "
             "same) is refused, and refused again while the next transaction has only a data partition; "
             "the offset stays the committed one.", topics=T2, broker=CLASSIC, steps=[
        init_pid("p"),
        add_offsets("p"),
        txn_offset_commit("p", {("{t}", 0): 10}),
        txn_offset_commit("p", {("{t}", 0): 10}),
        end_txn("p", commit=True),
        await_txn("CompleteCommit"),
        txn_offset_commit("p", {("{t}", 0): 10}),
        fetch(stable=True),
        add_partitions("p", "{t}"),
        txn_offset_commit("p", {("{t}", 0): 99}),
        end_txn("p", commit=False),
        await_txn("CompleteAbort"),
        fetch(stable=True),
    ]),
    Scenario("offsets/txn/fenced_while_pending",
             "A producer's transactional offsets are pending when a new instance of its transactional id "
             "fences it: the abort drops them (no UNSTABLE_OFFSET_COMMIT, no offset); the zombie's "
             "TxnOffsetCommit and EndTxn are refused; the new instance's commit shows.", topics=T2,
             broker=CLASSIC, steps=[
        commit(offsets={("{t}", 0): 1}),
        init_pid("a"),
        add_offsets("a"),
        txn_offset_commit("a", {("{t}", 0): 10, ("{t}", 1): 10}),
        init_pid("b", retry_while=(51,)),
        fetch(stable=True),
        txn_offset_commit("a", {("{t}", 0): 11}),
        end_txn("a", commit=True),
        add_offsets("b"),
        txn_offset_commit("b", {("{t}", 1): 20}),
        end_txn("b", commit=True),
        await_txn("CompleteCommit"),
        fetch(stable=True),
    ]),
    Scenario("offsets/txn/timed_out_while_pending",
             "A transaction holding offsets times out: the coordinator's abort drops them; the old producer's "
             "TxnOffsetCommit after it is refused.", topics=T2, broker=TIMEOUT, steps=[
        init_pid("a", timeout_ms=1000),
        add_offsets("a"),
        txn_offset_commit("a", {("{t}", 0): 10}),
        await_txn("CompleteAbort"),
        fetch(stable=True),
        txn_offset_commit("a", {("{t}", 0): 11}),
        fetch(stable=True),
    ]),
    Scenario("offsets/txn/partition_errors",
             "One TxnOffsetCommit with an unknown topic, a partition past the end, metadata over "
             "offset.metadata.max.bytes, the same partition twice and a good partition: each answered on its "
             "own; what the commit makes visible.", topics=T2, broker=CLASSIC, steps=[
        init_pid("p"),
        add_offsets("p"),
        raw_txn_commit("p", [("{nothere}", 0, 1, -1, ""), ("{t}", 5, 2, -1, ""), ("{t}", 0, 3, -1, "m" * 4097),
                             ("{t}", 1, 4, 7, "a"), ("{t}", 1, 5, 8, "b")]),
        end_txn("p", commit=True),
        await_txn("CompleteCommit"),
        fetch(stable=True),
    ]),
    Scenario("offsets/txn/other_group_same_offsets_partition",
             "AddOffsetsToTxn names {g}; TxnOffsetCommit for {h}, whose offsets partition is {g}'s (one "
             "__consumer_offsets partition): what Kafka's partition verification lets through, and what the "
             "commit and an abort then leave visible.", topics=T2, broker=ONE_PART, steps=[
        init_pid("p"),
        add_offsets("p"),
        txn_offset_commit("p", {("{t}", 0): 10}, group="{h}"),
        end_txn("p", commit=True),
        await_txn("CompleteCommit"),
        fetch(stable=True, groups=("{g}", "{h}")),
        add_offsets("p"),
        txn_offset_commit("p", {("{t}", 1): 11}, group="{h}"),
        end_txn("p", commit=False),
        await_txn("CompleteAbort"),
        fetch(stable=True, groups=("{g}", "{h}")),
    ]),
    # literal group names: the two must hash to different __consumer_offsets partitions (Java's
    # String.hashCode % 50: 18 and 17), which unique names per run would not promise
    Scenario("offsets/txn/other_group_other_offsets_partition",
             "AddOffsetsToTxn names one group; TxnOffsetCommit (v3, transactions V1) for another group whose "
             "offsets partition is not in the transaction: what Kafka's partition verification answers, and "
             "what the commit and, in a second transaction, an abort leave visible for each group.",
             topics=T2, broker=CLASSIC, steps=[
        init_pid("p"),
        add_offsets("p", group="eos-offsets-a"),
        txn_offset_commit("p", {("{t}", 0): 10}, group="eos-offsets-b"),
        txn_offset_commit("p", {("{t}", 1): 11}, group="eos-offsets-a"),
        describe_txn(),
        end_txn("p", commit=True),
        await_txn("CompleteCommit"),
        fetch(stable=True, groups=("eos-offsets-a", "eos-offsets-b")),
        add_offsets("p", group="eos-offsets-a"),
        txn_offset_commit("p", {("{t}", 1): 21}, group="eos-offsets-b"),
        end_txn("p", commit=False),
        await_txn("CompleteAbort"),
        fetch(stable=True, groups=("eos-offsets-a", "eos-offsets-b")),
    ]),
    Scenario("offsets/txn/v0_on_stable_group",
             "TxnOffsetCommit v0 (no member fields) to a Stable classic group and to a consumer group with a "
             "member: accepted, as a producer without group metadata.", topics=T2, broker=CLASSIC,
             steps=stable_one() + [
        hb("{m1}", group="{c}", save="a"),
        init_pid("p"),
        add_offsets("p"),
        add_offsets("p", group="{c}"),
        txn_commit("p", {("{t}", 0): 10}, v=0),
        txn_commit("p", {("{t}", 0): 11}, v=0, group="{c}"),
        txn_commit("p", {("{t}", 1): 12}, mid("j1"), 1, v=1),
        end_txn("p", commit=True),
        await_txn("CompleteCommit"),
        fetch(stable=True, groups=("{g}", "{c}")),
    ]),
    Scenario("offsets/txn/deleted_topic_pending",
             "A transactional offset pending for a topic that is then deleted: once the deletion reached the "
             "group coordinator (the plain commit of another partition is gone), the pending offset is gone "
             "too, and the transaction's commit makes nothing visible, before or after the topic is re-created.",
             topics=T2, broker=CLASSIC, steps=[
        commit(offsets={("{t}", 1): 4}),
        init_pid("p"),
        add_offsets("p"),
        txn_offset_commit("p", {("{t}", 0): 10}),
        fetch(stable=True),
        delete_names("{t}"),
        gone(),
        fetch(until={"groups.0.topics.0.partitions.1.committed_offset": -1}, timeout_s=15),
        fetch(stable=True),
        end_txn("p", commit=True),
        await_txn("CompleteCommit"),
        fetch(stable=True),
        fetch(None, stable=True),
        create1("{t}", 2),
        served(),
        fetch(stable=True),
    ]),
    Scenario("offsets/commit/refused_partitions_first",
             "OffsetCommit and TxnOffsetCommit with a good partition before an unknown partition and an unknown "
             "topic: in what order the answer lists them.", topics=T2, broker=CLASSIC, steps=[
        raw_commit([("{t}", 0, 1, -1, ""), ("{t}", 7, 2, -1, ""), ("{nothere}", 0, 3, -1, ""),
                    ("{t}", 1, 4, -1, "m" * 4097)]),
        init_pid("p"),
        add_offsets("p"),
        raw_txn_commit("p", [("{t}", 0, 5, -1, ""), ("{t}", 7, 6, -1, ""), ("{nothere}", 0, 7, -1, ""),
                             ("{t}", 1, 8, -1, "m" * 4097)]),
        end_txn("p", commit=True),
        await_txn("CompleteCommit"),
        fetch(stable=True),
    ]),
    Scenario("offsets/txn/v2_late_commit_after_end",
             "Transactions V2: a TxnOffsetCommit v5 with the epoch of a transaction EndTxn v5 already ended "
             "(the epoch was bumped) is refused and does not open a transaction; the committed offset stays.",
             topics=T2, features=TV2, steps=[
        init2("a"),
        txn_offset_commit("a", {("{t}", 0): 5}, v=5),
        end2("a", save="e"),
        await_txn("CompleteCommit"),
        txn_offset_commit("a", {("{t}", 0): 6}, v=5),
        await_txn("CompleteCommit"),
        fetch(stable=True),
        txn_offset_commit("e", {("{t}", 0): 7}, v=5),
        end2("e", commit=False),
        await_txn("CompleteAbort"),
        fetch(stable=True),
    ]),
    Scenario("offsets/txn/v2_v4_after_v5",
             "Transactions V2: a TxnOffsetCommit v5 adds the offsets partition; in the same transaction v4 "
             "(which only verifies) and v3 are then accepted; the abort drops all of them.", topics=T2,
             features=TV2, steps=[
        init2("a"),
        txn_offset_commit("a", {("{t}", 0): 5}, v=5),
        txn_offset_commit("a", {("{t}", 1): 6}, v=4),
        txn_offset_commit("a", {("{t}", 1): 7}, v=3),
        fetch(stable=True),
        end2("a", commit=False),
        await_txn("CompleteAbort"),
        fetch(stable=True),
    ]),
    Scenario("offsets/txn/late_commit_while_prepare_commit",
             "A transaction with offsets and a partition whose marker cannot be written stays in PrepareCommit; "
             "the offsets partition's marker is written, so its offset shows. A late TxnOffsetCommit and "
             "AddOffsetsToTxn of the same producer meanwhile are refused and change nothing.", topics=HELD,
             broker=CLASSIC, steps=[
        init_pid("a"),
        add_partitions("a", "{h}"),
        add_offsets("a"),
        txn_offset_commit("a", {("{t}", 0): 5}),
        end_txn("a", commit=True),
        fetch(stable=True, until={"groups.0.topics.0.partitions.0.committed_offset": 5}),
        txn_offset_commit("a", {("{t}", 0): 6, ("{t}", 1): 6}),
        add_offsets("a"),
        add_offsets("a", group="{h}"),
        fetch(stable=True),
        fetch(stable=True, groups=("{h}",)),
    ]),
    Scenario("offsets/add_offsets/wrong_producer",
             "AddOffsetsToTxn naming another producer id, an old epoch after a new instance fenced it, an "
             "epoch above the producer's, a transactional id never initialized; then the fenced producer's "
             "TxnOffsetCommit.", topics=T2, broker=CLASSIC, steps=[
        init_pid("a"),
        add_offsets("a", pid=ref("a.producer_id") + 1),
        add_offsets("a", epoch=ref("a.producer_epoch") + 1),
        add_offsets("a", txn="{tx2}"),
        init_pid("b"),
        add_offsets("a"),
        txn_offset_commit("a", {("{t}", 0): 5}),
        add_offsets("b"),
        fetch(stable=True),
    ]),
    Scenario("offsets/restart/replay_pending_newer_plain_and_delete",
             "What a clean restart rebuilds from __consumer_offsets: a pending transactional offset, a plain "
             "commit written after it to the same partition (newer: it stays when the transaction commits), and "
             "an OffsetDelete after another pending offset (its tombstone drops it: it never shows).", topics=T2,
             broker=CLASSIC, steps=[
        commit(offsets={("{t}", 0): 1}),
        init_pid("p"),
        add_offsets("p"),
        txn_offset_commit("p", {("{t}", 0): 9, ("{t}", 1): 9}),
        commit(offsets={("{t}", 0): 5}),
        offset_delete([("{t}", [1])]),
        fetch(stable=True),
        restart(),
        fetch(stable=True),
        fetch(stable=False),
        end_txn("p", commit=True),
        await_txn("CompleteCommit"),
        fetch(stable=True),
        fetch(None, stable=True),
    ]),
    Scenario("offsets/zombie/consumer_member_after_session_expiry",
             "A consumer group member removed by its session timeout (a zombie): its OffsetCommit, its "
             "TxnOffsetCommit with its member id and epoch and its OffsetFetch v9 are refused; a producer's "
             "TxnOffsetCommit without group metadata and a simple commit are accepted now that the group is "
             "empty.", topics={"t": Topic(partitions=4)}, broker=CG_SHORT, steps=[
        hb(save="a"),
        init_pid("p"),
        add_offsets("p"),
        raw_commit([("{t}", 0, 1, -1, "")], "{m1}", 1, v=9),
        call(69, 0, {"group_ids": ["{g}"], "include_authorized_operations": False},
             until={"groups.0.group_state": "Empty"}),
        raw_commit([("{t}", 0, 2, -1, "")], "{m1}", 1, v=9),
        raw_txn_commit("p", [("{t}", 0, 3, -1, "")], "{m1}", 1, v=4),
        fetch9([("{g}", "{m1}", 1, [("{t}", [0, 1])])]),
        raw_txn_commit("p", [("{t}", 1, 4, -1, "")], v=4),
        raw_commit([("{t}", 2, 5, -1, "")], v=9),
        end_txn("p", commit=True),
        await_txn("CompleteCommit"),
        fetch9([("{g}", None, -1, [("{t}", [0, 1, 2])])], stable=True),
    ]),
    Scenario("offsets/commit/internal_topic",
             "Offsets committed for __consumer_offsets and __transaction_state partitions, and fetched back.",
             topics=T2, broker=CLASSIC, steps=[
        raw_commit([("__consumer_offsets", 0, 1, -1, ""), ("__transaction_state", 0, 2, -1, "")]),
        fetch([("__consumer_offsets", [0]), ("__transaction_state", [0])]),
    ]),
    Scenario("offsets/fetch/v7_consumer_group_pending",
             "OffsetFetch v7 (one group, no member fields) of a consumer group with a member and a pending "
             "transactional offset: answered as an admin's, UNSTABLE_OFFSET_COMMIT with require_stable.",
             topics={"t": Topic(partitions=4)}, steps=[
        hb(save="a"),
        raw_commit([("{t}", 0, 1, -1, ""), ("{t}", 1, 2, -1, "")], "{m1}", 1, v=9),
        init_pid("p"),
        add_offsets("p"),
        txn_commit("p", {("{t}", 0): 10}, "{m1}", 1, v=3),
        fetch([("{t}", [0, 1])], stable=True, v=7),
        fetch(None, stable=True, v=7),
        fetch([("{t}", [0, 1])], stable=False, v=6),
        end_txn("p", commit=False),
        await_txn("CompleteAbort"),
        fetch([("{t}", [0, 1])], stable=True, v=7),
    ]),
    Scenario("offsets/retention/consumer_group_unsubscribed",
             "Offsets committed with a retention time (v2) to an empty group that a ConsumerGroupHeartbeat then "
             "makes a consumer group subscribed to {t}: {o}'s offset expires although the group has a member, "
             "{t}'s stays.", topics={"t": Topic(partitions=2), "o": Topic()}, broker=ONE_PART, steps=[
        raw_commit([("{t}", 0, 3, -1, ""), ("{o}", 0, 4, -1, "")], retention=1500, v=2),
        hb(save="a"),
        fetch9([("{g}", None, -1, [("{t}", [0]), ("{o}", [0])])],
               until={"groups.0.topics.1.partitions.0.committed_offset": -1}, timeout_s=20),
        call(69, 0, {"group_ids": ["{g}"], "include_authorized_operations": False}),
    ]),
    Scenario("offsets/mixed/delete_subscribed_by_either_protocol",
             "OffsetDelete on a consumer group whose classic member subscribes to {t} and whose consumer member "
             "to {o}: both topics are GROUP_SUBSCRIBED_TO_TOPIC, a third one's offsets go.",
             topics={"t": Topic(partitions=2), "o": Topic(), "q": Topic()}, broker=CLASSIC,
             steps=stable_one() + [
        hb("{m2}", topics=("{o}",), save="b"),
        commit(mid("j1"), 1, {("{t}", 0): 1, ("{o}", 0): 2, ("{q}", 0): 3}),
        offset_delete([("{t}", [0]), ("{o}", [0]), ("{q}", [0])]),
        fetch([("{t}", [0]), ("{o}", [0]), ("{q}", [0])]),
    ]),
    Scenario("offsets/txn/v2_member_checks",
             "Transactions V2: TxnOffsetCommit v5 from a consumer group member with a wrong epoch and from an "
             "unknown member are refused; whether the refused request still added the offsets partition to "
             "the transaction; the commit then shows only what was accepted.", topics={"t": Topic(partitions=4)},
             features=TV2, steps=[
        hb(save="a"),
        init2("p"),
        raw_txn_commit("p", [("{t}", 0, 5, -1, "")], "{m1}", 7, v=5),
        describe_txn(),
        raw_txn_commit("p", [("{t}", 0, 6, -1, "")], "{x}", 1, v=5),
        raw_txn_commit("p", [("{t}", 1, 7, -1, "")], "{m1}", 1, v=5),
        end2("p"),
        await_txn("CompleteCommit"),
        fetch9([("{g}", "{m1}", 1, [("{t}", [0, 1])])], stable=True),
    ]),
]
