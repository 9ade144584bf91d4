"""The transaction coordinator across a broker restart (clean shutdown and kill -9) in the
states where it matters: Ongoing, PrepareCommit held, CompleteCommit, after an epoch fence,
and after a KIP-360 epoch bump. Each scenario gets a broker of its own."""
from ..dsl import (Scenario, Topic, add_partitions, await_txn, describe_txn, end_txn, fetch, init_pid,
                   list_transactions, ref, restart, txn_produce)

HELD = {"t": Topic(), "h": Topic(held=True)}
A = {"pid": ref("a.producer_id"), "epoch": ref("a.producer_epoch")}
KINDS = {"clean": False, "kill": True}

SCENARIOS = []
for kind, kill in KINDS.items():
    how = "kill -9" if kill else "a clean restart"
    SCENARIOS += [
        Scenario(f"txn/restart/ongoing_{kind}",
                 f"An Ongoing transaction survives {how} with its epoch and partitions, and then commits.", steps=[
            init_pid("a"),
            add_partitions("a"),
            txn_produce("a", ["x"]),
            restart(kill=kill),
            describe_txn(),
            end_txn("a", commit=True),
            await_txn("CompleteCommit"),
            fetch(),
        ]),
        Scenario(f"txn/restart/prepare_commit_held_{kind}",
                 f"A transaction held in PrepareCommit is still PrepareCommit after {how}: its retry, the "
                 f"opposite result and the next transaction all get CONCURRENT_TRANSACTIONS.", topics=HELD, steps=[
            init_pid("a"),
            add_partitions("a", "{h}"),
            end_txn("a", commit=True),
            restart(kill=kill),
            describe_txn(),
            end_txn("a", commit=True, label="retry"),
            end_txn("a", commit=False, label="opposite"),
            add_partitions("a"),
            init_pid(label="a new instance"),
            list_transactions(states=["PrepareCommit"]),
        ]),
        Scenario(f"txn/restart/complete_commit_{kind}",
                 f"After {how} a completed commit answers its retry with NONE and the next transaction runs "
                 f"on the same epoch.", steps=[
            init_pid("a"),
            add_partitions("a"),
            txn_produce("a", ["x"]),
            end_txn("a", commit=True),
            await_txn("CompleteCommit"),
            restart(kill=kill),
            describe_txn(),
            end_txn("a", commit=True, label="retry"),
            end_txn("a", commit=False, label="opposite"),
            add_partitions("a"),
            txn_produce("a", ["y"], seq=1),
            end_txn("a", commit=False),
            await_txn("CompleteAbort"),
            fetch(),
        ]),
        Scenario(f"txn/restart/after_fence_{kind}",
                 f"After an epoch fence and {how}: the fenced producer stays fenced (its KIP-360 retry too), a "
                 f"new instance bumps once more.", steps=[
            init_pid("a"),
            add_partitions("a"),
            init_pid(label="another instance fences a"),
            await_txn("CompleteAbort"),
            restart(kill=kill),
            describe_txn(),
            end_txn("a", commit=False),
            init_pid(label="a's KIP-360 retry", **A),
            init_pid(label="a new instance"),
            describe_txn(),
        ]),
    ]

SCENARIOS += [
    Scenario("txn/restart/fence_held_kill",
             "An epoch fence held in PrepareAbort (markers cannot be written) is still PrepareAbort with the "
             "bumped epoch after kill -9.", topics=HELD, steps=[
        init_pid("a"),
        add_partitions("a", "{h}"),
        init_pid(label="another instance fences a"),
        restart(kill=True),
        describe_txn(),
        init_pid(label="its retry"),
        end_txn("a", commit=False),
    ]),
    Scenario("txn/restart/kip360_previous_epoch_kill",
             "The previous epoch of a KIP-360 bump is not in the transaction log: after kill -9 a retry naming "
             "it is fenced instead of answered with the current epoch.", steps=[
        init_pid("a"),
        init_pid("a2", **A),
        init_pid(label="retry before the restart", **A),
        restart(kill=True),
        init_pid(label="retry after the restart", **A),
        describe_txn(),
    ]),
]
