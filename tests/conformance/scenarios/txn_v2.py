"""Transactions V2 (KIP-890 part 2), recorded from Kafka 4.1 formatted with
transaction.version=2, as Java clients 4.x run them: no AddPartitionsToTxn (a
transactional Produce v12+ adds its partition, TxnOffsetCommit v5 the group's offsets
partition), EndTxn v5 bumps the epoch on every commit and abort and answers with the
producer id and epoch the producer goes on with, markers carry the bumped epoch.

Covered: the epoch bump and its answer; aborts with no transaction open; EndTxn retries
(the epoch before the bump, the last epoch of the previous producer id after a
rotation) told apart from new requests; the three KIP-890 failure modes (a delayed
produce landing after the end of its transaction, a delayed produce joining the next
transaction, a delayed EndTxn completing the next transaction), each refused; fences
and timeouts (one bump: the abort's own); epoch exhaustion (reached with pipelined
InitProducerIds) and the rotation to a new producer id; both protocols on one
transactional id; TxnOffsetCommit v5; Produce v13 (topic ids); restarts. The last
scenarios run on a cluster with transaction.version=1 finalized, to show what the
finalized level does and does not change (the request version decides).
"""
import uuid

from ..dsl import (TV2, Differs, Scenario, Topic, add_offsets, add_partitions, await_settled, await_txn, batch, call,
                   describe_producers, describe_txn, end_txn, fetch, idem_produce, init_pid, list_transactions,
                   offset_fetch, produce, produce_parts, ref, repeat, restart, txn_offset_commit,
                   txn_produce, write_markers)

HELD = {"t": Topic(), "h": Topic(held=True)}
TWO = {"t": Topic(partitions=2)}
OFFSETS = {("{t}", 0): 5}
NO_SUCH_TOPIC_ID = uuid.UUID("8d5f3b3a-0000-4000-8000-00000000abcd")
EXHAUSTED = 32766   # Kafka's isEpochExhausted: Short.MAX_VALUE - 1 (MAX is kept for fencing)


def begin(who: str = "a", values=("x",), seq=0, **kw):
    """The first batch of a transaction as a Java 4.x client sends it: Produce v12, no AddPartitionsToTxn."""
    return txn_produce(who, values, seq, v=12, **kw)


def end2(who: str, commit: bool = True, **kw):
    """EndTxn v5 (transactions V2)."""
    return end_txn(who, commit, v=5, **kw)


def init2(save: str | None = None, **kw):
    return init_pid(save, v=5, **kw)


def exhaust(save: str = "x"):
    """InitProducerIds until the epoch is the last usable one (32766): the first at 0, then
    32765 pipelined, then one more saved as ``save``."""
    return [init2("a0"), repeat(init2(), EXHAUSTED - 1), init2(save)]


def V2(name: str, doc: str, steps: list, **kw) -> Scenario:
    return Scenario(name, doc, steps=steps, features=TV2, **kw)


