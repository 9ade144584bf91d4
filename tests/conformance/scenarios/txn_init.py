"""InitProducerId: zombies naming their old epoch (issue 12, defect 1), KIP-360 retries,
bad requests, and the error codes each version of the transactional APIs gives a fenced
producer."""
from ..dsl import (Scenario, Topic, add_offsets, add_partitions, await_settled, await_txn, describe_txn, end_txn,
                   init_pid, ref, txn_offset_commit)

A = {"pid": ref("a.producer_id"), "epoch": ref("a.producer_epoch")}

SCENARIOS = []

# ------------------------------------------------------------------ issue 12, defect 1
for v in (3, 4, 5):
    SCENARIOS.append(Scenario(
        f"txn/zombie/expected_epoch_after_fence_v{v}",
        f"Instance A inits, B inits (epoch + 1), then A's InitProducerId v{v} naming its own id and epoch is "
        f"refused, before and after B commits.",
        steps=[
            init_pid("a"),
            init_pid("b"),
            init_pid(v=v, label="A names its fenced epoch", **A),
            describe_txn(),
            add_partitions("b"),
            end_txn("b", commit=True),
            await_txn("CompleteCommit"),
            init_pid(v=v, label="A again, after B's commit", **A),
            describe_txn(),
        ]))

SCENARIOS += [
    Scenario("txn/init/kip360_retry_same_epoch",
             "A retried InitProducerId naming the epoch it already bumped from gets the same epoch back, "
             "not a second bump.", steps=[
        init_pid("a"),
        init_pid("a2", **A),
        init_pid(label="retry naming epoch 0 again", **A),
        init_pid(label="and again", **A),
        init_pid(label="naming the epoch it got", pid=ref("a2.producer_id"), epoch=ref("a2.producer_epoch")),
        describe_txn(),
    ]),
    Scenario("txn/init/plain_init_clears_previous_epoch",
             "After a plain InitProducerId (no expected epoch) the coordinator keeps no previous epoch: "
             "a KIP-360 retry naming either older epoch is fenced.", steps=[
        init_pid("a"),
        init_pid("a2", **A),
        init_pid("b", label="plain init by another instance"),
        init_pid(label="retry naming epoch 0", **A),
        init_pid(label="retry naming epoch 1", pid=ref("a2.producer_id"), epoch=ref("a2.producer_epoch")),
        init_pid(label="naming the current epoch", pid=ref("b.producer_id"), epoch=ref("b.producer_epoch")),
        describe_txn(),
    ]),
    Scenario("txn/init/expected_pid_for_unknown_id",
             "InitProducerId naming a producer id and epoch for a transactional id the coordinator never saw "
             "(a producer recovering from UNKNOWN_PRODUCER_ID) gets a new id at epoch 0.", steps=[
        init_pid("o", txn="{tx2}"),
        init_pid(pid=ref("o.producer_id"), epoch=5),
        describe_txn(),
    ]),
    Scenario("txn/init/invalid_requests",
             "InitProducerId with an id but no epoch, an epoch but no id, an empty transactional id, a zero "
             "or too long timeout: each refused, nothing created.", steps=[
        init_pid("o", txn="{tx2}"),
        init_pid(pid=ref("o.producer_id"), epoch=-1, label="producer id without epoch"),
        init_pid(pid=-1, epoch=0, label="epoch without producer id"),
        init_pid(txn="", label="empty transactional id"),
        init_pid(timeout_ms=0, label="timeout 0"),
        init_pid(timeout_ms=900001, label="timeout above transaction.max.timeout.ms"),
        describe_txn(),
    ]),
    Scenario("txn/init/idempotent",
             "InitProducerId without a transactional id gives a new producer id at epoch 0 each time, also when "
             "it names a producer id and epoch.", steps=[
        init_pid("i", txn=None),
        init_pid(txn=None, pid=ref("i.producer_id"), epoch=ref("i.producer_epoch")),
        init_pid(txn=None, v=3),
    ]),
    Scenario("txn/init/timeout_changes",
             "Each InitProducerId sets the transaction timeout DescribeTransactions reports.", steps=[
        init_pid("a", timeout_ms=60000),
        describe_txn(),
        init_pid("a2", timeout_ms=30000, **A),
        describe_txn(),
        add_partitions("a2"),
        describe_txn(),
    ]),
]

# ------------------------------------------------------------------ versions: what a fenced producer gets
_FENCED = [init_pid("a"), init_pid("b", label="another instance fences a")]

SCENARIOS += [
    Scenario("txn/versions/add_partitions_fenced",
             "AddPartitionsToTxn v0-v5 (and verify_only v4, v5) from a fenced producer: INVALID_PRODUCER_EPOCH "
             "before v2, PRODUCER_FENCED after.",
             steps=_FENCED + [add_partitions("a", v=v) for v in range(6)]
             + [add_partitions("a", v=v, verify_only=True) for v in (4, 5)] + [describe_txn()]),
    Scenario("txn/versions/add_offsets_fenced",
             "AddOffsetsToTxn v0-v4 from a fenced producer.",
             steps=_FENCED + [add_offsets("a", v=v) for v in range(5)] + [describe_txn()]),
    Scenario("txn/versions/end_txn_fenced",
             "EndTxn v0-v4 (commit and abort) from a fenced producer.",
             steps=_FENCED + [end_txn("a", commit=c, v=v) for v in range(5) for c in (True, False)]
             + [describe_txn()]),
    Scenario("txn/versions/txn_offset_commit_fenced",
             "TxnOffsetCommit v0-v4 from a fenced producer after it added the group.",
             steps=[init_pid("a"), add_offsets("a"), init_pid("b", label="another instance fences a"),
                    await_settled()]
             + [txn_offset_commit("a", {("{t}", 0): 1}, v=v) for v in range(5)]),
    Scenario("txn/versions/init_fenced",
             "InitProducerId v3-v5 naming a fenced epoch.",
             steps=_FENCED + [init_pid(v=v, **A) for v in (3, 4, 5)] + [describe_txn()]),
    Scenario("txn/versions/verify_partition_not_added",
             "AddPartitionsToTxn verify_only v4 and v5 of a partition not in the Ongoing transaction.",
             topics={"t": Topic(), "u": Topic()},
             steps=[init_pid("a"), add_partitions("a")]
             + [add_partitions("a", "{u}", v=v, verify_only=True) for v in (4, 5)] + [describe_txn()]),
    Scenario("txn/versions/txn_offset_commit_group_not_added",
             "TxnOffsetCommit v0-v4 in an Ongoing transaction that never added the group.",
             steps=[init_pid("a"), add_partitions("a")]
             + [txn_offset_commit("a", {("{t}", 0): 1}, v=v) for v in range(5)] + [describe_txn()]),
    Scenario("txn/versions/java_client_tv1_flow",
             "A transaction with the versions a Java 4.1 client uses under transaction.version=1 (InitProducerId "
             "v5, AddPartitionsToTxn v3, AddOffsetsToTxn v4, TxnOffsetCommit v4, EndTxn v4).", steps=[
        init_pid("a", v=5),
        add_partitions("a", v=3),
        add_offsets("a", v=4),
        txn_offset_commit("a", {("{t}", 0): 3}, v=4),
        end_txn("a", commit=True, v=4),
        await_txn("CompleteCommit"),
        end_txn("a", commit=True, v=4, label="retry"),
        end_txn("a", commit=False, v=4, label="opposite"),
        init_pid(v=5, label="next session", **A),
    ]),
]
