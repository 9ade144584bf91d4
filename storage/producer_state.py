"""Producer state (idempotence, transactions): Kafka's ``ProducerStateManager``.

STUB. The next task fills this in: per-producer entries (epoch, last five
batch sequences/offsets for duplicate detection, coordinator epoch, current
transaction first offset), ``.snapshot`` files, ongoing-transaction tracking
for the LSO, aborted-transaction index (``.txnindex``) updates on markers, and
producer expiry (``producer.id.expiration.ms``).

:class:`storage.log.UnifiedLog` already calls every hook below at the right
moment; they are no-ops here.
"""
from __future__ import annotations

from typing import NamedTuple

from protocol.records import BatchHeader


class DuplicateBatch(NamedTuple):
    """Returned by :meth:`ProducerStateManager.validate_batch` when the batch was
    already appended (retry): the append is skipped and these offsets returned."""
    first_offset: int
    last_offset: int
    log_append_time_ms: int


class ProducerStateManager:
    def __init__(self, log_dir: str, topic: str, partition: int):
        self.log_dir = log_dir
        self.topic = topic
        self.partition = partition

    # --- append path --------------------------------------------------------
    def validate_batch(self, header: BatchHeader, *, is_from_client: bool, now_ms: int) -> DuplicateBatch | None:
        """Called before the append for every batch with producer_id >= 0, after the
        format checks and before offsets are assigned (``header.base_offset`` is the
        producer's, not yet the log's). Raise ``KafkaError`` (e.g.
        OUT_OF_ORDER_SEQUENCE_NUMBER, INVALID_PRODUCER_EPOCH, INVALID_TXN_STATE) to
        reject the whole append; return a :class:`DuplicateBatch` for a retried batch.
        """
        return None

    def on_batch_appended(self, header: BatchHeader, first_offset: int, last_offset: int,
                          position: int, now_ms: int) -> None:
        """Called after the write for every appended batch with producer_id >= 0
        (``first_offset``/``last_offset`` are the assigned offsets, ``position``
        the byte position of the batch in the active segment)."""

    def has_ongoing_transaction(self, producer_id: int) -> bool:
        return False

    def active_producers(self) -> list:
        """Entries with producer_id, producer_epoch, last_sequence, last_timestamp,
        coordinator_epoch, current_txn_first_offset (DescribeProducers)."""
        return []

    def aborted_transactions(self, fetch_offset: int, upper_bound_offset: int) -> list[tuple[int, int]]:
        """``[(producer_id, first_offset)]`` from the segments' ``.txnindex`` files."""
        return []

    def remove_expired_producers(self, now_ms: int, expiration_ms: int) -> None:
        """Drop producers idle longer than ``producer.id.expiration.ms`` (no open transaction)."""

    def first_unstable_offset(self) -> int | None:
        """First offset of the earliest ongoing transaction (caps the LSO), or None."""
        return None

    # --- recovery / lifecycle -------------------------------------------------
    def on_batch_recovered(self, header: BatchHeader) -> None:
        """Called for each batch with producer_id >= 0 replayed during log recovery."""

    def load(self, log_start_offset: int, log_end_offset: int) -> None:
        """Called once the log is recovered (load the latest snapshot, replay the tail)."""

    def truncate(self, log_start_offset: int, log_end_offset: int) -> None:
        """Called when the log start offset advances or the log is truncated."""

    def take_snapshot(self, log_end_offset: int) -> None:
        """Called on segment roll and on close (write ``<offset>.snapshot``)."""

    def close(self) -> None:
        pass
