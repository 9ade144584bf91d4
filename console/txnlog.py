"""Transaction timelines: the ``__transaction_state`` records of each transactional id, read
with Fetch from where the last poll stopped and decoded with the coordinator's own record
decoder (coordinator/transaction/state.py). Memory is bounded: the last ``MAX_ENTRIES``
transitions of at most ``MAX_IDS`` ids (those written to least recently are forgotten)."""
from __future__ import annotations

from collections import OrderedDict

from minikafka.coordinator.transaction.state import TxnState, decode_key, decode_value
from minikafka.protocol import records as rec
from minikafka.protocol.errors import ErrorCode

from .client import FETCH, Call, error_name, fetch_body
from .model import TimelineEntry, TxnInfo

TOPIC = "__transaction_state"
MAX_ENTRIES = 32
MAX_IDS = 20_000
PARTITION_BYTES = 1 << 20  # read per partition and poll: a long log is caught up over several polls
POLL_BYTES = 4 << 20


class TxnLogReader:
    def __init__(self, max_ids: int = MAX_IDS, max_entries: int = MAX_ENTRIES):
        self.max_ids = max_ids
        self.max_entries = max_entries
        self.positions: dict[int, int] = {}  # partition -> next offset to read
        self.timelines: OrderedDict[str, tuple[TimelineEntry, ...]] = OrderedDict()
        self.latest: dict[str, TxnInfo] = {}  # the last record's view of each id
        self.error: str | None = None

    def calls(self, leaders: dict[int, int]) -> list[Call]:
        """One Fetch per leader of ``__transaction_state`` partitions (``leaders``:
        partition -> broker id)."""
        by_node: dict[int, list[tuple[str, int, int]]] = {}
        for p, leader in sorted(leaders.items()):
            if leader >= 0:
                by_node.setdefault(leader, []).append((TOPIC, p, self.positions.get(p, 0)))
        return [Call(node, FETCH, fetch_body(pos, 0, PARTITION_BYTES, POLL_BYTES), tag="txnlog")
                for node, pos in by_node.items()]

    def apply(self, calls: list[Call], log_starts: dict[int, int | None]) -> None:
        errors = []
        for call in calls:
            if call.error is not None:
                errors.append(str(call.error))
                continue
            if call.response.error_code:
                errors.append(error_name(call.response.error_code))
                continue
            for t in call.response.responses:
                for p in t.partitions:
                    if p.error_code == ErrorCode.OFFSET_OUT_OF_RANGE:
                        start = log_starts.get(p.partition_index)
                        if start is None or start < 0:
                            start = p.log_start_offset if p.log_start_offset >= 0 else 0
                        self.positions[p.partition_index] = start
                    elif p.error_code:
                        errors.append(f"{TOPIC}-{p.partition_index}: {error_name(p.error_code)}")
                    elif p.records:
                        self._read(p.partition_index, p.records)
        self.error = "; ".join(sorted(set(errors))) or None

    def _read(self, partition: int, data) -> None:
        position = self.positions.get(partition, 0)
        for pos, h in rec.iter_batch_headers(data):
            if h.last_offset < position:
                continue
            if not h.is_control:
                _, records = rec.decode_batch(data, pos)
                for r in records:
                    if r.offset >= position and r.key is not None:
                        self._record(r.offset, r.key, r.value)
            position = h.last_offset + 1
        self.positions[partition] = position

    def _record(self, offset: int, key, value) -> None:
        try:
            tid = decode_key(bytes(key))
            if tid is None:
                return
            md = decode_value(tid, None if value is None else bytes(value))
        except (ValueError, KeyError, IndexError):
            return  # a record this version cannot read: left out of the timeline
        if md is None:
            entry = TimelineEntry("Deleted", -1, -1, -1, 0, offset)
            self.latest.pop(tid, None)
        else:
            state = TxnState(md.state).display
            entry = TimelineEntry(state, md.txn_last_update_ms, md.producer_id, md.producer_epoch,
                                  len(md.partitions), offset, md.txn_start_ms)
            self.latest[tid] = TxnInfo(tid, state, md.producer_id, md.producer_epoch, md.txn_timeout_ms,
                                       md.txn_start_ms, md.sorted_partitions(), source="__transaction_state")
        line = self.timelines.pop(tid, None)
        if line is None:
            line = ()
            while len(self.timelines) >= self.max_ids:
                old, _ = self.timelines.popitem(last=False)
                self.latest.pop(old, None)
        last = line[-1] if line else None
        if (last is not None and last.state == entry.state == "Ongoing" and last.start_ms == entry.start_ms
                and (last.producer_id, last.producer_epoch) == (entry.producer_id, entry.producer_epoch)):
            line = line[:-1] + (entry,)  # another AddPartitionsToTxn of the same transaction
        else:
            line = (line + (entry,))[-self.max_entries:]
        self.timelines[tid] = line  # a new tuple: snapshots share the old ones

    def snapshot(self) -> dict[str, tuple[TimelineEntry, ...]]:
        return dict(self.timelines)

