"""Idempotent producers on one partition: Kafka's ProducerStateManager / ProducerAppendInfo checks
(sequence, epoch, the last five batches kept for duplicates), producer-id expiry, restarts, and the
per-record errors of Produce (record_errors / error_message, v8+)."""
from ..dsl import (Differs, Scenario, Topic, add_partitions, await_no_producers, await_txn, batch, describe_producers,
                   end_txn, fetch, idem_produce, init_pid, list_offsets, produce, produce_parts, ref, restart)

HOUR = 3_600_000
# producer ids no InitProducerId ever hands out (Kafka allocates from 0 in blocks of 1000)
UNALLOCATED_PID = 7_000_000_001


def idem(save: str = "a"):
    """InitProducerId for an idempotent producer (no transactional id)."""
    return init_pid(save, txn=None)


def seq_batches(n: int, size: int = 2, who: str = "a"):
    """``n`` in-order batches of ``size`` records each: sequences 0, size, 2*size, ..."""
    return [idem_produce(who, [f"b{i}r{j}" for j in range(size)], seq=i * size, label=f"batch {i}")
            for i in range(n)]


SCENARIOS = [
    Scenario("idempotence/in_order", "In-order batches of one and several records: offsets, last sequence.", steps=[
        idem(),
        idem_produce("a", ["x", "y"], seq=0),
        idem_produce("a", ["z"], seq=2),
        describe_producers(),
        fetch(isolation=0),
    ]),
    Scenario("idempotence/sequence_gap", "A batch whose first sequence skips one: OUT_OF_ORDER_SEQUENCE_NUMBER; "
             "the state is unchanged, so the missing sequence is still accepted next.", steps=[
        idem(),
        idem_produce("a", ["x"], seq=0),
        idem_produce("a", ["gap"], seq=2),
        describe_producers(),
        idem_produce("a", ["y"], seq=1),
        idem_produce("a", ["z"], seq=2),
        fetch(isolation=0),
    ]),
    Scenario("idempotence/gap_then_retry_last", "After a rejected gap, a retry of the last accepted batch is "
             "still a duplicate.", steps=[
        idem(),
        idem_produce("a", ["x", "y"], seq=0),
        idem_produce("a", ["gap"], seq=7),
        idem_produce("a", ["x", "y"], seq=0),
        list_offsets(isolation=0),
    ]),
    Scenario("idempotence/new_producer_nonzero_sequence", "A producer's first batch on a partition may start at "
             "any sequence (Kafka no longer answers UNKNOWN_PRODUCER_ID); the next must follow it.", steps=[
        idem(),
        idem_produce("a", ["x"], seq=7),
        idem_produce("a", ["y"], seq=9),
        idem_produce("a", ["y"], seq=8),
        idem_produce("a", ["y"], seq=8),
        describe_producers(),
    ]),
    Scenario("idempotence/unallocated_producer_id", "A producer id no InitProducerId handed out, at a non-zero "
             "epoch and sequence: the partition accepts it (it does not check ids).", steps=[
        idem_produce(None, ["x"], seq=5, pid=UNALLOCATED_PID, epoch=3),
        idem_produce(None, ["y"], seq=6, pid=UNALLOCATED_PID, epoch=3),
        idem_produce(None, ["z"], seq=0, pid=UNALLOCATED_PID, epoch=2),
        describe_producers(),
    ]),
]

# duplicates: Kafka keeps the metadata of the last five batches of each producer
for nth in range(1, 6):
    SCENARIOS.append(Scenario(
        f"idempotence/duplicate_last_{nth}",
        f"Seven batches of two records; a retry of the batch {nth} from the end is a duplicate: the original "
        f"offsets, nothing appended; the next sequence is still accepted.", steps=[
            idem(),
            *seq_batches(7),
            idem_produce("a", [f"b{7 - nth}r0", f"b{7 - nth}r1"], seq=(7 - nth) * 2, label="retry"),
            list_offsets(isolation=0),
            idem_produce("a", ["next"], seq=14),
            describe_producers(),
        ]))

