"""Test conveniences on top of broker.tools.wire.WireClient, for exact frames that
real clients never send (duplicates, gaps, stale epochs, malformed input)."""
from __future__ import annotations

import time

from broker.tools.wire import WireClient
from protocol import records as rec


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


def make_batch(values: list[bytes], producer_id: int = -1, producer_epoch: int = -1, base_sequence: int = -1,
               transactional: bool = False, keys: list[bytes] | None = None, timestamp: int | None = None) -> bytes:
    ts = int(time.time() * 1000) if timestamp is None else timestamp
    recs = [rec.Record(i, ts, (keys[i] if keys else None), v, ()) for i, v in enumerate(values)]
    return rec.build_batch(recs, producer_id=producer_id, producer_epoch=producer_epoch,
                           base_sequence=base_sequence, is_transactional=transactional)
