"""broker/transaction_runtime.py: the order in which it runs what the transaction coordinator
returns. A commit point (Prepare*) whose append reached `__transaction_state`'s flush.messages
is fsynced before it takes effect: before EndTxn is answered and before any marker can be
written, so a power cut cannot undo a decision a client was told about."""
from __future__ import annotations

import itertools

import trio

from minikafka.broker.transaction_runtime import TransactionRuntime
from minikafka.coordinator.transaction import TransactionCoordinator
from minikafka.coordinator.transaction.state import TxnState


class FakeLog:
    """A `__transaction_state` partition whose every append reaches flush.messages (1)."""

    def __init__(self):
        self.log_end_offset = 0
        self.recovery_point = 0

    def append(self, data: bytes, origin: str):
        self.log_end_offset += 1
        return type("Appended", (), {"flush_needed": True})()


class FakeReplicas:
    """The ReplicaManager's part the runtime uses for `__transaction_state`."""

    def __init__(self):
        self.logs_by_partition: dict[int, FakeLog] = {}

    def get_log(self, topic: str, partition: int) -> FakeLog:
        return self.logs_by_partition.setdefault(partition, FakeLog())

    def append_internal(self, topic: str, partition: int, batches: bytes):
        return self.get_log(topic, partition).append(batches, origin="coordinator")

    def log_dir_failed(self, error) -> None:
        raise AssertionError(f"log dir failed: {error}")


class Ids:
    def __init__(self):
        self._ids = itertools.count(1000)

    def next_id(self) -> int:
        return next(self._ids)


class RecordingFsync:
    """The fsync batcher: records the transaction's state while each fsync is in flight."""

    def __init__(self, coordinator: TransactionCoordinator, tid: str):
        self.coordinator, self.tid = coordinator, tid
        self.seen: list[tuple[TxnState, int]] = []

    async def flush(self, lg: FakeLog, upto: int) -> None:
        self.seen.append((self.coordinator.txns[self.tid].state, upto))
        await trio.lowlevel.checkpoint()
        lg.recovery_point = upto


def test_a_commit_point_is_durable_before_it_takes_effect():
    coordinator = TransactionCoordinator(Ids(), transaction_version=1)
    runtime = TransactionRuntime(coordinator, FakeReplicas(), topics=None)
    fsync = runtime.fsync = RecordingFsync(coordinator, "t")

    async def main():
        pid, epoch = await runtime.init_producer_id("t", 60000, -1, -1, False, False)
        runtime.add_partitions("t", pid, epoch, [("a", 0)], 0)
        fsync.seen.clear()   # (every append here reaches flush.messages; the commit point is the one that matters)
        await runtime.end_txn("t", pid, epoch, True, False)

    trio.run(main)
    state_log = runtime.replicas.get_log("__transaction_state", coordinator.state_partition("t"))
    # fsynced up to the Prepare record while the transaction was still Ongoing, then decided
    assert fsync.seen == [(TxnState.ONGOING, state_log.log_end_offset)]
    assert coordinator.txns["t"].state == TxnState.PREPARE_COMMIT
