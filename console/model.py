"""What one poll of the cluster saw (a ``Snapshot``, never changed once made), and the
HWM/LSO history behind the partitions chart."""
from __future__ import annotations

import threading
from array import array
from dataclasses import dataclass, field

OPEN_STATES = ("Ongoing", "PrepareCommit", "PrepareAbort", "PrepareEpochFence")


@dataclass
class Producer:
    """An active producer of a partition (DescribeProducers)."""
    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp: int
    coordinator_epoch: int
    txn_start_offset: int  # -1: no open transaction


@dataclass
class PartitionState:
    topic: str
    partition: int
    leader: int
    internal: bool
    hwm: int | None = None
    lso: int | None = None
    log_start: int | None = None
    error: str | None = None
    producers: list[Producer] | None = None  # None: not described
    producers_age_ms: int = 0  # how old the producers list is (described less often than pinned ones)

    @property
    def key(self) -> tuple[str, int]:
        return self.topic, self.partition

    @property
    def pinned(self) -> bool:
        return self.hwm is not None and self.lso is not None and self.lso < self.hwm

    @property
    def lso_lag(self) -> int:
        return self.hwm - self.lso if self.pinned else 0


@dataclass
class TxnInfo:
    """A transactional id as its coordinator describes it (DescribeTransactions), or as its
    last ``__transaction_state`` record says when it was not described (``source``)."""
    transactional_id: str
    state: str
    producer_id: int
    producer_epoch: int | None = None
    timeout_ms: int | None = None
    start_ms: int | None = None  # -1 or None: no transaction open
    partitions: list[tuple[str, int]] = field(default_factory=list)
    coordinator: int | None = None
    error: str | None = None
    source: str = "ListTransactions"

    @property
    def is_open(self) -> bool:
        return self.state in OPEN_STATES

    def age_ms(self, now_ms: int) -> int | None:
        return now_ms - self.start_ms if self.is_open and self.start_ms is not None and self.start_ms >= 0 else None


@dataclass
class OpenTxn:
    """An open transaction on one partition (a producer whose current transaction started at
    ``start_offset``), with the coordinator's view of it and KIP-664's verdict."""
    topic: str
    partition: int
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int
    start_offset: int
    last_timestamp: int
    hwm: int
    lso: int
    transactional_id: str | None = None
    txn: TxnInfo | None = None
    hanging: bool = False  # KIP-664: no coordinator will ever end it (seen on two polls running)
    reason: str = ""  # why it is (or is not yet) hanging

    @property
    def pins(self) -> bool:
        """It is the transaction the partition's LSO waits for."""
        return self.start_offset == self.lso

    @property
    def key(self) -> tuple[str, int, int, int]:
        return self.topic, self.partition, self.producer_id, self.start_offset

    def age_ms(self, now_ms: int) -> int:
        age = self.txn.age_ms(now_ms) if self.txn is not None else None
        return age if age is not None else now_ms - self.last_timestamp

    @property
    def timeout_ms(self) -> int | None:
        return self.txn.timeout_ms if self.txn is not None and self.txn.is_open else None


@dataclass
class GroupPartition:
    topic: str
    partition: int
    committed: int
    hwm: int | None
    lso: int | None
    lag: int | None  # read_uncommitted: HWM - committed
    committed_lag: int | None  # read_committed: records still to be delivered
    committed_lag_exact: bool = True  # False: "at least committed_lag" (the scan's bound)
    error: str | None = None


@dataclass
class Group:
    group_id: str
    group_type: str  # classic | consumer
    protocol_type: str
    state: str
    members: int | None
    partitions: list[GroupPartition] = field(default_factory=list)
    error: str | None = None

    @property
    def lag(self) -> int:
        return sum(p.lag or 0 for p in self.partitions)

    @property
    def committed_lag(self) -> int:
        return sum(p.committed_lag or 0 for p in self.partitions)

    @property
    def committed_lag_exact(self) -> bool:
        return all(p.committed_lag_exact for p in self.partitions)


