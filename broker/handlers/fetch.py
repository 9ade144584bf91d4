"""Fetch (1): sessionless fetches, long-poll woken by appends and LSO moves.

read_committed (isolation_level 1) reads up to the LSO and returns the aborted
transactions the client needs to drop them, with Kafka's bound (UnifiedLog.read):
up to an offset-index entry past the data, so possibly beyond it.
"""
import trio

from protocol.errors import ErrorCode, KafkaError
from .common import resolve_topic

API_KEY = 1
VERSIONS = (4, 16)
INT32_MAX = 2**31 - 1


def _error(partition: int, code, aborted: list | None) -> dict:
    return {"partition_index": partition, "error_code": int(code), "high_watermark": -1, "last_stable_offset": -1,
            "log_start_offset": -1, "aborted_transactions": aborted, "preferred_read_replica": -1, "records": b""}


def _read_all(broker, req, by_id: bool):
    committed = req.isolation_level == 1
    remaining = req.max_bytes if req.max_bytes > 0 else INT32_MAX
    total, errors = 0, False
    responses = []
    for t in req.topics:
        name, topic_err = resolve_topic(broker, t.topic, t.topic_id, by_id)
        parts = []
        for p in t.partitions:
            try:
                if topic_err is not None:
                    raise KafkaError(topic_err)
                lg = broker.require_log(name, p.partition)
            except KafkaError as e:
                # Kafka answers an unknown topic, topic id or partition before reading
                # (KafkaApis' erroneous partitions, FetchResponse.partitionResponse):
                # offsets -1 and an empty, not null, aborted transactions list
                errors = True
                parts.append(_error(p.partition, e.code, []))
                continue
            r = {"partition_index": p.partition, "error_code": 0, "high_watermark": -1, "last_stable_offset": -1,
                 "log_start_offset": -1, "aborted_transactions": None, "preferred_read_replica": -1, "records": b""}
            try:
                if p.current_leader_epoch > 0:
                    raise KafkaError(ErrorCode.UNKNOWN_LEADER_EPOCH)
                hw, lso = lg.high_watermark, lg.last_stable_offset
                r.update(high_watermark=hw, last_stable_offset=lso, log_start_offset=lg.log_start_offset)
                # every partition is read, even with no byte budget left: a read_committed
                # answer then still lists aborted transactions, as Kafka's (readFromLog)
                limit = max(min(p.partition_max_bytes, remaining), 0)
                rr = lg.read(p.fetch_offset, limit, max_offset=lso if committed else hw, min_one=total == 0,
                             include_aborted=committed)
                data = rr.records
                if data:
                    r["records"] = data
                    total += len(data)
                    remaining -= len(data)
                if rr.aborted is not None:
                    r["aborted_transactions"] = [{"producer_id": pid, "first_offset": first}
                                                 for pid, first in rr.aborted]
            except KafkaError as e:
                # an error of the read itself (ReplicaManager.createLogReadResult(e)): nothing of
                # the partition's state, offsets are UnknownOffset (-1), no aborted list
                errors = True
                r = _error(p.partition, e.code, None)
            parts.append(r)
        responses.append({"topic": t.topic, "topic_id": t.topic_id, "partitions": parts})
    return responses, total, errors


async def handle(conn, header, req):
    broker = conn.broker
    by_id = header.api_version >= 13
    if req.session_id != 0 and req.session_epoch != -1:
        # We never create fetch sessions (KIP-227 allows that); a client naming one is stale.
        return {"throttle_time_ms": 0, "error_code": ErrorCode.FETCH_SESSION_ID_NOT_FOUND, "session_id": 0, "responses": []}
    deadline = trio.current_time() + max(req.max_wait_ms, 0) / 1000
    while True:
        event = broker.data_event
        responses, total, errors = _read_all(broker, req, by_id)
        if total >= req.min_bytes or errors or trio.current_time() >= deadline:
            break
        with trio.move_on_at(deadline):
            await event.wait()
    return {"throttle_time_ms": 0, "error_code": 0, "session_id": 0, "responses": responses}
