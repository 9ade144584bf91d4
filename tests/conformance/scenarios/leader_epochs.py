"""Leader epochs across broker restarts.

A one-node KRaft Kafka fences the broker on every restart (the partition loses its
leader: epoch + 1) and elects it again (epoch + 1): every partition's leader epoch
grows by 2 per restart, clean or kill -9. The epoch shows in Metadata, ListOffsets,
OffsetForLeaderEpoch (answered from the leader epoch cache), the batches written
after the restart, the current_leader_epoch checks of Fetch / ListOffsets /
OffsetForLeaderEpoch, and the coordinator epoch of transaction markers.
"""
from protocol.schema import ZERO_UUID

from ..dsl import (Scenario, add_partitions, await_txn, batch, call, describe_producers, end_txn, init_pid,
                   list_offsets, produce, ref, restart, txn_produce)


def epoch_end(leader_epoch: int, current: int = -1, topic: str = "{t}", partition: int = 0, v: int = 4, **kw):
    """OffsetForLeaderEpoch for one partition (as a consumer: replica_id -1)."""
    return call(23, v, {"replica_id": -1, "topics": [{"topic": topic, "partitions": [
        {"partition": partition, "current_leader_epoch": current, "leader_epoch": leader_epoch}]}]}, **kw)


def metadata(*topics: str, v: int = 12, **kw):
    return call(3, v, {"topics": [{"topic_id": ZERO_UUID, "name": t} for t in topics],
                       "allow_auto_topic_creation": False, "include_topic_authorized_operations": False}, **kw)


def fetch_at(offset, current: int = -1, last_fetched: int = -1, isolation: int = 0, v: int = 12,
             topic: str = "{t}", topic_id=None, **kw):
    """A consumer's Fetch with its current_leader_epoch and last_fetched_epoch (v12+);
    from v13 the topic is named by ``topic_id``."""
    part = {"partition": 0, "current_leader_epoch": current, "fetch_offset": offset, "last_fetched_epoch": last_fetched,
            "log_start_offset": -1, "partition_max_bytes": 1 << 20}
    t = {"topic_id": topic_id, "partitions": [part]} if v >= 13 else {"topic": topic, "partitions": [part]}
    return call(1, v, {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20,
                       "isolation_level": isolation, "session_id": 0, "session_epoch": -1, "topics": [t],
                       "forgotten_topics_data": [], "rack_id": ""}, **kw)


def list_offsets_at(timestamp: int, current: int = -1, partition: int = 0, **kw):
    return call(2, 7, {"replica_id": -1, "isolation_level": 0, "topics": [{"name": "{t}", "partitions": [
        {"partition_index": partition, "timestamp": timestamp, "current_leader_epoch": current}]}]}, **kw)


def create_topic_step(topic: str, partitions: int = 1, **kw):
    return call(19, 4, {"topics": [{"name": topic, "num_partitions": partitions, "replication_factor": 1,
                                    "assignments": [], "configs": []}], "timeout_ms": 30000,
                        "validate_only": False}, **kw)


def served(topic: str):
    """ListOffsets until the new partition answers (Kafka lists a leader a moment before it serves)."""
    return call(2, 7, {"replica_id": -1, "isolation_level": 0, "topics": [{"name": topic, "partitions": [
        {"partition_index": 0, "timestamp": -1, "current_leader_epoch": -1}]}]}, retry_while=(3, 6),
        label="wait until the new partition is served")


def plain(values, **kw):
    return produce(batch(None, values), **kw)


def probe(label: str):
    """Every epoch answer of {t}: Metadata, ListOffsets earliest/latest, OffsetForLeaderEpoch 0..5 and -1."""
    return [metadata("{t}", label=label),
            list_offsets_at(-2), list_offsets_at(-1)] + [epoch_end(e) for e in (0, 1, 2, 3, 4, 5, -1)]