@dataclass
class TimelineEntry:
    """One ``__transaction_state`` record of a transactional id (consecutive records of the
    same transaction and state, one per AddPartitionsToTxn, are merged)."""
    state: str  # Kafka's display name; "Deleted" for a tombstone
    time_ms: int  # the record's transaction_last_update_timestamp
    producer_id: int
    producer_epoch: int
    partitions: int
    offset: int
    start_ms: int = -1


@dataclass
class Snapshot:
    seq: int
    time_ms: int
    poll_ms: float
    bootstrap: str
    cluster_id: str | None = None
    controller: int | None = None
    brokers: dict[int, str] = field(default_factory=dict)
    partitions: dict[tuple[str, int], PartitionState] = field(default_factory=dict)
    open_txns: list[OpenTxn] = field(default_factory=list)
    transactions: dict[str, TxnInfo] = field(default_factory=dict)
    timelines: dict[str, tuple[TimelineEntry, ...]] = field(default_factory=dict)
    timelines_error: str | None = None
    groups: list[Group] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def pinned(self) -> list[PartitionState]:
        return sorted((p for p in self.partitions.values() if p.pinned), key=lambda p: (-p.lso_lag, p.key))

    @property
    def hanging(self) -> list[OpenTxn]:
        return [t for t in self.open_txns if t.hanging]

    def pins_of(self, key: tuple[str, int]) -> list[OpenTxn]:
        return [t for t in self.open_txns if (t.topic, t.partition) == key]

    def open_txn(self, topic: str, partition: int, start_offset: int) -> OpenTxn | None:
        for t in self.open_txns:
            if (t.topic, t.partition, t.start_offset) == (topic, partition, start_offset):
                return t
        return None


class History:
    """HWM and LSO of each partition at each of the last ``size`` polls: a ring of samples in
    arrays (8 bytes a value), for at most ``max_partitions`` partitions."""

    def __init__(self, size: int = 300, max_partitions: int = 4000):
        self.size = size
        self.max_partitions = max_partitions
        self.times = array("q", [0] * size)
        self.count = 0
        self.series: dict[tuple[str, int], tuple[array, array]] = {}
        self._lock = threading.Lock()

    def add(self, time_ms: int, partitions: dict[tuple[str, int], PartitionState]) -> None:
        i = self.count % self.size
        with self._lock:
            self.times[i] = time_ms
            for key, p in partitions.items():
                s = self.series.get(key)
                if s is None:
                    if len(self.series) >= self.max_partitions:
                        continue
                    s = self.series[key] = (array("q", [-1] * self.size), array("q", [-1] * self.size))
                s[0][i] = -1 if p.hwm is None else p.hwm
                s[1][i] = -1 if p.lso is None else p.lso
            gone = self.series.keys() - partitions.keys()
            for key in gone:
                s = self.series[key]
                s[0][i] = s[1][i] = -1
            self.count += 1
            if self.count % self.size == 0:  # partitions absent for a whole ring: forgotten
                for key in gone:
                    if max(self.series[key][0]) < 0:
                        del self.series[key]

    def of(self, key: tuple[str, int]) -> dict[str, list]:
        """{"t": [seconds], "hwm": [...], "lso": [...]}, oldest first (null where unknown)."""
        with self._lock:
            n = min(self.count, self.size)
            start = self.count - n
            idx = [(start + k) % self.size for k in range(n)]
            s = self.series.get(key)
            out = {"t": [self.times[i] / 1000 for i in idx], "hwm": [], "lso": []}
            if s is not None:
                out["hwm"] = [None if s[0][i] < 0 else s[0][i] for i in idx]
                out["lso"] = [None if s[1][i] < 0 else s[1][i] for i in idx]
            else:
                out["hwm"] = out["lso"] = [None] * n
            return out
