"""Transactional Produce on the partition: verification with the coordinator (KIP-890 part 1, TV1),
stale epochs, non-transactional and control batches from a transactional producer, sequences
across transactions, restarts with a transaction open."""
from ..dsl import (Scenario, Topic, add_partitions, await_txn, batch, describe_producers, describe_txn, end_txn,
                   fetch, idem_produce, init_pid, list_offsets, produce, produce_parts, ref, restart, txn_produce)


def open_txn(values=("x",), who: str = "a"):
    """InitProducerId, AddPartitionsToTxn({t}-0), one transactional batch at sequence 0."""
    return [init_pid(who), add_partitions(who), txn_produce(who, list(values))]


def control(who: str, commit: bool = True):
    return batch(who, [], 0, transactional=True, control="COMMIT" if commit else "ABORT")


SCENARIOS = [
    Scenario(f"txn_produce/without_add_partitions_v{v}",
             f"Produce v{v} of a transactional batch to a partition never added to the transaction: the "
             f"coordinator says TRANSACTION_ABORTABLE, which Produce v10 and older see as INVALID_TXN_STATE. "
             f"Nothing is written; the sequence is not consumed.", steps=[
        init_pid("a"),
        txn_produce("a", ["x"], v=v),
        describe_producers(),
        list_offsets(isolation=0),
        describe_txn(),
        add_partitions("a"),
        txn_produce("a", ["x"], v=v),
        describe_producers(),
    ])
    for v in (3, 7, 9, 10, 11, 12)
]

