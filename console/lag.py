"""True read_committed lag: the records a read_committed consumer at the committed offset would
still receive before the LSO, counted by reading them (Fetch, isolation read_committed), as
the consumer filters them: control records and aborted transactions' records are not counted.

The offsets between committed offset and LSO are not that count: each transaction leaves a
marker that takes an offset and is never delivered, and aborted records are skipped, so a
consumer that has read everything on a transactional topic still shows "HWM - committed" > 0.

A scan resumes where the last poll's stopped while the committed offset is unchanged (records
below the LSO are final), so it costs only what was appended since. Each poll reads at most
``budget`` bytes in all; a scan cut short by it is reported as "at least N"."""
from __future__ import annotations

from dataclasses import dataclass

from minikafka.protocol import records as rec
from minikafka.protocol.errors import ErrorCode

from .client import FETCH, Call, Cluster, error_name, fetch_body

PARTITION_BYTES = 1 << 20
BUDGET = 8 << 20
ROUNDS = 4


@dataclass
class Scan:
    next_offset: int
    count: int = 0
    error: str | None = None


@dataclass
class Lag:
    count: int
    exact: bool
    error: str | None = None


class LagScanner:
    def __init__(self, budget: int = BUDGET, partition_bytes: int = PARTITION_BYTES, rounds: int = ROUNDS):
        self.budget = budget
        self.partition_bytes = partition_bytes
        self.rounds = rounds
        self.scans: dict[tuple[str, int, int], Scan] = {}  # (topic, partition, committed) -> progress

    def run(self, cluster: Cluster, wanted: dict[tuple[str, int, int], tuple[int, int]]) -> dict:
        """``wanted``: (topic, partition, committed offset) -> (leader, LSO); returns the
        same keys -> ``Lag``."""
        scans = {}
        for key, (_, end) in wanted.items():
            s = self.scans.get(key)
            if s is None or s.next_offset > end or s.error:
                s = Scan(key[2])  # new, or the log was truncated below what was counted: again
            scans[key] = s
        self.scans = scans
        budget = self.budget
        for _ in range(self.rounds):
            pending: dict[tuple[str, int], tuple[str, int, int]] = {}
            for key, s in scans.items():
                if s.next_offset < wanted[key][1] and not s.error and key[:2] not in pending:
                    pending[key[:2]] = key  # one scan per partition and request
            if not pending or budget <= 0:
                break
            by_node: dict[int, list[tuple[str, int, int]]] = {}
            for tp, key in pending.items():
                by_node.setdefault(wanted[key][0], []).append((tp[0], tp[1], scans[key].next_offset))
            calls = [Call(node, FETCH, fetch_body(pos, 1, self.partition_bytes, budget))
                     for node, pos in by_node.items()]
            progressed = False
            for call in cluster.pipeline(calls):
                if call.error is not None or call.response.error_code:
                    text = str(call.error) if call.error else error_name(call.response.error_code)
                    for tp in pending:
                        if wanted[pending[tp]][0] == call.node:
                            scans[pending[tp]].error = text
                    continue
                for t in call.response.responses:
                    for p in t.partitions:
                        key = pending.get((t.topic, p.partition_index))
                        if key is None:
                            continue
                        s = scans[key]
                        if p.error_code:
                            s.error = ("committed offset below the log start: the consumer resets"
                                       if p.error_code == ErrorCode.OFFSET_OUT_OF_RANGE else error_name(p.error_code))
                            continue
                        data = p.records or b""
                        budget -= len(data)
                        aborted = [(a.first_offset, a.producer_id) for a in (p.aborted_transactions or [])]
                        before = s.next_offset
                        s.count, s.next_offset = count_delivered(data, aborted, s.next_offset, wanted[key][1], s.count)
                        progressed |= s.next_offset > before
            if not progressed:
                break
        return {key: Lag(s.count, s.next_offset >= wanted[key][1] and not s.error, s.error)
                for key, s in scans.items()}


def count_delivered(data, aborted: list[tuple[int, int]], start: int, end: int, count: int = 0) -> tuple[int, int]:
    """Add to ``count`` the records of one read_committed Fetch answer's batches a consumer
    delivers at offsets [start, end); returns (count, the offset after the last batch read).
    Kafka's consumer filtering (protocol/records.consumer_view), on batch headers: a batch is
    decoded only if it is a marker or only partly in range."""
    pending = sorted(aborted)
    aborting: set[int] = set()
    position = start
    for pos, h in rec.iter_batch_headers(data):
        last = h.last_offset
        if last < position:
            continue
        if h.base_offset >= end:
            break
        if h.has_producer_id:
            while pending and pending[0][0] <= last:
                aborting.add(pending.pop(0)[1])
        if h.is_control:
            _, records = rec.decode_batch(data, pos)
            if records and rec.parse_control_record(records[0])[0] == rec.ControlRecordType.ABORT:
                aborting.discard(h.producer_id)
        elif not (h.is_transactional and h.producer_id in aborting):
            if h.base_offset >= position and last < end:
                count += h.records_count
            else:
                _, records = rec.decode_batch(data, pos)
                count += sum(1 for r in records if position <= r.offset < end)
        position = last + 1
    return count, position
