"""Transaction-coordinator sequences: offsets in a transaction, AddPartitionsToTxn edge cases,
EndTxn retries, CONCURRENT_TRANSACTIONS while markers are held, epoch fences (PrepareEpochFence,
an in-memory pending state in Kafka: never listed or described, only seen as the
CONCURRENT_TRANSACTIONS answer and the bumped epoch), unknown transactional ids, listings."""
from ..dsl import (Scenario, Topic, add_offsets, add_partitions, await_txn, call, describe_txn, end_txn, fetch,
                   init_pid, list_transactions, offset_fetch, ref, txn_offset_commit, txn_produce)

HELD = {"t": Topic(), "h": Topic(held=True)}
OFFSETS = {("{t}", 0): 5}


def _offset_committed(value: int, **kw):
    """OffsetFetch (require_stable) until the committed offset is ``value``."""
    return offset_fetch(until={"topics.0.partitions.0.committed_offset": value}, **kw)


SCENARIOS = [
    # -------------------------------------------------------------- offsets
    Scenario("txn/offsets/commit",
             "Offsets committed in a transaction: the group's partition joins it, the offset is unstable "
             "until the commit, then visible.", steps=[
        init_pid("a"),
        add_offsets("a"),
        describe_txn(),
        txn_offset_commit("a", OFFSETS),
        offset_fetch(require_stable=True),
        offset_fetch(require_stable=False),
        end_txn("a", commit=True),
        await_txn("CompleteCommit"),
        offset_fetch(require_stable=True),
    ]),
    Scenario("txn/offsets/abort",
             "Offsets committed in an aborted transaction are discarded.", steps=[
        init_pid("a"),
        add_offsets("a"),
        txn_offset_commit("a", OFFSETS),
        end_txn("a", commit=False),
        await_txn("CompleteAbort"),
        offset_fetch(require_stable=True),
    ]),
    Scenario("txn/offsets/commit_before_add_offsets",
             "TxnOffsetCommit before AddOffsetsToTxn is refused; after it, accepted; AddOffsetsToTxn twice is "
             "fine.", steps=[
        init_pid("a"),
        txn_offset_commit("a", OFFSETS),
        add_offsets("a"),
        add_offsets("a"),
        txn_offset_commit("a", OFFSETS),
        describe_txn(),
    ]),
    Scenario("txn/offsets/held_commit_offsets_visible",
             "The offsets of a transaction held in PrepareCommit by another partition become visible once the "
             "offsets partition's own marker is written.", topics=HELD, steps=[
        init_pid("a"),
        add_partitions("a", "{h}"),
        add_offsets("a"),
        txn_offset_commit("a", OFFSETS),
        end_txn("a", commit=True),
        _offset_committed(5),
        # Kafka's group coordinator shows the offsets when it writes the marker; its transaction
        # coordinator drops the offsets partition from the transaction when the marker's answer
        # reaches it, a moment later: wait for that (only the held topic stays)
        describe_txn(until={"transaction_states.0.topics.1": "<absent>"}),
    ]),

    # -------------------------------------------------------------- AddPartitionsToTxn
    Scenario("txn/add/unknown_topic",
             "AddPartitionsToTxn v3 and v4 naming a topic that does not exist: UNKNOWN_TOPIC_OR_PARTITION for it, "
             "OPERATION_NOT_ATTEMPTED for the rest; nothing is added.", steps=[
        init_pid("a"),
        add_partitions("a", [("{t}", 0), ("{nope}", 0)]),
        add_partitions("a", [("{t}", 0), ("{nope}", 0)], v=4),
        describe_txn(),
    ]),
    Scenario("txn/add/unknown_partition",
             "AddPartitionsToTxn of a partition number the topic does not have.", steps=[
        init_pid("a"),
        add_partitions("a", [("{t}", 0), ("{t}", 7)]),
        describe_txn(),
    ]),
    Scenario("txn/add/second_partition",
             "A second AddPartitionsToTxn while Ongoing adds its partitions to the transaction.",
             topics={"t": Topic(), "u": Topic(partitions=2)}, steps=[
        init_pid("a"),
        add_partitions("a"),
        add_partitions("a", [("{u}", 1), ("{u}", 0)]),
        describe_txn(),
    ]),
    Scenario("txn/add/v4_two_transactions",
             "AddPartitionsToTxn v4 carrying two transactions answers each: one already holding the partition, "
             "one unknown.", steps=[
        init_pid("a"),
        add_partitions("a"),
        call(24, 4, {"transactions": [
            {"transactional_id": "{tx}", "producer_id": ref("a.producer_id"),
             "producer_epoch": ref("a.producer_epoch"), "verify_only": False,
             "topics": [{"name": "{t}", "partitions": [0]}]},
            {"transactional_id": "{tx2}", "producer_id": ref("a.producer_id"),
             "producer_epoch": ref("a.producer_epoch"), "verify_only": True,
             "topics": [{"name": "{t}", "partitions": [0]}]}]}),
    ]),
    Scenario("txn/add/empty_transactional_id",
             "AddPartitionsToTxn, AddOffsetsToTxn and EndTxn with an empty transactional id.", steps=[
        init_pid("a"),
        add_partitions("a", txn=""),
        add_offsets("a", txn=""),
        end_txn("a", txn=""),
    ]),

    # -------------------------------------------------------------- EndTxn retries
    Scenario("txn/end/retries",
             "EndTxn retried after its transaction completed: the same result answers NONE, the opposite "
             "INVALID_TXN_STATE; the same for an abort.", steps=[
        init_pid("a"),
        add_partitions("a"),
        end_txn("a", commit=True),
        await_txn("CompleteCommit"),
        end_txn("a", commit=True, label="retry"),
        end_txn("a", commit=False, label="opposite"),
        add_partitions("a"),
        end_txn("a", commit=False),
        await_txn("CompleteAbort"),
        end_txn("a", commit=False, label="retry"),
        end_txn("a", commit=True, label="opposite"),
        describe_txn(),
    ]),
    Scenario("txn/end/empty_transaction",
             "EndTxn commit and abort right after InitProducerId (Empty: nothing added).",
             steps=[
        init_pid("a"),
        end_txn("a", commit=True),
        end_txn("a", commit=False),
        describe_txn(),
    ]),

    # -------------------------------------------------------------- markers held: CONCURRENT_TRANSACTIONS
    Scenario("txn/concurrent/held_commit_blocks_next",
             "While a commit's markers cannot be written, every request for the transactional id (EndTxn's "
             "retry and opposite, the next transaction, InitProducerId) gets CONCURRENT_TRANSACTIONS.", topics=HELD, steps=[
        init_pid("a"),
        add_partitions("a", "{h}"),
        end_txn("a", commit=True),
        add_partitions("a"),
        add_partitions("a", v=4),
        add_partitions("a", v=4, verify_only=True),
        add_offsets("a"),
        txn_offset_commit("a", OFFSETS),
        end_txn("a", commit=True, label="retry"),
        end_txn("a", commit=False, label="opposite"),
        init_pid(label="a new instance"),
        init_pid(label="a KIP-360 retry", **{"pid": ref("a.producer_id"), "epoch": ref("a.producer_epoch")}),
        describe_txn(),
    ]),
    Scenario("txn/concurrent/held_abort_blocks_next",
             "While an abort's markers cannot be written, EndTxn's retry and opposite, the next transaction "
             "and InitProducerId get CONCURRENT_TRANSACTIONS.", topics=HELD, steps=[
        init_pid("a"),
        add_partitions("a", "{h}"),
        end_txn("a", commit=False),
        add_partitions("a"),
        end_txn("a", commit=False, label="retry"),
        end_txn("a", commit=True, label="opposite"),
        init_pid(label="a new instance"),
        describe_txn(),
    ]),

    # -------------------------------------------------------------- epoch fences (PrepareEpochFence)
    Scenario("txn/fence/abort_marker_epoch",
             "InitProducerId while Ongoing fences through PrepareEpochFence: the abort marker carries the "
             "bumped epoch, and the retry bumps once more.", steps=[
        init_pid("a"),
        add_partitions("a"),
        txn_produce("a", ["x"]),
        init_pid(label="another instance: CONCURRENT_TRANSACTIONS, abort started"),
        await_txn("CompleteAbort"),
        fetch(isolation=0),
        init_pid("b", label="its retry"),
        describe_txn(),
    ]),
    Scenario("txn/fence/held_stays_prepare_abort",
             "An epoch fence whose abort markers cannot be written leaves PrepareAbort with the bumped epoch; "
             "retries keep getting CONCURRENT_TRANSACTIONS.", topics=HELD, steps=[
        init_pid("a"),
        add_partitions("a", "{h}"),
        init_pid(label="another instance fences a"),
        describe_txn(),
        init_pid(label="its retry"),
        list_transactions(states=["PrepareAbort"]),
        end_txn("a", commit=False, label="the zombie aborts"),
        end_txn(None, commit=False, pid=ref("a.producer_id"), epoch=ref("a.producer_epoch") + 1,
                label="an abort naming the fence's epoch"),
        describe_txn(),
    ]),
    Scenario("txn/fence/twice",
             "Two fences in a row: each InitProducerId while Ongoing bumps once to abort, its retry once more.",
             steps=[
        init_pid("a"),
        add_partitions("a"),
        init_pid(label="fence 1"),
        await_txn("CompleteAbort"),
        init_pid("b"),
        add_partitions("b"),
        init_pid(label="fence 2"),
        await_txn("CompleteAbort"),
        init_pid("c"),
        describe_txn(),
    ]),
    Scenario("txn/fence/empty_no_fence",
             "InitProducerId from another instance in Empty bumps the epoch directly (no fence, no abort); the "
             "old instance is then fenced on AddPartitionsToTxn.", steps=[
        init_pid("a"),
        init_pid("b"),
        add_partitions("a"),
        add_partitions("b"),
        describe_txn(),
    ]),

    # -------------------------------------------------------------- unknown ids, listings
    Scenario("txn/unknown_id/requests",
             "Every transactional request for a transactional id the coordinator does not know.", steps=[
        init_pid("o", txn="{tx2}", label="a producer id from another transactional id"),
        add_partitions("o"),
        add_partitions("o", v=4),
        add_partitions("o", v=4, verify_only=True),
        add_offsets("o"),
        txn_offset_commit("o", OFFSETS),
        end_txn("o", commit=True),
        end_txn("o", commit=False),
        describe_txn(),
        list_transactions(pids=[ref("o.producer_id")]),
    ]),
    Scenario("txn/describe/several_ids",
             "DescribeTransactions of a known, an unknown and an empty transactional id in one request.", steps=[
        init_pid("a"),
        call(65, 0, {"transactional_ids": ["{tx}", "{tx2}", ""]}),
    ]),
    Scenario("txn/list/filters",
             "ListTransactions filters: several states, an unknown state name, several producer ids, and (v1) "
             "a duration.", steps=[
        init_pid("a"),
        add_partitions("a"),
        init_pid("b", txn="{tx2}"),
        list_transactions(states=["Ongoing", "Empty"]),
        list_transactions(states=["Ongoing", "NoSuchState"]),
        list_transactions(pids=[ref("a.producer_id"), ref("b.producer_id")]),
        list_transactions(states=["Empty"], pids=[ref("a.producer_id")]),
        call(66, 1, {"state_filters": [], "producer_id_filters": [], "duration_filter": 3600000}),
        call(66, 1, {"state_filters": [], "producer_id_filters": [], "duration_filter": -1}),
    ]),
]