SCENARIOS += [
    Scenario("txn_produce/unknown_transactional_id", "A transactional batch naming a transactional id the "
             "coordinator does not know: INVALID_PRODUCER_ID_MAPPING.", steps=[
        init_pid("a"),
        add_partitions("a"),
        txn_produce("a", ["x"], txn="{tx2}"),
        list_offsets(isolation=0),
    ]),
    Scenario("txn_produce/producer_id_mismatch", "A transactional batch whose producer id is not the one the "
             "transactional id maps to: INVALID_PRODUCER_ID_MAPPING.", steps=[
        init_pid("a"),
        init_pid("b", txn="{tx2}"),
        add_partitions("a"),
        add_partitions("b", txn="{tx2}"),
        produce(batch("b", ["x"], 0, transactional=True), txn="{tx}"),
        describe_producers(),
    ]),
    Scenario("txn_produce/stale_epoch_partition_added_by_newer", "A newer instance (epoch + 1) added the "
             "partition; the fenced instance's batch to it is refused (INVALID_PRODUCER_EPOCH) and opens "
             "nothing; the newer instance then writes and commits.", steps=[
        init_pid("a"),
        init_pid("b"),
        add_partitions("b"),
        txn_produce("a", ["zombie"]),
        describe_producers(),
        fetch(),
        txn_produce("b", ["x"]),
        end_txn("b"),
        await_txn("CompleteCommit"),
        fetch(),
    ]),
    Scenario("txn_produce/stale_epoch_after_newer_wrote", "The fenced instance writes after the newer one "
             "did: INVALID_PRODUCER_EPOCH for its next sequence and for sequence 0.", steps=[
        init_pid("a"),
        init_pid("b"),
        add_partitions("b"),
        txn_produce("b", ["x"]),
        txn_produce("a", ["zombie"], seq=1),
        txn_produce("a", ["zombie"], seq=0),
        describe_producers(),
        fetch(isolation=0),
    ]),
    Scenario("txn_produce/zombie_after_fencing_init", "InitProducerId by a new instance aborts the open "
             "transaction (answered once the abort completed: epoch + 2, Empty); the old instance's next batch "
             "is refused.", steps=[
        *open_txn(),
        init_pid("b", retry_while=(51,)),
        describe_txn(),
        txn_produce("a", ["zombie"], seq=1),
        describe_producers(),
        fetch(isolation=0),
        fetch(),
    ]),
    Scenario("txn_produce/non_transactional_during_txn", "A non-transactional batch from a producer with an "
             "open transaction on the partition: INVALID_TXN_STATE, with or without the transactional id.",
             steps=[
        *open_txn(),
        idem_produce("a", ["plain"], seq=1),
        idem_produce("a", ["plain"], seq=1, txn="{tx}"),
        describe_producers(),
        txn_produce("a", ["y"], seq=1),
        fetch(isolation=0),
    ]),
    Scenario("txn_produce/non_transactional_other_partition_during_txn", "A transactional producer's "
             "non-transactional batch to a partition outside its open transaction.",
             topics={"t": Topic(partitions=2)}, steps=[
        *open_txn(),
        idem_produce("a", ["plain"], seq=0, partition=1),
        describe_producers(partition=1),
        fetch(partition=1),
    ]),
    Scenario("txn_produce/non_transactional_around_txn", "A transactional producer's non-transactional batches "
             "before and after a transaction share its sequence.", steps=[
        init_pid("a"),
        idem_produce("a", ["before"], seq=0),
        add_partitions("a"),
        txn_produce("a", ["in"], seq=1),
        end_txn("a"),
        await_txn("CompleteCommit"),
        idem_produce("a", ["after"], seq=2),
        describe_producers(),
        fetch(),
    ]),
    Scenario("txn_produce/control_batch_from_client", "A client sends a COMMIT control batch: refused "
             "(INVALID_RECORD) with the transactional id, TRANSACTIONAL_ID_AUTHORIZATION_FAILED without it.",
             steps=[
        *open_txn(),
        produce(control("a"), txn="{tx}"),
        produce(control("a", commit=False), txn=None),
        fetch(),
        describe_producers(),
    ]),
    Scenario("txn_produce/after_commit", "KIP-890 part 1: after the commit completed, a batch sent without "
             "AddPartitionsToTxn is refused and opens no new transaction.", steps=[
        *open_txn(),
        end_txn("a"),
        await_txn("CompleteCommit"),
        txn_produce("a", ["late"], seq=1, v=9),
        txn_produce("a", ["late"], seq=1, v=11),
        describe_producers(),
        fetch(),
        list_offsets(),
    ]),
    Scenario("txn_produce/after_commit_v12", "After the commit completed, Produce v12 of a transactional batch "
             "without AddPartitionsToTxn: the broker adds the partition to the transaction itself (KIP-890 "
             "part 2), even with transaction.version=1 finalized.", steps=[
        *open_txn(),
        end_txn("a"),
        await_txn("CompleteCommit"),
        txn_produce("a", ["late"], seq=1, v=12),
        describe_txn(),
        describe_producers(),
        fetch(),
        end_txn("a"),
        await_txn("CompleteCommit"),
        fetch(),
    ]),
    Scenario("txn_produce/after_abort", "After the abort completed, a batch sent without AddPartitionsToTxn is "
             "refused; a new transaction then continues the sequence.", steps=[
        *open_txn(),
        end_txn("a", commit=False),
        await_txn("CompleteAbort"),
        txn_produce("a", ["late"], seq=1),
        describe_producers(),
        add_partitions("a"),
        txn_produce("a", ["next"], seq=1),
        fetch(),
    ]),
    Scenario("txn_produce/retry_after_commit", "A retry of the last batch of a committed transaction: "
             "verification refuses it before the duplicate check.", steps=[
        *open_txn(),
        end_txn("a"),
        await_txn("CompleteCommit"),
        txn_produce("a", ["x"], seq=0),
        list_offsets(isolation=0),
    ]),
    Scenario("txn_produce/late_retry_then_next_transaction", "A late retry of the last batch of a committed "
             "transaction, refused by verification, then the producer's next transaction on the partition: "
             "what its next sequence and the duplicate of the retried batch answer, and what read_committed "
             "sees.", steps=[
        *open_txn(),
        end_txn("a"),
        await_txn("CompleteCommit"),
        txn_produce("a", ["x"], seq=0),
        add_partitions("a"),
        txn_produce("a", ["next"], seq=1),
        txn_produce("a", ["x"], seq=0),
        describe_producers(),
        end_txn("a"),
        await_txn("CompleteCommit"),
        fetch(),
        list_offsets(),
    ]),
    Scenario("txn_produce/late_retry_after_abort", "A late retry of the last batch of an aborted transaction: "
             "refused by verification, nothing of it visible to read_committed, the partition's LSO not "
             "held.", steps=[
        *open_txn(),
        end_txn("a", commit=False),
        await_txn("CompleteAbort"),
        txn_produce("a", ["x"], seq=0),
        describe_producers(),
        fetch(),
        list_offsets(),
    ]),
    Scenario("txn_produce/during_prepare_commit", "A batch while the transaction is PrepareCommit (a partition's "
             "marker is held): CONCURRENT_TRANSACTIONS from verification becomes NOT_ENOUGH_REPLICAS.",
             topics={"t": Topic(), "h": Topic(held=True)}, steps=[
        init_pid("a"),
        add_partitions("a", [("{t}", 0), ("{h}", 0)]),
        txn_produce("a", ["x"]),
        end_txn("a"),
        fetch(isolation=0, until={"responses.0.partitions.0.high_watermark": 2}, label="marker on t written"),
        describe_txn(),
        txn_produce("a", ["y"], seq=1, v=9),
        txn_produce("a", ["y"], seq=1, v=11),
        describe_producers(),
        fetch(),
    ]),
    Scenario("txn_produce/transactional_batch_without_transactional_id", "A transactional batch in a Produce "
             "request without a transactional id: TRANSACTIONAL_ID_AUTHORIZATION_FAILED.", steps=[
        init_pid("a"),
        add_partitions("a"),
        produce(batch("a", ["x"], 0, transactional=True), txn=None),
        produce(batch("a", ["x"], 0, transactional=True), txn=None, v=3),
        list_offsets(isolation=0),
    ]),
    Scenario("txn_produce/transactional_batch_without_producer_id", "A batch flagged transactional with "
             "producer id -1.", steps=[
        init_pid("a"),
        add_partitions("a"),
        produce(batch(None, ["x"], transactional=True), txn="{tx}"),
        fetch(isolation=0),
        describe_producers(),
    ]),
    Scenario("txn_produce/two_producer_ids_in_one_request", "One Produce request with transactional batches of "
             "two producer ids.", topics={"t": Topic(partitions=2)}, steps=[
        init_pid("a"),
        init_pid("b", txn="{tx2}"),
        add_partitions("a", [("{t}", 0)]),
        add_partitions("b", [("{t}", 1)], txn="{tx2}"),
        produce_parts([("{t}", 0, batch("a", ["a"], 0, transactional=True)),
                       ("{t}", 1, batch("b", ["b"], 0, transactional=True))], txn="{tx}"),
        list_offsets(isolation=0),
        list_offsets(partition=1, isolation=0),
    ]),
    Scenario("txn_produce/one_partition_not_added", "One request to two partitions, only one added to the "
             "transaction: each partition gets its own answer.", topics={"t": Topic(partitions=2)}, steps=[
        init_pid("a"),
        add_partitions("a", [("{t}", 0)]),
        produce_parts([("{t}", 0, batch("a", ["in"], 0, transactional=True)),
                       ("{t}", 1, batch("a", ["out"], 0, transactional=True))], txn="{tx}"),
        describe_producers(partition=0),
        describe_producers(partition=1),
    ]),
    Scenario("txn_produce/first_batch_nonzero_sequence", "A transaction's first batch at sequence 5 is "
             "accepted; then a lower sequence is out of order, the next one follows.", steps=[
        init_pid("a"),
        add_partitions("a"),
        txn_produce("a", ["x"], seq=5),
        txn_produce("a", ["y"], seq=3),
        txn_produce("a", ["y"], seq=6),
        describe_producers(),
    ]),
    Scenario("txn_produce/epoch_bump_across_transactions", "A new InitProducerId between transactions bumps "
             "the epoch: sequence 0 again; the old epoch is refused.", steps=[
        *open_txn(),
        end_txn("a"),
        await_txn("CompleteCommit"),
        init_pid("b"),
        add_partitions("b"),
        txn_produce("b", ["new"], seq=0),
        txn_produce("a", ["old"], seq=1),
        end_txn("b"),
        await_txn("CompleteCommit"),
        describe_producers(),
        fetch(),
    ]),
    Scenario("txn_produce/sequence_continues_across_transactions", "Within one epoch the sequence continues "
             "from one transaction to the next (TV1).", steps=[
        *open_txn(["x", "y"]),
        end_txn("a"),
        await_txn("CompleteCommit"),
        add_partitions("a"),
        txn_produce("a", ["z"], seq=2),
        end_txn("a"),
        await_txn("CompleteCommit"),
        fetch(),
    ]),
    Scenario("txn_produce/out_of_order_first_batch_of_txn", "The first batch of a second transaction restarts "
             "at sequence 0: out of order; the verification entry keeps that lowest sequence, so the right "
             "next sequence is refused too.", steps=[
        *open_txn(["x", "y"]),
        end_txn("a"),
        await_txn("CompleteCommit"),
        add_partitions("a"),
        txn_produce("a", ["z"], seq=0),
        txn_produce("a", ["z"], seq=2),
        end_txn("a"),
        await_txn("CompleteCommit"),
        fetch(),
    ]),
    Scenario("txn_produce/retry_in_open_txn", "Retries of transactional batches while the transaction is open "
             "are duplicates.", steps=[
        *open_txn(["x", "y"]),
        txn_produce("a", ["z"], seq=2),
        txn_produce("a", ["z"], seq=2),
        txn_produce("a", ["x", "y"], seq=0),
        fetch(isolation=0),
    ]),
]

