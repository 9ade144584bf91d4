"""What the transaction coordinator returns instead of writing: a request's decision (the
`__transaction_state` records to append, whether they are a commit point, the answer, the
transactions whose markers follow once it applies), and the markers a marker round sends.

The broker's runtime (broker/transaction_runtime.py) appends the records, makes a commit
point durable when the flush settings ask, then hands the result back to
`TransactionCoordinator.apply`; only then does it take effect in memory.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from minikafka.protocol.errors import ErrorCode

from .state import NO_PRODUCER_EPOCH, NO_PRODUCER_ID, TransactionMetadata


@dataclass
class TxnResult:
    # (__transaction_state partition, key, value) in order, each record its own batch
    records: list[tuple[int, bytes, bytes | None]] = field(default_factory=list)
    # a Prepare* (the commit point): durable before it applies when the partition's flush
    # settings ask for an fsync; until then its transaction is pending (CONCURRENT_TRANSACTIONS)
    commit_point: bool = False
    # the answer's producer id and epoch (InitProducerId, EndTxn v5)
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    # the answer's error once the result applied (InitProducerId fencing an open transaction)
    error: ErrorCode | None = None
    # (metadata, its new state) in order; the transactions decided (markers follow); ids removed
    transitions: list[tuple[TransactionMetadata, TransactionMetadata]] = field(default_factory=list)
    decided: list[TransactionMetadata] = field(default_factory=list)
    expired: list[str] = field(default_factory=list)


class Marker(NamedTuple):
    """A COMMIT/ABORT control batch to write to a partition; ``state_partition``: the
    transaction's `__transaction_state` partition (its leader epoch is the coordinator epoch)."""
    topic: str
    partition: int
    producer_id: int
    producer_epoch: int
    commit: bool
    state_partition: int