SCENARIOS = [
    # ------------------------------------------------------------------ the epoch bump
    V2("txn_v2/commit/bumps_epoch", "A transaction without AddPartitionsToTxn: Produce v12 adds the partition, "
       "EndTxn v5 commits and answers the bumped epoch; the marker carries it.", [
        init2("a"),
        begin("a", ["x", "y"]),
        describe_txn(),
        fetch(),
        end2("a", save="e"),
        await_txn("CompleteCommit"),
        describe_txn(),
        fetch(),
        describe_producers(),
    ]),
    V2("txn_v2/abort/bumps_epoch", "EndTxn v5 abort: the epoch is bumped, the ABORT marker carries it, "
       "read_committed skips the records.", [
        init2("a"),
        begin("a", ["x", "y"]),
        end2("a", commit=False, save="e"),
        await_txn("CompleteAbort"),
        describe_txn(),
        fetch(),
        fetch(isolation=0),
        describe_producers(),
    ]),
    V2("txn_v2/commit/next_transaction", "The next transaction runs at the bumped epoch from sequence 0, "
       "and is bumped again at its end.", [
        init2("a"),
        begin("a", ["x"]),
        end2("a", save="e1"),
        await_txn("CompleteCommit"),
        begin("e1", ["y"]),
        describe_txn(),
        end2("e1", save="e2"),
        await_txn("CompleteCommit"),
        describe_txn(),
        fetch(isolation=0),
        describe_producers(),
    ]),
    V2("txn_v2/commit/two_partitions", "One Produce v12 request to two partitions adds both; the commit "
       "writes a marker with the bumped epoch to each.", topics=TWO, steps=[
        init2("a"),
        produce_parts([("{t}", 0, batch("a", ["x"], 0, transactional=True)),
                       ("{t}", 1, batch("a", ["y"], 0, transactional=True))], txn="{tx}", v=12),
        describe_txn(),
        end2("a", save="e"),
        await_txn("CompleteCommit"),
        fetch(partition=0),
        fetch(partition=1),
    ]),
    V2("txn_v2/commit/offsets_v5", "TxnOffsetCommit v5 without AddOffsetsToTxn adds the group's offsets "
       "partition itself; the offsets become visible with the commit.", [
        init2("a"),
        begin("a", ["x"]),
        txn_offset_commit("a", OFFSETS, v=5),
        describe_txn(),
        offset_fetch(require_stable=True),
        end2("a"),
        await_txn("CompleteCommit"),
        offset_fetch(require_stable=True),
    ]),
    V2("txn_v2/commit/offsets_only_v5", "A transaction holding only offsets (TxnOffsetCommit v5), then "
       "aborted: the offsets are dropped.", [
        init2("a"),
        txn_offset_commit("a", OFFSETS, v=5),
        describe_txn(),
        end2("a", commit=False),
        await_txn("CompleteAbort"),
        offset_fetch(require_stable=True),
    ]),
    V2("txn_v2/commit/offsets_v4_without_add", "TxnOffsetCommit v4 (transactions V1) without AddOffsetsToTxn "
       "is still refused.", [
        init2("a"),
        txn_offset_commit("a", OFFSETS, v=4),
        describe_txn(),
    ]),

    # ------------------------------------------------------------------ aborts with nothing open
    V2("txn_v2/abort/empty_after_init", "EndTxn v5 abort right after InitProducerId (Empty): a transaction "
       "of its own with no partition; the epoch is bumped.", [
        init2("a"),
        end2("a", commit=False, save="e"),
        await_txn("CompleteAbort"),
        describe_txn(),
        end2("e", commit=False, save="e2"),
        await_txn("CompleteAbort"),
        describe_txn(),
    ]),
    V2("txn_v2/abort/empty_commit_refused", "EndTxn v5 commit with nothing open (Empty, then CompleteCommit at "
       "the current epoch): INVALID_TXN_STATE.", [
        init2("a"),
        end2("a", commit=True),
        begin("a"),
        end2("a", save="e"),
        await_txn("CompleteCommit"),
        end2("e", commit=True),
        describe_txn(),
    ]),
    V2("txn_v2/abort/after_commit", "EndTxn v5 abort at the current epoch after a completed commit: a new "
       "(empty) transaction, bumped again.", [
        init2("a"),
        begin("a"),
        end2("a", save="e1"),
        await_txn("CompleteCommit"),
        end2("e1", commit=False, save="e2"),
        await_txn("CompleteAbort"),
        describe_txn(),
        fetch(isolation=0),
    ]),

    # ------------------------------------------------------------------ retries of EndTxn
    V2("txn_v2/retry/commit_after_completion", "A retry of a commit (the epoch before the bump) after it "
       "completed: NONE with the current producer id and epoch; with the other result INVALID_TXN_STATE; "
       "an older epoch: PRODUCER_FENCED.", [
        init2("a"),
        begin("a"),
        end2("a", save="e1"),
        await_txn("CompleteCommit"),
        end2("a", commit=True),
        end2("a", commit=False),
        end2("a", commit=True, epoch=ref("a.producer_epoch") - 1),
        end2("a", commit=True, epoch=ref("e1.producer_epoch") + 1),
        describe_txn(),
    ]),
    V2("txn_v2/retry/abort_after_completion", "A retry of an abort after it completed: NONE; as a commit: "
       "INVALID_TXN_STATE.", [
        init2("a"),
        begin("a"),
        end2("a", commit=False, save="e1"),
        await_txn("CompleteAbort"),
        end2("a", commit=False),
        end2("a", commit=True),
        describe_txn(),
    ]),
    V2("txn_v2/retry/while_markers_pending", "Retries while the markers are still being written (a held "
       "partition keeps the transaction PrepareCommit): CONCURRENT_TRANSACTIONS, whatever the epoch.",
       topics=HELD, steps=[
        init2("a"),
        begin("a"),
        add_partitions("a", "{h}"),   # no produce to a held topic: its leader is offline in Kafka
        end2("a", save="e1"),
        describe_txn(until={"transaction_states.0.topics.1": "<absent>"}),
        end2("a", commit=True),
        end2("a", commit=False),
        end2("e1", commit=True),
        end2("a", commit=True, epoch=ref("a.producer_epoch") - 1),
        init2("b"),
        fetch(),
    ]),
    V2("txn_v2/retry/v4_after_v5", "EndTxn v4 (transactions V1) with the epoch before the bump, after a "
       "v5 commit: PRODUCER_FENCED; at the bumped epoch it is INVALID_TXN_STATE (V1 checks the epoch "
       "strictly, then the state).", [
        init2("a"),
        begin("a"),
        end2("a", save="e1"),
        await_txn("CompleteCommit"),
        end_txn("a", commit=True, v=4),
        end_txn("e1", commit=True, v=4),
        end_txn("e1", commit=False, v=4),
        describe_txn(),
    ]),

    # ------------------------------------------------------------------ identity errors
    V2("txn_v2/end/unknown_and_mismatched", "EndTxn v5 for an unknown transactional id, another producer id, "
       "a future epoch, an empty id.", [
        end_txn(None, v=5, txn="{nope}", pid=1, epoch=0),
        init2("a"),
        begin("a"),
        end2("a", pid=ref("a.producer_id") + 1),
        end2("a", epoch=ref("a.producer_epoch") + 1),
        end2("a", txn=""),
        describe_txn(),
    ]),
    V2("txn_v2/end/v5_on_v1_transaction", "A transaction begun the V1 way (AddPartitionsToTxn v3) ended with "
       "EndTxn v5: the epoch is bumped all the same.", [
        init2("a"),
        add_partitions("a"),
        txn_produce("a", ["x"], v=11),
        end2("a", save="e"),
        await_txn("CompleteCommit"),
        describe_txn(),
        fetch(),
    ]),
    V2("txn_v2/end/v4_on_v2_transaction", "A transaction begun by Produce v12 (the partition added by the "
       "broker) ended with EndTxn v4: no bump, the marker carries the data's epoch.", [
        init2("a"),
        begin("a"),
        end_txn("a", commit=True, v=4),
        await_txn("CompleteCommit"),
        describe_txn(),
        fetch(),
        describe_producers(),
    ]),

    # ------------------------------------------------------------------ KIP-890 failure modes
    V2("txn_v2/late/produce_after_commit", "Failure mode 1: a produce of a transaction that already ended "
       "(delayed, at the old epoch) is refused with INVALID_PRODUCER_EPOCH; it opens no transaction and "
       "read_committed sees nothing new.", [
        init2("a"),
        begin("a", ["in"]),
        end2("a", save="e"),
        await_txn("CompleteCommit"),
        begin("a", ["late"], seq=1),
        describe_txn(),
        describe_producers(),
        fetch(),
        fetch(isolation=0),
    ]),
    V2("txn_v2/late/produce_after_abort", "Failure mode 1 after an abort: the delayed produce is refused "
       "(INVALID_PRODUCER_EPOCH), nothing is left open, the LSO is the log end.", [
        init2("a"),
        begin("a", ["in"]),
        end2("a", commit=False),
        await_txn("CompleteAbort"),
        begin("a", ["late"], seq=1),
        txn_produce("a", ["late"], 1, v=11),
        describe_producers(),
        fetch(),
        fetch(isolation=0),
    ]),
    V2("txn_v2/late/produce_joins_next", "Failure mode 2: a delayed produce of the previous transaction "
       "arrives while the next one is open: refused (INVALID_PRODUCER_EPOCH), it does not join it.", [
        init2("a"),
        begin("a", ["t1-a"]),
        end2("a", save="e1"),
        await_txn("CompleteCommit"),
        begin("e1", ["t2-a"]),
        begin("a", ["t1-late"], seq=1),
        end2("e1", save="e2"),
        await_txn("CompleteCommit"),
        fetch(),
    ]),
    V2("txn_v2/late/end_txn_completes_next", "Failure mode 3: a delayed EndTxn(commit) of the previous "
       "transaction arrives while the next one is open: PRODUCER_FENCED, it does not commit it; the "
       "producer then aborts it.", [
        init2("a"),
        begin("a", ["t1"]),
        end2("a", save="e1"),
        await_txn("CompleteCommit"),
        begin("e1", ["t2"]),
        end2("a", commit=True),
        describe_txn(),
        end2("e1", commit=False),
        await_txn("CompleteAbort"),
        fetch(),
    ]),
    V2("txn_v2/late/produce_during_prepare", "A produce at the old epoch while the markers are held "
       "(PrepareCommit): refused, the partition's data stays as it was.", topics=HELD, steps=[
        init2("a"),
        begin("a", ["x"]),
        add_partitions("a", "{h}"),   # no produce to a held topic: its leader is offline in Kafka
        end2("a", save="e1"),
        fetch(isolation=0, until={"responses.0.partitions.0.high_watermark": 2}, label="marker on t written"),
        begin("a", ["late"], seq=1),
        begin("e1", ["next"], seq=0),
        describe_producers(),
        fetch(isolation=0),
    ]),
    V2("txn_v2/late/admin_marker_old_epoch", "An administrator's ABORT marker (KIP-664) with the data's epoch "
       "after a V2 commit: INVALID_PRODUCER_EPOCH (the partition has the bumped epoch); with the bumped "
       "epoch it is written.", [
        init2("a"),
        begin("a"),
        end2("a", save="e"),
        await_txn("CompleteCommit"),
        write_markers(ref("a.producer_id"), ref("a.producer_epoch"), False, coordinator_epoch=0),
        write_markers(ref("a.producer_id"), ref("e.producer_epoch"), False, coordinator_epoch=0),
        describe_producers(),
        fetch(isolation=0),
    ]),

    # ------------------------------------------------------------------ partition-side checks
    V2("txn_v2/produce/sequence_after_bump", "After a V2 commit the partition knows the bumped epoch: the "
       "next transaction must start at sequence 0 (OUT_OF_ORDER_SEQUENCE_NUMBER otherwise).", [
        init2("a"),
        begin("a", ["x"]),
        end2("a", save="e"),
        await_txn("CompleteCommit"),
        begin("e", ["y"], seq=1),
        describe_txn(),
        begin("e", ["y"], seq=0),
        describe_producers(),
    ]),
    V2("txn_v2/produce/first_sequence_nonzero", "A V2 producer's first batch on a partition where it has no "
       "state must have sequence 0 (Produce v12: OUT_OF_ORDER_SEQUENCE_NUMBER); the V1 way (v11 after "
       "AddPartitionsToTxn) takes any sequence.", topics=TWO, steps=[
        init2("a"),
        begin("a", ["x"], seq=3),
        describe_txn(),
        add_partitions("a", [("{t}", 1)]),
        txn_produce("a", ["y"], 3, partition=1, v=11),
        describe_producers(partition=0),
        describe_producers(partition=1),
    ]),
    V2("txn_v2/produce/retry_is_duplicate", "A retry of a V2 batch while its transaction is open is a "
       "duplicate: the first offset again, nothing appended.", [
        init2("a"),
        begin("a", ["x"]),
        begin("a", ["x"]),
        fetch(isolation=0),
    ]),
    V2("txn_v2/produce/verify_only_after_bump", "AddPartitionsToTxn v4 verify-only (a partition leader's "
       "question) after a V2 commit: the old epoch is PRODUCER_FENCED, the bumped one not in a "
       "transaction (TRANSACTION_ABORTABLE).", [
        init2("a"),
        begin("a"),
        end2("a", save="e"),
        await_txn("CompleteCommit"),
        add_partitions("a", v=4, verify_only=True),
        add_partitions("e", v=4, verify_only=True),
    ]),
    V2("txn_v2/produce/v13_topic_ids", "Produce v13 names the topic by id (KIP-516), as Java 4.1 sends it "
       "under transactions V2; an unknown id is UNKNOWN_TOPIC_ID.", [
        init2("a"),
        produce(batch("a", ["x"], 0, transactional=True), topic="{t}", txn="{tx}", v=13),
        describe_txn(),
        end2("a"),
        await_txn("CompleteCommit"),
        produce(batch("a", ["y"], 1, transactional=True), topic=NO_SUCH_TOPIC_ID, txn="{tx}", v=13),
        fetch(),
    ]),

    # ------------------------------------------------------------------ fences and timeouts
    V2("txn_v2/fence/init_aborts_open", "InitProducerId while a V2 transaction is open: the coordinator fences "
       "it and aborts it with one bump (+1, the abort's own, as Kafka 4.1), the client retries into +2.", [
        init2("a"),
        begin("a", ["x"]),
        init2("b"),
        await_txn("CompleteAbort"),
        describe_txn(),
        fetch(isolation=0),
        init2("c"),
        end2("a", commit=True),
        begin("a", ["zombie"], seq=1),
        describe_producers(),
    ]),
    V2("txn_v2/fence/v1_transaction", "transaction.version=2 finalized, a transaction begun the V1 way "
       "(InitProducerId v4, AddPartitionsToTxn v3, Produce v11): a stale KIP-360 InitProducerId fences and "
       "aborts it; what the fenced and the current instance may then recover with.", [
        init_pid("a"),
        init_pid("b"),
        add_partitions("b"),
        txn_produce("b", ["x"], 0, v=11),
        init_pid(pid=ref("a.producer_id"), epoch=ref("a.producer_epoch")),
        await_txn("CompleteAbort"),
        describe_txn(),
        fetch(isolation=0),
        init_pid(pid=ref("a.producer_id"), epoch=ref("a.producer_epoch")),
        init_pid(pid=ref("b.producer_id"), epoch=ref("b.producer_epoch")),
        end_txn("b", commit=True),
        describe_txn(),
    ]),
    V2("txn_v2/fence/timeout_aborts", "A V2 transaction older than its timeout is aborted by the coordinator "
       "with one bump; the fenced producer's EndTxn (taken for a retry: INVALID_TXN_STATE) and produce are refused.",
       broker={"transaction.abort.timed.out.transaction.cleanup.interval.ms": "200"}, steps=[
        init2("a", timeout_ms=1000),
        begin("a", ["x"]),
        await_txn("CompleteAbort"),
        describe_txn(),
        end2("a", commit=True),
        begin("a", ["late"], seq=1),
        fetch(isolation=0),
    ]),
    V2("txn_v2/fence/timeout_then_init", "After a timeout abort the producer re-initialises (KIP-360, its "
       "own id and epoch) and goes on.",
       broker={"transaction.abort.timed.out.transaction.cleanup.interval.ms": "200"}, steps=[
        init2("a", timeout_ms=1000),
        begin("a", ["x"]),
        await_txn("CompleteAbort"),
        init2("b", pid=ref("a.producer_id"), epoch=ref("a.producer_epoch")),
        init2("c"),
        describe_txn(),
    ]),
    V2("txn_v2/init/kip360_after_bump", "InitProducerId with the expected producer id and epoch after V2 "
       "transactions: the bumped epoch recovers (+1); the epoch before the last bump is taken as a retry "
       "of a recovery (the last epoch) and answered with the current one.", [
        init2("a"),
        begin("a"),
        end2("a", save="e1"),
        await_txn("CompleteCommit"),
        init2("r1", pid=ref("a.producer_id"), epoch=ref("a.producer_epoch")),
        init2("r2", pid=ref("e1.producer_id"), epoch=ref("e1.producer_epoch")),
        init2("r3", pid=ref("e1.producer_id"), epoch=ref("e1.producer_epoch")),
        describe_txn(),
    ]),

    # ------------------------------------------------------------------ epoch exhaustion
    V2("txn_v2/exhaust/commit_rotates", "A V2 commit at the last usable epoch (32766): the Prepare record "
       "and the markers carry 32767 under the old producer id, the answer and the completed state the "
       "next producer id at epoch 0; a retry with the old id and epoch is recognised.", [
        *exhaust("x"),
        begin("x", ["x"]),
        end2("x", save="n"),
        await_txn("CompleteCommit"),
        describe_txn(),
        fetch(),
        describe_producers(),
        end2("x", commit=True),
        end2("x", commit=False),
        end2("n", commit=True),
        begin("n", ["y"]),
        end2("n", commit=False, save="n2"),
        await_txn("CompleteAbort"),
        end2("x", commit=True),
        fetch(),
    ]),
    V2("txn_v2/exhaust/abort_empty_rotates", "An abort with nothing open at the last usable epoch rotates the "
       "producer id too; then InitProducerId at epoch 0 of the new id.", [
        *exhaust("x"),
        end2("x", commit=False, save="n"),
        await_txn("CompleteAbort"),
        describe_txn(),
        end2("x", commit=False),
        init2("i"),
        describe_txn(),
    ]),
    V2("txn_v2/exhaust/fence_at_last_epoch", "InitProducerId while a transaction is open at the last usable "
       "epoch: the fence takes 32767 and the abort stays there (no rotation while fencing); the retry "
       "rotates.", [
        *exhaust("x"),
        begin("x", ["x"]),
        init2("b"),
        await_txn("CompleteAbort"),
        describe_txn(),
        fetch(isolation=0),
        init2("c"),
        describe_txn(),
    ]),
    V2("txn_v2/exhaust/retry_while_markers_pending", "A retry of the rotating commit while its markers are held: "
       "CONCURRENT_TRANSACTIONS; DescribeTransactions shows the old id at 32767 until it completes.",
       topics=HELD, steps=[
        *exhaust("x"),
        begin("x", ["x"]),
        add_partitions("x", "{h}"),   # no produce to a held topic: its leader is offline in Kafka
        end2("x", save="n"),
        describe_txn(until={"transaction_states.0.topics.1": "<absent>"}),
        end2("x", commit=True),
        end2("n", commit=True),
        fetch(),
    ]),

    # ------------------------------------------------------------------ listings
    V2("txn_v2/list/after_bumps", "ListTransactions and DescribeProducers after V2 transactions: the current "
       "producer id and the partition's bumped epoch.", [
        init2("a"),
        begin("a"),
        end2("a"),
        await_txn("CompleteCommit"),
        list_transactions(states=["CompleteCommit"]),
        list_transactions(pids=[ref("a.producer_id")]),
        describe_producers(),
    ]),

    # ------------------------------------------------------------------ restarts
    V2("txn_v2/restart/after_commit", "kill -9 after a V2 commit: the bumped epoch and the retry detection "
       "survive.", [
        init2("a"),
        begin("a"),
        end2("a", save="e"),
        await_txn("CompleteCommit"),
        restart(kill=True),
        describe_txn(),
        end2("a", commit=True),
        begin("e", ["next"]),
        end2("e"),
        await_txn("CompleteCommit"),
        fetch(),
    ]),
    V2("txn_v2/restart/open_then_commit", "A V2 transaction open across a kill -9 is committed with EndTxn v5 "
       "afterwards; the marker carries the bumped epoch and the new coordinator epoch.", [
        init2("a"),
        begin("a", ["x"]),
        restart(kill=True),
        describe_txn(),
        end2("a"),
        await_txn("CompleteCommit"),
        fetch(),
        describe_producers(),
    ]),
    V2("txn_v2/restart/prepare_reloaded", "A V2 commit held in PrepareCommit across a clean restart: reloaded "
       "with the bumped epoch; the retry still gets CONCURRENT_TRANSACTIONS.", topics=HELD, steps=[
        init2("a"),
        begin("a"),
        add_partitions("a", "{h}"),   # no produce to a held topic: its leader is offline in Kafka
        end2("a", save="e"),
        describe_txn(until={"transaction_states.0.topics.1": "<absent>"}),
        restart(),
        describe_txn(),
        end2("a", commit=True),
    ]),
    V2("txn_v2/restart/retry_after_rotation", "kill -9 after a rotating commit: the producer's retry of that "
       "EndTxn (the old producer id at 32766) after the reload. Kafka 4.1 writes neither producer id of the "
       "rotation to __transaction_state, so it no longer recognises the retry; minikafka keeps them.", [
        *exhaust("x"),
        begin("x", ["x"]),
        end2("x", save="n"),
        await_txn("CompleteCommit"),
        restart(kill=True),
        end2("x", commit=True),
        describe_txn(),
    ], differs={8: Differs("rotation-survives-reload", {"error_code": 0, "producer_id": "P2", "producer_epoch": 0})}),
    V2("txn_v2/restart/after_rotation", "kill -9 right after a rotating commit completed: the new producer id "
       "at epoch 0 is what the coordinator has after the restart.", [
        *exhaust("x"),
        begin("x", ["x"]),
        end2("x", save="n"),
        await_txn("CompleteCommit"),
        restart(kill=True),
        describe_txn(),
        begin("n", ["y"]),
        end2("n"),
        await_txn("CompleteCommit"),
        fetch(),
    ]),
]