SCENARIOS += [
    Scenario("txn_produce/restart_kill_open_txn", "kill -9 with a transaction open: the LSO, the producer's "
             "transaction start offset, a duplicate retry, then the next batch and the commit.", steps=[
        *open_txn(["x", "y"]),
        restart(kill=True),
        fetch(),
        describe_producers(),
        txn_produce("a", ["x", "y"], seq=0),
        txn_produce("a", ["z"], seq=2),
        end_txn("a"),
        await_txn("CompleteCommit"),
        fetch(),
    ]),
    Scenario("txn_produce/restart_clean_open_txn", "Clean restart with a transaction open: as after kill -9.",
             steps=[
        *open_txn(["x", "y"]),
        restart(),
        fetch(),
        describe_producers(),
        txn_produce("a", ["x", "y"], seq=0),
        txn_produce("a", ["z"], seq=2),
        end_txn("a", commit=False),
        await_txn("CompleteAbort"),
        fetch(),
    ]),
]


# Transactional batches of more than one (producer id, epoch) in one Produce: Kafka's
# ReplicaManager.handleProduceAppend refuses the whole request (InvalidPidMappingException,
# every partition answered INVALID_PRODUCER_ID_MAPPING) before verifying or writing anything;
# only the batches bound for existing partitions count.
THREE = {"t": Topic(partitions=3)}


