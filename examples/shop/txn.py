"""Transactional calls with deadlines (a guard against a kafka-python wedge)."""
from __future__ import annotations


class StuckClientError(Exception):
    """A transactional call did not finish in time (the client is wedged)."""


def bounded(producer, what: str, timeout_s: float, *args) -> None:
    """``producer.<what>(*args)`` with a deadline.

    kafka-python's ``send_offsets_to_transaction`` / ``commit_transaction`` /
    ``abort_transaction`` wait without a timeout, and kafka-python 3.0.12 can
    drop a transactional request for good: in ``Sender._maybe_send_transactional_request``
    ``target_node`` is assigned the coordinator before ``await_ready`` *raises*
    (connection refused while the broker is down), so the ``except`` branch
    looks the coordinator up again but the final ``if target_node is None:
    retry(handler)`` does not re-enqueue the AddOffsetsToTxn/EndTxn request;
    the caller then waits forever on a request that no longer exists.
    Waiting on the request's result with a deadline turns that into an error
    the service recovers from by rebuilding its clients: the new producer's
    ``init_transactions`` fences the old one and settles the abandoned
    transaction (and the consumer re-reads from the committed offsets).
    """
    tm = getattr(producer, "_transaction_manager", None)
    sender = getattr(producer, "_sender", None)
    start = {"send_offsets_to_transaction": "send_offsets_to_transaction",
             "commit_transaction": "begin_commit",
             "abort_transaction": "begin_abort"}[what]
    if tm is None or sender is None or not hasattr(tm, start):  # other client versions
        getattr(producer, what)(*args)
        return
    result = getattr(tm, start)(*args)
    sender.wakeup()
    if not result.wait(timeout_ms=timeout_s * 1000):
        raise StuckClientError(f"{what} did not complete within {timeout_s:.0f}s")
