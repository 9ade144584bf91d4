"""The transaction coordinator's states against every request that can reach them (issue 13).

One scenario per (state, request): a prefix brings ``{tx}`` into the state, one request
follows, then DescribeTransactions shows where it left the transaction (after waiting for
markers or an abort it set off, for transactions without held partitions).

Every prefix starts with three InitProducerId calls, so that the producer ``a`` holds
epoch 2, its previous epoch (the one a KIP-360 retry may name) is 1 and epoch 0 is stale:
``a0`` plain init (epoch 0), ``a1`` plain init by another instance (epoch 1, no previous
epoch), ``a`` init naming ``a1``'s id and epoch (epoch 2, previous epoch 1).

States (Kafka's TransactionMetadata under transaction.version=1):
- empty, ongoing ({t} added), complete_commit, complete_abort;
- prepare_commit, prepare_abort: the transaction holds only a held partition, whose
  markers cannot be written, so it stays there;
- epoch_fenced: another instance's InitProducerId while Ongoing. Kafka moves the
  transaction to PrepareEpochFence, an in-memory pending state that is never written
  nor listed, bumps the epoch and aborts (PrepareAbort, then CompleteAbort with epoch 3);
  the requests come from ``a``, now a fenced zombie;
- epoch_fenced_held: the same with a held partition: it stays PrepareAbort, epoch 3.
Dead (an expired transactional id) is in txn_expiry.py.
"""
from ..dsl import (Scenario, Topic, add_offsets, add_partitions, await_settled, await_txn, describe_txn, end_txn,
                   init_pid, list_transactions, ref, txn_offset_commit)

INITS = [
    init_pid("a0"),
    init_pid("a1"),
    init_pid("a", pid=ref("a1.producer_id"), epoch=ref("a1.producer_epoch")),
]

HELD_TOPICS = {"t": Topic(), "h": Topic(held=True)}

# name -> (what it is, steps after INITS, held?, its state's name in Kafka)
STATES = {
    "empty": ("Empty", [], False, "Empty"),
    "ongoing": ("Ongoing with {t} added", [add_partitions("a")], False, "Ongoing"),
    "prepare_commit": ("PrepareCommit (a held partition)",
                       [add_partitions("a", "{h}"), end_txn("a", commit=True)], True, "PrepareCommit"),
    "prepare_abort": ("PrepareAbort (a held partition)",
                      [add_partitions("a", "{h}"), end_txn("a", commit=False)], True, "PrepareAbort"),
    "complete_commit": ("CompleteCommit",
                        [add_partitions("a"), end_txn("a", commit=True), await_txn("CompleteCommit")], False,
                        "CompleteCommit"),
    "complete_abort": ("CompleteAbort",
                       [add_partitions("a"), end_txn("a", commit=False), await_txn("CompleteAbort")], False,
                       "CompleteAbort"),
    "epoch_fenced": ("CompleteAbort after another instance fenced the Ongoing transaction (via PrepareEpochFence)",
                     [add_partitions("a"), init_pid(label="another instance fences a while Ongoing"),
                      await_txn("CompleteAbort")], False, "CompleteAbort"),
    "epoch_fenced_held": ("PrepareAbort after another instance fenced the Ongoing transaction (via "
                          "PrepareEpochFence) with a held partition",
                          [add_partitions("a", "{h}"), init_pid(label="another instance fences a while Ongoing")],
                          True, "PrepareAbort"),
}

A = {"pid": ref("a.producer_id"), "epoch": ref("a.producer_epoch")}
STALE = {"pid": ref("a.producer_id"), "epoch": ref("a.producer_epoch") - 2}
OTHER_PID = {"pid": ref("o.producer_id"), "epoch": ref("a.producer_epoch")}
OTHER = init_pid("o", txn="{tx2}", label="another transactional id's producer id")


def _each_request(who: dict) -> list:
    """Every request but InitProducerId as producer ``who`` (none of them changes the state
    when it is refused)."""
    return [
        add_partitions(None, **who),
        add_partitions(None, v=4, **who),
        add_partitions(None, v=4, verify_only=True, **who),
        add_offsets(None, **who),
        txn_offset_commit(None, {("{t}", 0): 0}, **who),
        end_txn(None, commit=True, **who),
        end_txn(None, commit=False, **who),
    ]


# name -> (what it is, steps)
REQUESTS = {
    "init_plain": ("InitProducerId v4 without a producer id (a new instance)", [init_pid("r")]),
    "init_current_v4": ("InitProducerId v4 naming a's id and current epoch", [init_pid("r", **A)]),
    "init_current_v3": ("InitProducerId v3 naming a's id and current epoch", [init_pid("r", v=3, **A)]),
    "init_previous_epoch": ("InitProducerId v4 naming a's id and previous epoch (a KIP-360 retry)",
                            [init_pid("r", pid=ref("a.producer_id"), epoch=ref("a.producer_epoch") - 1)]),
    "init_stale_epoch": ("InitProducerId v4 naming a's id and a stale epoch", [init_pid("r", **STALE)]),
    "init_wrong_pid": ("InitProducerId v4 naming another transactional id's producer id",
                       [OTHER, init_pid("r", **OTHER_PID)]),
    "add_partitions_v3": ("AddPartitionsToTxn v3 of {t}", [add_partitions("a")]),
    "add_partitions_v4": ("AddPartitionsToTxn v4 (verify_only false) of {t}", [add_partitions("a", v=4)]),
    "verify_v4": ("AddPartitionsToTxn v4 verify_only of {t}", [add_partitions("a", v=4, verify_only=True)]),
    "add_offsets": ("AddOffsetsToTxn", [add_offsets("a")]),
    "txn_offset_commit": ("TxnOffsetCommit without AddOffsetsToTxn", [txn_offset_commit("a", {("{t}", 0): 0})]),
    "end_commit": ("EndTxn commit", [end_txn("a", commit=True)]),
    "end_abort": ("EndTxn abort", [end_txn("a", commit=False)]),
    "stale_epoch": ("every other request with a stale epoch", _each_request(STALE)),
    "wrong_pid": ("every other request with another transactional id's producer id",
                  [OTHER] + _each_request(OTHER_PID)),
}


def _scenario(state: str, request: str) -> Scenario:
    what, prefix, held, _ = STATES[state]
    req_doc, steps = REQUESTS[request]
    settle = describe_txn() if held else await_settled()
    return Scenario(f"txn/state/{state}/{request}", f"{req_doc} in {what}, and the state it leaves.",
                    topics=HELD_TOPICS if held else {"t": Topic()},
                    steps=INITS + prefix + steps + [settle])


def _listing(state: str) -> Scenario:
    what, prefix, held, name = STATES[state]
    other = "Ongoing" if name != "Ongoing" else "Empty"
    return Scenario(f"txn/state/{state}/list_describe",
                    f"DescribeTransactions and ListTransactions (no filter, its state, another state, its "
                    f"producer id) in {what}.",
                    topics=HELD_TOPICS if held else {"t": Topic()},
                    steps=INITS + prefix + [
                        describe_txn(),
                        list_transactions(),
                        list_transactions(states=[name]),
                        list_transactions(states=[other]),
                        list_transactions(pids=[ref("a.producer_id")]),
                    ])


SCENARIOS = [_scenario(s, r) for s in STATES for r in REQUESTS] + [_listing(s) for s in STATES]
