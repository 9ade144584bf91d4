"""Two-phase commit (KIP-939) as far as Kafka 4.1 serves it: InitProducerId v6 is an
unstable version there (advertised only with unstable.api.versions.enable), ``enable_2pc``
needs transaction.two.phase.commit.enable, and ``keep_prepared_txn`` is refused."""
from ..dsl import TV2, Scenario, await_txn, call, describe_txn, end_txn, fetch, txn_produce

UNSTABLE = {"unstable.api.versions.enable": "true"}
TWO_PC = {**UNSTABLE, "transaction.two.phase.commit.enable": "true"}


def init6(save=None, enable_2pc=False, keep_prepared=False, **kw):
    return call(22, 6, {"transactional_id": "{tx}", "transaction_timeout_ms": 60000, "producer_id": -1,
                        "producer_epoch": -1, "enable2_pc": enable_2pc, "keep_prepared_txn": keep_prepared},
                save=save, **kw)


SCENARIOS = [
    Scenario("kip939/v6_not_advertised", "Without unstable.api.versions.enable InitProducerId v6 is not served: "
             "the connection is closed.", features=TV2, steps=[
        init6("a"),
    ]),
    Scenario("kip939/enable_2pc_refused", "InitProducerId v6 with enable_2pc on a broker without "
             "transaction.two.phase.commit.enable is refused; keep_prepared_txn is refused; a plain v6 works.",
             features=TV2, broker=UNSTABLE, steps=[
        init6(enable_2pc=True),
        init6(keep_prepared=True),
        init6(enable_2pc=True, keep_prepared=True),
        init6("a"),
        describe_txn(),
    ]),
    Scenario("kip939/enable_2pc", "With transaction.two.phase.commit.enable: enable_2pc gets a transaction "
             "without timeout that commits as any V2 transaction; keep_prepared_txn is still refused.",
             features=TV2, broker=TWO_PC, steps=[
        init6("a", enable_2pc=True),
        describe_txn(),
        txn_produce("a", ["x"], 0, v=12),
        init6(enable_2pc=True, keep_prepared=True),
        describe_txn(),
        end_txn("a", commit=True, v=5),
        await_txn("CompleteCommit"),
        fetch(),
    ]),
]