# ------------------------------------------------------------------ the finalized level: transaction.version=1
# Kafka decides by the request version, not by the finalized level: a client that speaks V2
# against a TV1 cluster gets V2. The level decides only what the coordinator does on its own.
SCENARIOS += [
    Scenario("txn_v2/on_tv1/end_v5_bumps", "transaction.version=1 finalized: EndTxn v5 still bumps the epoch "
             "(the request version decides).", steps=[
        init2("a"),
        begin("a"),
        end2("a", save="e"),
        await_txn("CompleteCommit"),
        describe_txn(),
        fetch(),
    ]),
    Scenario("txn_v2/on_tv1/fence_bumps_once", "transaction.version=1 finalized: the coordinator's own abort of "
             "a transaction begun with Produce v12 (an InitProducerId fence) bumps once, as V1 does.", steps=[
        init2("a"),
        begin("a", ["x"]),
        init2("b"),
        await_txn("CompleteAbort"),
        describe_txn(),
        fetch(isolation=0),
    ]),
    Scenario("txn_v1/late/end_txn_completes_next", "Failure mode 3 under transactions V1 (the reason for V2): a "
             "delayed EndTxn v4 of the previous transaction, at the unchanged epoch, commits the next one.",
             steps=[
        init_pid("a"),
        add_partitions("a"),
        txn_produce("a", ["t1"], 0, v=11),
        end_txn("a", commit=True, v=4),
        await_txn("CompleteCommit"),
        add_partitions("a"),
        txn_produce("a", ["t2"], 1, v=11),
        end_txn("a", commit=True, v=4, label="the delayed EndTxn of the first transaction"),
        await_settled(),
        describe_txn(),
        fetch(),
    ]),
]
