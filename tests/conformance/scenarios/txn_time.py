"""Time in the transaction coordinator: transaction timeouts (the coordinator fences the
epoch through PrepareEpochFence, an in-memory pending state, and aborts) and transactional
id expiry (Dead: Kafka writes a tombstone, then forgets the id). Short intervals in
``broker=`` keep the waits short; every wait polls for a state, none sleeps."""
from ..dsl import (Scenario, Topic, add_offsets, add_partitions, await_gone, await_txn, describe_txn, end_txn,
                   init_pid, list_transactions, ref, txn_offset_commit, txn_produce)

TIMEOUT = {"transaction.abort.timed.out.transaction.cleanup.interval.ms": "200"}
EXPIRY = {"transactional.id.expiration.ms": "2000", "transaction.remove.expired.transaction.cleanup.interval.ms": "200"}
HELD = {"t": Topic(), "h": Topic(held=True)}
A = {"pid": ref("a.producer_id"), "epoch": ref("a.producer_epoch")}
OFFSETS = {("{t}", 0): 1}


def _timed_out(parts="{t}"):
    """a's transaction (timeout 1 s) is Ongoing until the coordinator aborts it."""
    return [init_pid("a", timeout_ms=1000), add_partitions("a", parts)]


def _every_request(who: str) -> list:
    return [
        add_partitions(who),
        add_partitions(who, v=4),
        add_partitions(who, v=4, verify_only=True),
        add_offsets(who),
        txn_offset_commit(who, OFFSETS),
        end_txn(who, commit=True),
        end_txn(who, commit=False),
    ]


SCENARIOS = [
    # -------------------------------------------------------------- transaction timeout
    Scenario("txn/timeout/zombie_requests",
             "After the coordinator aborted a timed-out transaction (epoch + 1), what the old producer gets for "
             "each request, a transactional produce included.", broker=TIMEOUT, steps=_timed_out() + [
        txn_produce("a", ["x"]),
        await_txn("CompleteAbort"),
        *_every_request("a"),
        txn_produce("a", ["y"], seq=1),
        describe_txn(),
    ]),
    Scenario("txn/timeout/zombie_init_expected_v4",
             "After a timeout abort, the old producer's InitProducerId v4 naming its epoch.", broker=TIMEOUT,
             steps=_timed_out() + [await_txn("CompleteAbort"), init_pid(**A), describe_txn()]),
    Scenario("txn/timeout/zombie_init_expected_v3",
             "After a timeout abort, the old producer's InitProducerId v3 naming its epoch.", broker=TIMEOUT,
             steps=_timed_out() + [await_txn("CompleteAbort"), init_pid(v=3, **A), describe_txn()]),
    Scenario("txn/timeout/init_plain_after",
             "After a timeout abort, a plain InitProducerId bumps the epoch once more.", broker=TIMEOUT,
             steps=_timed_out() + [await_txn("CompleteAbort"), init_pid(), describe_txn()]),
    Scenario("txn/timeout/empty_not_aborted",
             "A transactional id in Empty with a short timeout is left alone while an Ongoing one that started "
             "later is aborted.", broker=TIMEOUT, steps=[
        init_pid("e", txn="{tx2}", timeout_ms=1000),
        *_timed_out(),
        await_txn("CompleteAbort"),
        describe_txn("{tx2}"),
    ]),
    Scenario("txn/timeout/prepare_commit_not_aborted",
             "A transaction in PrepareCommit (held) past its timeout is not aborted while an Ongoing one that "
             "started later is.", broker=TIMEOUT, topics=HELD, steps=[
        init_pid("p", txn="{tx2}", timeout_ms=1000),
        add_partitions("p", "{h}", txn="{tx2}"),
        end_txn("p", commit=True, txn="{tx2}"),
        *_timed_out(),
        await_txn("CompleteAbort"),
        describe_txn("{tx2}"),
    ]),
    Scenario("txn/timeout/held_stays_prepare_abort",
             "A timed-out transaction whose abort markers cannot be written stays PrepareAbort with the bumped "
             "epoch; the old producer's EndTxn is fenced, every other request waits (CONCURRENT_TRANSACTIONS).", broker=TIMEOUT, topics=HELD,
             steps=_timed_out("{h}") + [
        await_txn("PrepareAbort", timeout_s=30),
        end_txn("a", commit=False),
        add_partitions("a"),
        init_pid(label="a new instance"),
        init_pid(label="a KIP-360 retry", **A),
        list_transactions(states=["PrepareAbort"]),
    ]),

    # -------------------------------------------------------------- transactional id expiry (Dead)
    Scenario("txn/dead/describe_list",
             "An idle transactional id expires: DescribeTransactions says TRANSACTIONAL_ID_NOT_FOUND and "
             "ListTransactions no longer lists it.", broker=EXPIRY, steps=[
        init_pid("a"),
        list_transactions(pids=[ref("a.producer_id")]),
        await_gone(),
        list_transactions(),
        list_transactions(pids=[ref("a.producer_id")]),
    ]),
    Scenario("txn/dead/after_commit_requests",
             "After a committed transaction's id expired, every request from its producer.", broker=EXPIRY, steps=[
        init_pid("a"),
        add_partitions("a"),
        end_txn("a", commit=True),
        await_txn("CompleteCommit"),
        await_gone(),
        *_every_request("a"),
        describe_txn(),
    ]),
    Scenario("txn/dead/after_abort",
             "An aborted transaction's id expires too; its producer's retried abort is then unknown.",
             broker=EXPIRY, steps=[
        init_pid("a"),
        add_partitions("a"),
        end_txn("a", commit=False),
        await_txn("CompleteAbort"),
        await_gone(),
        end_txn("a", commit=False),
    ]),
    Scenario("txn/dead/init_plain",
             "A plain InitProducerId for an expired id starts over: a new producer id at epoch 0.", broker=EXPIRY,
             steps=[init_pid("a"), await_gone(), init_pid(), describe_txn()]),
    Scenario("txn/dead/init_expected_v4",
             "InitProducerId v4 naming the expired id's producer id and epoch.", broker=EXPIRY,
             steps=[init_pid("a"), await_gone(), init_pid(**A), describe_txn()]),
    Scenario("txn/dead/init_expected_v3",
             "InitProducerId v3 naming the expired id's producer id and epoch.", broker=EXPIRY,
             steps=[init_pid("a"), await_gone(), init_pid(v=3, **A), describe_txn()]),
    Scenario("txn/dead/ongoing_not_expired",
             "An Ongoing transaction is never expired: it outlives an idle id initialized after it.",
             broker=EXPIRY, steps=[
        init_pid("a"),
        add_partitions("a"),
        init_pid("e", txn="{tx2}"),
        await_gone("{tx2}"),
        describe_txn(),
    ]),
    Scenario("txn/dead/prepare_commit_not_expired",
             "A transaction held in PrepareCommit is never expired.", broker=EXPIRY, topics=HELD, steps=[
        init_pid("a"),
        add_partitions("a", "{h}"),
        end_txn("a", commit=True),
        init_pid("e", txn="{tx2}"),
        await_gone("{tx2}"),
        describe_txn(),
    ]),
]
