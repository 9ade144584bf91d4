"""First scenarios: a commit, an abort, a held commit, a restart."""
from ..dsl import (Scenario, Topic, add_partitions, await_txn, describe_producers, describe_txn, end_txn, fetch,
                   init_pid, list_offsets, restart, txn_produce)

SCENARIOS = [
    Scenario("smoke/commit_then_read", "A transaction over one partition commits; read_committed sees it.", steps=[
        init_pid("a"),
        add_partitions("a"),
        txn_produce("a", ["x", "y"]),
        fetch(),
        end_txn("a", commit=True),
        await_txn("CompleteCommit"),
        fetch(),
        list_offsets(),
        describe_producers(),
    ]),
    Scenario("smoke/held_commit", "Markers cannot be written: the transaction stays PrepareCommit.",
             topics={"t": Topic(), "h": Topic(held=True)}, steps=[
        init_pid("a"),
        add_partitions("a", [("{t}", 0), ("{h}", 0)]),
        txn_produce("a", ["x"]),
        end_txn("a", commit=True),
        # {t}'s marker is written, {h}'s never: wait until only {h} is left (Kafka drops a
        # partition from the transaction once its marker is written)
        describe_txn(until={"transaction_states.0.topics.1": "<absent>"}),
        init_pid("b"),
        add_partitions("a"),
        end_txn("a", commit=True),
        end_txn("a", commit=False),
    ]),
    Scenario("smoke/restart_open_txn", "Kill -9 with a transaction open; it is still open after restart.", steps=[
        init_pid("a"),
        add_partitions("a"),
        txn_produce("a", ["x"]),
        restart(kill=True),
        describe_txn(),
        fetch(),
        end_txn("a", commit=False),
        await_txn("CompleteAbort"),
        fetch(isolation=0),
    ]),
]

SCENARIOS += [
    Scenario("smoke/timeout_aborts", "A transaction older than its timeout is aborted by the coordinator, "
             "which bumps the epoch.", broker={"transaction.abort.timed.out.transaction.cleanup.interval.ms": "200"},
             steps=[
        init_pid("a", timeout_ms=1000),
        add_partitions("a"),
        txn_produce("a", ["x"]),
        await_txn("CompleteAbort"),
        end_txn("a", commit=True),
        fetch(isolation=0),
    ]),
    Scenario("smoke/clean_restart_epochs", "Clean restart: leader and coordinator epochs.", steps=[
        init_pid("a"),
        add_partitions("a"),
        txn_produce("a", ["x"]),
        end_txn("a"),
        await_txn("CompleteCommit"),
        restart(),
        add_partitions("a"),
        txn_produce("a", ["y"], seq=1),
        end_txn("a"),
        await_txn("CompleteCommit"),
        fetch(isolation=0),
        list_offsets(),
    ]),
]
