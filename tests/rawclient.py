"""Test conveniences on top of minikafka.admin.wire.WireClient, for exact frames that
real clients never send (duplicates, gaps, stale epochs, malformed input)."""
from __future__ import annotations

import time

from minikafka.admin.wire import WireClient
from minikafka.protocol import records as rec


class RawClient(WireClient):
    # ---------------------------------------------------------- conveniences
    def produce(self, topic: str, partition: int, batch: bytes, acks: int = -1, version: int = 9,
                transactional_id: str | None = None):
        body = {"transactional_id": transactional_id, "acks": acks, "timeout_ms": 10000,
                "topic_data": [{"name": topic, "partition_data": [{"index": partition, "records": batch}]}]}
        resp = self.request(0, version, body)
        return resp.responses[0].partition_responses[0]

    def fetch(self, topic: str, partition: int, offset: int, isolation: int = 0, max_bytes: int = 1 << 20,
              max_wait_ms: int = 0, version: int = 12):
        body = {"replica_id": -1, "max_wait_ms": max_wait_ms, "min_bytes": 1, "max_bytes": max_bytes,
                "isolation_level": isolation, "session_id": 0, "session_epoch": -1,
                "topics": [{"topic": topic, "partitions": [{"partition": partition, "fetch_offset": offset,
                                                              "partition_max_bytes": max_bytes,
                                                              "current_leader_epoch": -1, "log_start_offset": -1}]}]}
        resp = self.request(1, version, body)
        return resp.responses[0].partitions[0]

    def fetch_all(self, topic: str, partition: int, isolation: int = 0, start: int = 0):
        """(partition response of the last fetch, [(BatchHeader, [Record])]) from `start` to the end."""
        batches, offset = [], start
        while True:
            p = self.fetch(topic, partition, offset, isolation)
            assert p.error_code == 0, p
            data = p.records or b""
            if not data:
                return p, batches
            for pos, h in rec.iter_batch_headers(data):
                if h.last_offset < offset:
                    continue
                batches.append(rec.decode_batch(data[pos:pos + h.size]))
                offset = h.last_offset + 1

    def list_offset(self, topic: str, partition: int, timestamp: int = -1, isolation: int = 0) -> int:
        body = {"replica_id": -1, "isolation_level": isolation,
                "topics": [{"name": topic, "partitions": [{"partition_index": partition, "timestamp": timestamp,
                                                            "current_leader_epoch": -1}]}]}
        p = self.request(2, 7, body).topics[0].partitions[0]
        assert p.error_code == 0, p
        return p.offset

    def create_topic(self, name: str, partitions: int = 1, configs: dict | None = None) -> int:
        body = {"topics": [{"name": name, "num_partitions": partitions, "replication_factor": 1, "assignments": [],
                            "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()]}],
                "timeout_ms": 10000, "validate_only": False}
        return self.request(19, 5, body).topics[0].error_code

    def init_producer_id(self, transactional_id: str | None = None, timeout_ms: int = 60000, version: int = 4):
        body = {"transactional_id": transactional_id, "transaction_timeout_ms": timeout_ms,
                "producer_id": -1, "producer_epoch": -1}
        return self.request(22, version, body)


    # ------------------------------------------------------- transactions
    def add_partitions_to_txn(self, transactional_id: str, producer_id: int, producer_epoch: int, topic: str,
                              partitions: list[int]) -> dict[int, int]:
        """AddPartitionsToTxn v3 -> {partition: error code}."""
        r = self.request(24, 3, {"v3_and_below_transactional_id": transactional_id,
                                 "v3_and_below_producer_id": producer_id,
                                 "v3_and_below_producer_epoch": producer_epoch,
                                 "v3_and_below_topics": [{"name": topic, "partitions": list(partitions)}]})
        return {p.partition_index: p.partition_error_code
                for t in r.results_by_topic_v3_and_below for p in t.results_by_partition}

    def end_txn(self, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool) -> int:
        """EndTxn v3 -> error code."""
        return self.request(26, 3, {"transactional_id": transactional_id, "producer_id": producer_id,
                                    "producer_epoch": producer_epoch, "committed": commit}).error_code

    def describe_producers(self, topic: str, partition: int):
        """DescribeProducers v0 -> the partition's response (error_code, active_producers)."""
        r = self.request(61, 0, {"topics": [{"name": topic, "partition_indexes": [partition]}]})
        return r.topics[0].partitions[0]

    def write_txn_marker(self, topic: str, partition: int, producer_id: int, producer_epoch: int, commit: bool,
                         coordinator_epoch: int) -> int:
        """WriteTxnMarkers v1 for one partition -> error code (an admin's abort, KIP-664)."""
        r = self.request(27, 1, {"markers": [{"producer_id": producer_id, "producer_epoch": producer_epoch,
                                              "transaction_result": commit, "coordinator_epoch": coordinator_epoch,
                                              "topics": [{"name": topic, "partition_indexes": [partition]}]}]})
        return r.markers[0].topics[0].partitions[0].error_code

    def delete_records(self, topic: str, partition: int, offset: int, timeout_ms: int = 10000) -> tuple[int, int]:
        """DeleteRecords v2 -> (error code, low watermark)."""
        r = self.request(21, 2, {"topics": [{"name": topic, "partitions": [{"partition_index": partition,
                                                                            "offset": offset}]}],
                                 "timeout_ms": timeout_ms})
        p = r.topics[0].partitions[0]
        return p.error_code, p.low_watermark

    def read_partition(self, topic: str, partition: int, isolation: int = 0, start: int | None = None,
                       max_bytes: int = 1 << 20) -> "PartitionRead":
        """Everything a consumer would get from `start` (default: the log start offset) to the end
        (read_committed: to the last stable offset), with the Java consumer's filtering of aborted
        transactions (CompletedFetch: the response's aborted transactions, then each producer's
        ABORT marker). Offsets and marks come from the first response (hw, lso, log start)."""
        first = self.fetch(topic, partition, 0 if start is None else start, isolation, max_bytes=max_bytes)
        if start is None and first.error_code == 1:  # OFFSET_OUT_OF_RANGE: begin at the log start
            start = self.list_offset(topic, partition, timestamp=-2)  # (the error carries no offsets)
            first = self.fetch(topic, partition, start, isolation, max_bytes=max_bytes)
        out = PartitionRead(first.error_code, first.high_watermark, first.last_stable_offset,
                            first.log_start_offset)
        if first.error_code:
            return out
        resp, offset = first, (0 if start is None else start)
        while True:
            progressed = False
            aborted = [(a.first_offset, a.producer_id) for a in (resp.aborted_transactions or [])]
            for h, records, delivered in rec.consumer_view(resp.records or b"", aborted, offset, isolation == 1):
                progressed = True
                fetch_offset, offset = offset, h.last_offset + 1
                out.batches.append((h, records))
                if delivered:  # records before the fetch offset (the log start) are skipped
                    out.records.extend((r.offset, r.value, h) for r in records if r.offset >= fetch_offset)
            if not progressed:
                return out
            resp = self.fetch(topic, partition, offset, isolation, max_bytes=max_bytes)
            if resp.error_code:
                raise AssertionError(f"fetch {topic}-{partition}@{offset}: error {resp.error_code}")


class PartitionRead:
    """What `RawClient.read_partition` saw: marks of the first fetch, batches and visible records."""

    def __init__(self, error_code: int, high_watermark: int, last_stable_offset: int, log_start_offset: int):
        self.error_code = error_code
        self.high_watermark = high_watermark
        self.last_stable_offset = last_stable_offset
        self.log_start_offset = log_start_offset
        self.batches: list[tuple] = []   # (BatchHeader, [Record]) including control batches
        self.records: list[tuple] = []   # (offset, value, BatchHeader) a consumer would deliver


def make_batch(values: list[bytes], producer_id: int = -1, producer_epoch: int = -1, base_sequence: int = -1,
               transactional: bool = False, keys: list[bytes] | None = None, timestamp: int | None = None) -> bytes:
    ts = int(time.time() * 1000) if timestamp is None else timestamp
    recs = [rec.Record(i, ts, (keys[i] if keys else None), v, ()) for i, v in enumerate(values)]
    return rec.build_batch(recs, producer_id=producer_id, producer_epoch=producer_epoch,
                           base_sequence=base_sequence, is_transactional=transactional)