SCENARIOS = [
    Scenario("leader_epochs/epoch_cache_across_restarts",
             "Data in epoch 0, a restart (epoch 2, data), a kill -9 with no data written in epoch 4 "
             "(the next start drops its cache entry), a clean restart (epoch 6): OffsetForLeaderEpoch "
             "answers from the cache, ListOffsets and Metadata report the epochs, batches carry them.",
             steps=[
        plain(["a", "b"]),
        *probe("fresh topic: epoch 0"),
        restart(),
        *probe("after a clean restart: epoch 2, no data in it yet"),
        plain(["c"]),
        restart(kill=True),
        *probe("after kill -9: epoch 4"),
        restart(),
        *probe("after a clean restart with no data written in epoch 4: epoch 6"),
        plain(["d", "e"]),
        epoch_end(4), epoch_end(6), epoch_end(7),
        list_offsets_at(-3),
        list_offsets_at(0),
        fetch_at(0),
    ]),
    Scenario("leader_epochs/empty_log_restarts",
             "A topic that never holds data, restarted twice: the cache keeps only the newest epoch "
             "(each new entry at offset 0 replaces the one before).",
             steps=[
        restart(),
        restart(kill=True),
        *probe("empty log after two restarts: epoch 4"),
        plain(["a"]),
        epoch_end(0), epoch_end(4),
        fetch_at(0),
    ]),
    Scenario("leader_epochs/current_leader_epoch_checks",
             "After a restart (epoch 2) a client that still believes epoch 0 is fenced "
             "(FENCED_LEADER_EPOCH), one ahead gets UNKNOWN_LEADER_EPOCH; -1 means no check. Fetch "
             "ignores any negative epoch, ListOffsets and OffsetForLeaderEpoch only -1.",
             steps=[
        plain(["a"]),
        fetch_at(0, current=0, label="fresh topic: epoch 0 matches"),
        fetch_at(0, current=1),
        restart(),
        plain(["b"]),
        metadata("{t}", v=12, save="m"),
        fetch_at(0, current=0),
        fetch_at(0, current=1),
        fetch_at(0, current=2),
        fetch_at(0, current=3),
        fetch_at(0, current=-2),
        fetch_at(0, current=0, v=16, topic_id=ref("m.topics.0.topic_id"), label="v16: current_leader and node_endpoints"),
        fetch_at(0, current=3, v=16, topic_id=ref("m.topics.0.topic_id")),
        fetch_at(0, current=2, v=16, topic_id=ref("m.topics.0.topic_id")),
        list_offsets_at(-1, current=0),
        list_offsets_at(-1, current=2),
        list_offsets_at(-1, current=3),
        list_offsets_at(-1, current=-2),
        list_offsets_at(-2, current=0),
        epoch_end(0, current=0),
        epoch_end(0, current=2),
        epoch_end(0, current=3),
        epoch_end(0, current=-2),
        epoch_end(-2),
        epoch_end(-7, current=2),
    ]),
    Scenario("leader_epochs/fetch_last_fetched_epoch",
             "Fetch with last_fetched_epoch (KIP-595/KIP-320 style divergence check) after restarts: "
             "an offset beyond the end of the last fetched epoch, or an epoch the leader never had, "
             "answers diverging_epoch; an epoch beyond the leader's is OFFSET_OUT_OF_RANGE.",
             steps=[
        plain(["a", "b"]),
        restart(),
        plain(["c"]),
        restart(kill=True),
        plain(["d"]),
        fetch_at(2, last_fetched=0, label="offset 2 is the end of epoch 0: no divergence"),
        fetch_at(3, last_fetched=0, label="offset 3 is beyond the end of epoch 0"),
        fetch_at(3, last_fetched=1),
        fetch_at(3, last_fetched=2),
        fetch_at(3, last_fetched=3),
        fetch_at(4, last_fetched=4),
        fetch_at(4, last_fetched=5),
        fetch_at(3, last_fetched=0, isolation=1),
        fetch_at(9, last_fetched=2),
        fetch_at(9, last_fetched=4),
        fetch_at(3, current=2, last_fetched=0),
    ]),
    Scenario("leader_epochs/delete_records_and_restart",
             "DeleteRecords moves the log start offset past epoch 0: the cache's first entry starts at "
             "the log start offset (Kafka's truncateFromStart), also after a clean restart.",
             steps=[
        plain(["a", "b"]),
        plain(["c"]),
        restart(),
        plain(["d", "e"]),
        call(21, 2, {"topics": [{"name": "{t}", "partitions": [{"partition_index": 0, "offset": 4}]}],
                     "timeout_ms": 30000}),
        list_offsets_at(-2),
        epoch_end(0), epoch_end(1), epoch_end(2),
        # clean: after a kill -9 Kafka may have lost the log start offset (it checkpoints it every 60 s)
        restart(),
        list_offsets_at(-2),
        epoch_end(0), epoch_end(2), epoch_end(4),
        fetch_at(4),
    ]),
    Scenario("leader_epochs/new_topic_and_partition_after_restart",
             "A topic created after a restart starts at leader epoch 0 while older topics are at 2; a "
             "partition added by CreatePartitions starts at 0 too.",
             steps=[
        restart(),
        create_topic_step("{u}"),
        served("{u}"),
        metadata("{t}", "{u}"),
        call(37, 3, {"topics": [{"name": "{t}", "count": 2, "assignments": None}], "timeout_ms": 30000,
                     "validate_only": False}),
        call(2, 7, {"replica_id": -1, "isolation_level": 0, "topics": [{"name": "{t}", "partitions": [
            {"partition_index": 1, "timestamp": -1, "current_leader_epoch": -1}]}]}, retry_while=(3, 6),
            label="wait until the new partition is served"),
        # per partition (Kafka's Metadata lists a topic's partitions in no fixed order)
        list_offsets_at(-1, partition=0),
        list_offsets_at(-1, partition=1),
        produce(batch(None, ["x"]), topic="{u}"),
        epoch_end(0, topic="{u}"),
        epoch_end(0, partition=1),
        epoch_end(2),
    ]),
    Scenario("leader_epochs/coordinator_epoch_after_two_restarts",
             "The transaction coordinator's epoch is its __transaction_state partition's leader epoch: "
             "markers written after two restarts carry coordinator epoch 4; a transaction left open by "
             "a kill -9 is aborted with the new epoch.",
             steps=[
        init_pid("a"),
        add_partitions("a"),
        txn_produce("a", ["x"]),
        end_txn("a"),
        await_txn("CompleteCommit"),
        restart(),
        add_partitions("a"),
        txn_produce("a", ["y"], seq=1),
        restart(kill=True),
        end_txn("a", commit=False),
        await_txn("CompleteAbort"),
        describe_producers(),
        add_partitions("a"),
        txn_produce("a", ["z"], seq=2),
        end_txn("a"),
        await_txn("CompleteCommit"),
        describe_producers(),
        list_offsets(),
        fetch_at(0),
    ]),
]
