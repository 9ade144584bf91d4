"""WriteTxnMarkers on the partition: admin markers (KIP-664 abort with coordinator epoch -1, a
COMMIT from an admin), coordinator-epoch and producer-epoch fencing, markers without an open
transaction, unknown topics and partitions."""
from ..dsl import (Call, Scenario, Topic, add_partitions, await_txn, describe_producers, describe_txn, end_txn,
                   fetch, idem_produce, init_pid, ref, restart, txn_produce, write_markers)

PID, EPOCH = ref("a.producer_id"), ref("a.producer_epoch")
# the coordinator epoch the partition last saw from the transaction coordinator (DescribeProducers "dp")
DP_COORDINATOR_EPOCH = ref("dp.topics.0.partitions.0.active_producers.0.coordinator_epoch")


def open_txn(values=("x",), who: str = "a", txn: str = "{tx}"):
    return [init_pid(who, txn=txn), add_partitions(who, txn=txn), txn_produce(who, list(values), txn=txn)]


def committed_txn():
    """One committed transaction by "a"; its DescribeProducers answer saved as "dp"."""
    return [*open_txn(), end_txn("a"), await_txn("CompleteCommit"), describe_producers(save="dp")]


SCENARIOS = [
    Scenario("markers/admin_abort", "kafka-transactions abort (KIP-664): an ABORT marker with coordinator epoch "
             "-1 ends the partition's transaction; the coordinator still has it open, and its later COMMIT "
             "marker is written too but commits nothing.", steps=[
        *open_txn(["x", "y"]),
        write_markers(PID, EPOCH, commit=False, coordinator_epoch=-1),
        fetch(),
        describe_producers(),
        describe_txn(),
        end_txn("a"),
        await_txn("CompleteCommit"),
        fetch(),
        fetch(isolation=0),
    ]),
    Scenario("markers/admin_commit", "A COMMIT marker from an admin (coordinator epoch -1) makes the data "
             "readable; the producer's later abort writes an ABORT marker that aborts nothing.", steps=[
        *open_txn(["x", "y"]),
        write_markers(PID, EPOCH, commit=True, coordinator_epoch=-1),
        fetch(),
        describe_producers(),
        end_txn("a", commit=False),
        await_txn("CompleteAbort"),
        fetch(),
        fetch(isolation=0),
    ]),
    Scenario("markers/admin_abort_then_producer_continues", "After an admin abort the coordinator still lists "
             "the partition: the producer's next batch opens a new transaction on the partition, which its "
             "commit then commits.", steps=[
        *open_txn(),
        write_markers(PID, EPOCH, commit=False, coordinator_epoch=-1),
        txn_produce("a", ["y"], seq=1),
        fetch(),
        describe_producers(),
        end_txn("a"),
        await_txn("CompleteCommit"),
        fetch(),
    ]),
    Scenario("markers/abort_twice", "Two admin ABORT markers for one transaction: both written, one aborted "
             "range.", steps=[
        *open_txn(),
        write_markers(PID, EPOCH, commit=False, coordinator_epoch=-1),
        write_markers(PID, EPOCH, commit=False, coordinator_epoch=-1),
        fetch(),
        fetch(isolation=0),
    ]),
    Scenario("markers/stale_coordinator_epoch", "After a coordinator-written marker, a marker with coordinator "
             "epoch -1 is fenced (TRANSACTION_COORDINATOR_FENCED); one with the partition's coordinator epoch "
             "is accepted.", steps=[
        *committed_txn(),
        add_partitions("a"),
        txn_produce("a", ["y"], seq=1),
        write_markers(PID, EPOCH, commit=False, coordinator_epoch=-1),
        fetch(),
        write_markers(PID, EPOCH, commit=False, coordinator_epoch=DP_COORDINATOR_EPOCH),
        fetch(),
        describe_producers(),
    ]),
    Scenario("markers/no_open_transaction", "An ABORT marker for a producer whose transaction already "
             "committed: written, changes nothing readable.", steps=[
        *committed_txn(),
        write_markers(PID, EPOCH, commit=False, coordinator_epoch=DP_COORDINATOR_EPOCH),
        fetch(),
        fetch(isolation=0),
        describe_producers(),
    ]),
    Scenario("markers/producer_without_state", "A marker for a producer id that never wrote to the partition.",
             steps=[
        init_pid("a", txn=None),
        write_markers(PID, EPOCH, commit=False, coordinator_epoch=-1),
        fetch(isolation=0),
        describe_producers(),
        fetch(),
    ]),
    Scenario("markers/idempotent_producer", "A COMMIT marker for an idempotent (non-transactional) producer; its "
             "sequence continues afterwards.", steps=[
        init_pid("a", txn=None),
        idem_produce("a", ["x"], seq=0),
        write_markers(PID, EPOCH, commit=True, coordinator_epoch=-1),
        idem_produce("a", ["y"], seq=1),
        describe_producers(),
        fetch(),
    ]),
    Scenario("markers/lower_producer_epoch", "A marker with an epoch below the partition's producer epoch: "
             "INVALID_PRODUCER_EPOCH; with the current epoch it is accepted.", steps=[
        init_pid("a"),
        init_pid("b"),
        add_partitions("b"),
        txn_produce("b", ["x"]),
        write_markers(PID, EPOCH, commit=False, coordinator_epoch=-1),
        fetch(),
        write_markers(PID, ref("b.producer_epoch"), commit=False, coordinator_epoch=-1),
        fetch(),
    ]),
    Scenario("markers/higher_producer_epoch", "A marker with a higher epoch is accepted and raises the "
             "partition's producer epoch: the producer's next batch is then refused.", steps=[
        *open_txn(),
        write_markers(PID, EPOCH + 1, commit=False, coordinator_epoch=-1),
        describe_producers(),
        txn_produce("a", ["y"], seq=1),
        fetch(),
    ]),
    Scenario("markers/other_producer", "An ABORT marker for another producer id leaves the open transaction "
             "open.", steps=[
        *open_txn(),
        init_pid("b", txn=None),
        write_markers(ref("b.producer_id"), ref("b.producer_epoch"), commit=False, coordinator_epoch=-1),
        fetch(),
        describe_producers(),
    ]),
    Scenario("markers/unknown_topic", "A marker for a topic that does not exist.", steps=[
        *open_txn(),
        write_markers(PID, EPOCH, commit=False, coordinator_epoch=-1, parts="{nosuch}"),
        fetch(),
    ]),
    Scenario("markers/unknown_partition", "A marker for a partition the topic does not have, alone and beside "
             "an existing one.", steps=[
        *open_txn(),
        write_markers(PID, EPOCH, commit=False, coordinator_epoch=-1, parts=[("{t}", 3)]),
        write_markers(PID, EPOCH, commit=False, coordinator_epoch=-1, parts=[("{t}", 0), ("{t}", 3)]),
        fetch(),
    ]),
    Scenario("markers/two_producers_in_one_request", "One WriteTxnMarkers request with an ABORT for one "
             "producer and a COMMIT for another.", steps=[
        *open_txn(["a1"]),
        *open_txn(["b1"], who="b", txn="{tx2}"),
        Call(27, 1, {"markers": [
            {"producer_id": PID, "producer_epoch": EPOCH, "transaction_result": False,
             "topics": [{"name": "{t}", "partition_indexes": [0]}], "coordinator_epoch": -1},
            {"producer_id": ref("b.producer_id"), "producer_epoch": ref("b.producer_epoch"),
             "transaction_result": True, "topics": [{"name": "{t}", "partition_indexes": [0]}],
             "coordinator_epoch": -1}]}),
        fetch(),
        fetch(isolation=0),
    ]),
    Scenario("markers/restart_keeps_coordinator_epoch", "kill -9 after a committed transaction: the partition "
             "still fences an admin marker with coordinator epoch -1; the restarted coordinator's markers are "
             "accepted.", steps=[
        *committed_txn(),
        restart(kill=True),
        describe_producers(),
        add_partitions("a"),
        txn_produce("a", ["y"], seq=1),
        write_markers(PID, EPOCH, commit=False, coordinator_epoch=-1),
        end_txn("a"),
        await_txn("CompleteCommit"),
        describe_producers(),
        fetch(),
    ]),
]