def two_producers():
    """"a" ({tx}) and "b" ({tx2}), each with partitions 0-2 of {t} added."""
    parts = [("{t}", p) for p in range(3)]
    return [init_pid("a"), init_pid("b", txn="{tx2}"), add_partitions("a", parts),
            add_partitions("b", parts, txn="{tx2}")]


def ends():
    return [list_offsets(partition=p, isolation=0) for p in range(3)]


SCENARIOS += [
    Scenario("txn_produce/mixed_producers_two_epochs_of_one_id", "Transactional batches of one producer id with "
             "two epochs in one request count as two producers: every partition is refused, nothing written.",
             topics=THREE, steps=[
        *two_producers(),
        produce_parts([("{t}", 0, batch("a", ["x"], 0, transactional=True)),
                       ("{t}", 1, batch("a", ["y"], 0, transactional=True, epoch=ref("a.producer_epoch") + 1))],
                      txn="{tx}"),
        *ends(),
        describe_producers(),
    ]),
    Scenario("txn_produce/mixed_producers_with_unknown_topic", "Two producers' transactional batches and a third "
             "batch for a topic that does not exist: the unknown topic's partition is refused with the same "
             "error; nothing is written, and the second producer still starts at sequence 0.", topics=THREE,
             steps=[
        *two_producers(),
        produce_parts([("{t}", 0, batch("a", ["x"], 0, transactional=True)),
                       ("{t}", 1, batch("b", ["y"], 0, transactional=True)),
                       ("{nosuch}", 0, batch("a", ["z"], 0, transactional=True))], txn="{tx}"),
        *ends(),
        produce_parts([("{t}", 1, batch("b", ["y"], 0, transactional=True))], txn="{tx2}"),
    ]),
    Scenario("txn_produce/mixed_producers_not_counted", "What does not count as a second producer: another "
             "producer's idempotent batch, and its transactional batch bound for an unknown topic.",
             topics=THREE, steps=[
        *two_producers(),
        produce_parts([("{t}", 0, batch("a", ["x"], 0, transactional=True)),
                       ("{t}", 2, batch("b", ["i"], 0))], txn="{tx}"),
        produce_parts([("{t}", 0, batch("a", ["x2"], 1, transactional=True)),
                       ("{nosuch}", 0, batch("b", ["z"], 0, transactional=True))], txn="{tx}"),
        *ends(),
        describe_producers(partition=2),
    ]),
    Scenario("txn_produce/mixed_producers_acks_0", "Two producers' transactional batches with acks=0: the "
             "broker closes the connection, nothing is written.", topics=THREE, steps=[
        *two_producers(),
        produce_parts([("{t}", 0, batch("a", ["x"], 0, transactional=True)),
                       ("{t}", 1, batch("b", ["y"], 0, transactional=True))], txn="{tx}", acks=0),
        *ends(),
    ]),
]