SCENARIOS += [
    Scenario("idempotence/duplicate_sixth_last", "Seven batches; the sixth from the end is no longer remembered: "
             "its retry is out of order.", steps=[
        idem(),
        *seq_batches(7),
        idem_produce("a", ["b1r0", "b1r1"], seq=2, label="retry"),
        list_offsets(isolation=0),
        describe_producers(),
    ]),
    Scenario("idempotence/duplicate_first_of_six", "Six batches; the first one is no longer remembered.", steps=[
        idem(),
        *seq_batches(6),
        idem_produce("a", ["b0r0", "b0r1"], seq=0, label="retry"),
        list_offsets(isolation=0),
    ]),
    Scenario("idempotence/same_first_sequence_other_length", "A batch with a remembered first sequence but a "
             "different last sequence is not a duplicate.", steps=[
        idem(),
        idem_produce("a", 3, seq=0),
        idem_produce("a", 3, seq=3),
        idem_produce("a", 2, seq=3),
        idem_produce("a", 4, seq=3),
        idem_produce("a", 3, seq=3),
        list_offsets(isolation=0),
    ]),
    Scenario("idempotence/overlapping_range", "A batch that starts inside the last batch's range, one that "
             "starts at its last sequence: out of order.", steps=[
        idem(),
        idem_produce("a", 3, seq=0),
        idem_produce("a", 3, seq=1),
        idem_produce("a", 3, seq=2),
        idem_produce("a", 1, seq=3),
        list_offsets(isolation=0),
    ]),
    Scenario("idempotence/multi_record_ranges", "Batches of 3, 1 and 4 records: sequence ranges 0-2, 3, 4-7; "
             "duplicates of each, then the next sequence.", steps=[
        idem(),
        idem_produce("a", 3, seq=0),
        idem_produce("a", 1, seq=3),
        idem_produce("a", 4, seq=4),
        idem_produce("a", 1, seq=3, label="retry of the one-record batch"),
        idem_produce("a", 3, seq=0, label="retry of the first batch"),
        idem_produce("a", 4, seq=4, label="retry of the last batch"),
        idem_produce("a", 2, seq=8),
        describe_producers(),
        fetch(isolation=0),
    ]),
    Scenario("idempotence/epoch_bump_sequence_zero", "A higher epoch starting at sequence 0 is accepted; the old "
             "epoch is then stale (INVALID_PRODUCER_EPOCH), even for its next sequence.", steps=[
        idem(),
        idem_produce("a", ["x"], seq=0),
        idem_produce("a", ["y"], seq=1),
        idem_produce("a", ["z"], seq=0, epoch=ref("a.producer_epoch") + 1),
        idem_produce("a", ["old"], seq=2),
        idem_produce("a", ["z2"], seq=1, epoch=ref("a.producer_epoch") + 1),
        describe_producers(),
    ]),
    Scenario("idempotence/epoch_bump_nonzero_sequence", "A higher epoch that does not start at sequence 0: "
             "OUT_OF_ORDER_SEQUENCE_NUMBER; the old epoch still works after it.", steps=[
        idem(),
        idem_produce("a", ["x"], seq=0),
        idem_produce("a", ["y"], seq=1, epoch=ref("a.producer_epoch") + 1),
        idem_produce("a", ["y"], seq=2, epoch=ref("a.producer_epoch") + 1),
        idem_produce("a", ["y"], seq=1),
        idem_produce("a", ["z"], seq=0, epoch=ref("a.producer_epoch") + 5),
        describe_producers(),
    ]),
    Scenario("idempotence/stale_epoch_retry", "After an epoch bump, a retry of a batch written under the old "
             "epoch is not a duplicate: INVALID_PRODUCER_EPOCH.", steps=[
        idem(),
        idem_produce("a", ["x"], seq=0),
        idem_produce("a", ["z"], seq=0, epoch=ref("a.producer_epoch") + 1),
        idem_produce("a", ["x"], seq=0),
        idem_produce("a", ["z"], seq=0, epoch=ref("a.producer_epoch") + 1, label="retry under the new epoch"),
        list_offsets(isolation=0),
    ]),
    Scenario("idempotence/first_batch_nonzero_epoch", "A new producer's first batch at epoch 5; then epoch 3: "
             "INVALID_PRODUCER_EPOCH.", steps=[
        idem_produce(None, ["x"], seq=0, pid=UNALLOCATED_PID + 1, epoch=5),
        idem_produce(None, ["y"], seq=1, pid=UNALLOCATED_PID + 1, epoch=3),
        idem_produce(None, ["y"], seq=0, pid=UNALLOCATED_PID + 1, epoch=3),
        describe_producers(),
    ]),
    Scenario("idempotence/sequence_wraparound", "After sequence 2147483647 the next sequence is 0.", steps=[
        idem(),
        idem_produce("a", ["x", "y"], seq=2147483646),
        idem_produce("a", ["z"], seq=0),
        idem_produce("a", ["z"], seq=0, label="retry"),
        describe_producers(),
    ]),
    Scenario("idempotence/sequence_wraps_inside_batch", "A batch whose sequence range wraps past 2147483647: its "
             "last sequence is 1.", steps=[
        idem(),
        idem_produce("a", 3, seq=2147483647),
        describe_producers(),
        idem_produce("a", ["next"], seq=2),
        idem_produce("a", 3, seq=2147483647, label="retry of the wrapping batch"),
        list_offsets(isolation=0),
    ]),
    Scenario("idempotence/produce_versions", "In order, duplicate and gap at Produce v3, v7, v9, v11 and v12.",
             steps=[
        idem(),
        *[step for i, ver in enumerate((3, 7, 9, 11, 12)) for step in (
            idem_produce("a", [f"v{ver}"], seq=i, v=ver),
            idem_produce("a", [f"v{ver}"], seq=i, v=ver, label=f"duplicate v{ver}"),
            idem_produce("a", [f"v{ver}"], seq=i + 5, v=ver, label=f"gap v{ver}"),
        )],
        fetch(isolation=0),
    ]),
    Scenario("idempotence/no_producer_id", "Batches without a producer id are never deduplicated.", steps=[
        idem_produce(None, ["x"]),
        idem_produce(None, ["x"]),
        describe_producers(),
        list_offsets(isolation=0),
    ]),
    Scenario("idempotence/producer_id_without_sequence", "A batch with a producer id but sequence -1: "
             "INVALID_RECORD.", steps=[
        idem(),
        idem_produce("a", ["x"], seq=-1),
        idem_produce("a", ["x"], seq=0),
        describe_producers(),
    ]),
    Scenario("idempotence/two_partitions", "Sequences are per partition; both partitions in one request.",
             topics={"t": Topic(partitions=2)}, steps=[
        idem(),
        produce_parts([("{t}", 0, batch("a", ["p0"], 0)), ("{t}", 1, batch("a", ["p1"], 0))]),
        produce_parts([("{t}", 0, batch("a", ["p0"], 2)), ("{t}", 1, batch("a", ["p1"], 1))]),
        produce_parts([("{t}", 0, batch("a", ["p0"], 0)), ("{t}", 1, batch("a", ["p1"], 1))]),
        describe_producers(partition=0),
        describe_producers(partition=1),
    ]),
]

# ---------------------------------------------------------------- per-record errors (record_errors, v8+)
COMPACTED = {"t": Topic(configs={"cleanup.policy": "compact"})}

SCENARIOS += [
    Scenario("idempotence/keyless_compacted_v7", "A keyless record to a compacted topic at Produce v7 (no "
             "record_errors field).", topics=COMPACTED, steps=[
        idem(),
        idem_produce("a", ["x"], keys=[None], v=7),
        list_offsets(isolation=0),
    ]),
    Scenario("idempotence/keyless_compacted_v8", "One keyless record among keyed ones at Produce v8: "
             "INVALID_RECORD, record_errors names its index; the sequence is not consumed.", topics=COMPACTED,
             steps=[
        idem(),
        idem_produce("a", ["x", "y", "z"], keys=["k1", None, "k3"], v=8),
        idem_produce("a", ["x", "y", "z"], keys=["k1", "k2", "k3"], v=8),
        describe_producers(),
    ]),
    Scenario("idempotence/keyless_compacted_all", "Every record keyless (Produce v9): one record error per "
             "record.", topics=COMPACTED, steps=[
        idem(),
        idem_produce("a", ["x", "y", "z"], keys=[None, None, None]),
        idem_produce("a", ["x"], keys=["k"], seq=0),
        fetch(isolation=0),
    ]),
    Scenario("idempotence/keyless_compacted_non_idempotent", "Keyless to a compacted topic without a producer "
             "id, at Produce v12.", topics=COMPACTED, steps=[
        idem_produce(None, ["x", "y"], keys=["k", None], v=12),
        list_offsets(isolation=0),
    ]),
    Scenario("idempotence/timestamp_after_max", "A record two hours in the future (Kafka 4's default "
             "message.timestamp.after.max.ms is one hour): INVALID_TIMESTAMP with its index.", steps=[
        idem(),
        idem_produce("a", ["now", "future"], timestamps=[0, 2 * HOUR]),
        idem_produce("a", ["now"], seq=0),
        list_offsets(isolation=0),
    ]),
    Scenario("idempotence/timestamp_before_max", "message.timestamp.before.max.ms on the topic: a record two "
             "hours old is refused; an hour-old one too; a recent one is accepted.",
             topics={"t": Topic(configs={"message.timestamp.before.max.ms": str(HOUR // 2)})}, steps=[
        idem(),
        idem_produce("a", ["old", "now", "older"], timestamps=[-HOUR, 0, -2 * HOUR], v=10),
        idem_produce("a", ["now"], seq=0, timestamps=[-1000]),
        list_offsets(isolation=0),
    ]),
    Scenario("idempotence/log_append_time_topic", "message.timestamp.type=LogAppendTime: the produce answer "
             "carries the append time; fetched batches have timestamp type 1.",
             topics={"t": Topic(configs={"message.timestamp.type": "LogAppendTime"})}, steps=[
        idem(),
        idem_produce("a", ["x"], timestamps=[-2 * HOUR]),
        idem_produce("a", ["x"], label="duplicate"),
        fetch(isolation=0),
    ]),
]

# ---------------------------------------------------------------- producer-id expiry
# Kafka expires a producer when now - (max timestamp of its last batch) >= producer.id.expiration.ms:
# batches stamped two hours ago expire at the next check; batches stamped now do not within the run.
EXPIRY = {"producer.id.expiration.ms": "600000", "producer.id.expiration.check.interval.ms": "200"}

SCENARIOS += [
    Scenario("idempotence/expiry_then_next_sequence", "The producer's state expired: its next sequence is "
             "accepted as a new producer's (no UNKNOWN_PRODUCER_ID).", broker=EXPIRY, steps=[
        idem(),
        idem_produce("a", ["x"], seq=0, timestamps=[-2 * HOUR]),
        idem_produce("a", ["y"], seq=1, timestamps=[-2 * HOUR]),
        await_no_producers(),
        idem_produce("a", ["z"], seq=2),
        describe_producers(),
    ]),
    Scenario("idempotence/expiry_then_retry_last", "After expiry a retry of the last batch is no longer "
             "recognised: it is appended again.", broker=EXPIRY, steps=[
        idem(),
        idem_produce("a", ["x"], seq=0, timestamps=[-2 * HOUR]),
        idem_produce("a", ["y"], seq=1, timestamps=[-2 * HOUR]),
        await_no_producers(),
        idem_produce("a", ["y"], seq=1, timestamps=[-2 * HOUR]),
        fetch(isolation=0),
    ]),
    Scenario("idempotence/expiry_then_gap_and_old_epoch", "After expiry, any sequence and a lower epoch are "
             "accepted.", broker=EXPIRY, steps=[
        idem(),
        idem_produce("a", ["x"], seq=0, epoch=ref("a.producer_epoch") + 2, timestamps=[-2 * HOUR]),
        await_no_producers(),
        idem_produce("a", ["y"], seq=40),
        idem_produce("a", ["y"], seq=0, epoch=ref("a.producer_epoch") + 1),
        describe_producers(),
    ]),
    Scenario("idempotence/expiry_spares_open_transaction", "A producer with an open transaction never expires, "
             "however old its batches; an idle idempotent one beside it does.", broker=EXPIRY, steps=[
        idem("i"),
        init_pid("a"),
        add_partitions("a"),
        idem_produce("i", ["idem"], seq=0, timestamps=[-2 * HOUR]),
        produce(batch("a", ["txn"], 0, transactional=True, timestamps=[-2 * HOUR]), txn="{tx}"),
        describe_producers(until={"topics.0.partitions.0.active_producers.1": "<absent>"}),
        end_txn("a", commit=False),
        await_txn("CompleteAbort"),
        describe_producers(),
    ]),
]

# ---------------------------------------------------------------- restarts
SCENARIOS += [
    Scenario("idempotence/restart_clean_retries", "Clean restart after three batches: a retry of the last batch "
             "is a duplicate; of the one before it, of a gap, then the next sequence.", steps=[
        idem(),
        *seq_batches(3),
        restart(),
        idem_produce("a", ["b2r0", "b2r1"], seq=4, label="retry of the last batch"),
        idem_produce("a", ["b1r0", "b1r1"], seq=2, label="retry of the batch before"),
        idem_produce("a", ["gap"], seq=7),
        idem_produce("a", ["next"], seq=6),
        describe_producers(),
        fetch(isolation=0),
    ]),
    Scenario("idempotence/restart_kill_retries", "kill -9 after three batches: a retry of the last batch is a "
             "duplicate; of the one before it, of a gap, then the next sequence.", steps=[
        idem(),
        *seq_batches(3),
        restart(kill=True),
        idem_produce("a", ["b2r0", "b2r1"], seq=4, label="retry of the last batch"),
        idem_produce("a", ["b1r0", "b1r1"], seq=2, label="retry of the batch before"),
        idem_produce("a", ["gap"], seq=7),
        idem_produce("a", ["next"], seq=6),
        describe_producers(),
        fetch(isolation=0),
    ], differs={
        # after recovery Kafka keeps one batch per producer (its snapshot's); minikafka keeps the
        # last five, as the other replicas of a replicated cluster do
        7: Differs("producer-state-survives-restart", {
            "responses[0].partition_responses[0].error_code": 0,
            "responses[0].partition_responses[0].base_offset": 2,
            "responses[0].partition_responses[0].log_append_time_ms": "<ts>"}),
    }),
    Scenario("idempotence/restart_kill_epoch_kept", "kill -9 after an epoch bump: the old epoch is still stale, "
             "the new epoch's sequence continues.", steps=[
        idem(),
        idem_produce("a", ["x"], seq=0),
        idem_produce("a", ["y"], seq=0, epoch=ref("a.producer_epoch") + 1),
        restart(kill=True),
        idem_produce("a", ["old"], seq=1),
        idem_produce("a", ["y"], seq=0, epoch=ref("a.producer_epoch") + 1, label="retry"),
        idem_produce("a", ["z"], seq=1, epoch=ref("a.producer_epoch") + 1),
        describe_producers(),
    ]),
]
