"""Fetch (1): sessionless fetches, long-poll woken by appends and LSO moves.

Each partition's records are a slice of one segment file, as Kafka's (LogSegment.read):
from the batch holding the fetch offset, up to the partition's share of max_bytes, so the
slice may end inside a batch (clients drop a cut batch and fetch it again); the first
partition with data returns its first batch whole even past the limits (KIP-74), a later
partition whose first batch the remaining budget cuts returns nothing.

read_committed (isolation_level 1) reads up to the LSO and returns the aborted
transactions the client needs to drop them, with Kafka's bound (UnifiedLog.read):
up to an offset-index entry past the data, so possibly beyond it.

Leader epochs (Kafka's Partition.fetchRecords / readRecords): a current_leader_epoch
older than the partition's is FENCED_LEADER_EPOCH (v16+: with the current leader and
its endpoint), a newer one UNKNOWN_LEADER_EPOCH; with last_fetched_epoch (v12+) a
fetch offset past the end of that epoch in this log answers diverging_epoch and no
records.
"""
import trio

from minikafka.protocol.errors import ErrorCode, KafkaError
from .common import check_leader_epoch, resolve_topic

API_KEY = 1
VERSIONS = (4, 16)
INT32_MAX = 2**31 - 1


def _error(partition: int, code, aborted: list | None) -> dict:
    return {"partition_index": partition, "error_code": int(code), "high_watermark": -1, "last_stable_offset": -1,
            "log_start_offset": -1, "aborted_transactions": aborted, "preferred_read_replica": -1, "records": b""}


def _diverging_epoch(lg, fetch_offset: int, last_fetched_epoch: int) -> dict | None:
    """{epoch, end_offset} when the client's log diverges from this one, else None."""
    epoch, end = lg.end_offset_for_epoch(last_fetched_epoch)
    if epoch == -1 or end == -1:
        raise KafkaError(ErrorCode.OFFSET_OUT_OF_RANGE,
                         f"Could not determine the end offset of the last fetched epoch {last_fetched_epoch}")
    if fetch_offset < lg.log_start_offset:
        raise KafkaError(ErrorCode.OFFSET_OUT_OF_RANGE)
    if epoch < last_fetched_epoch or end < fetch_offset:
        return {"epoch": epoch, "end_offset": end}
    return None


def _read_all(broker, req, by_id: bool, version: int):
    committed = req.isolation_level == 1
    remaining = req.max_bytes if req.max_bytes > 0 else INT32_MAX
    total, errors = 0, False
    fenced = False
    answered, erroneous = [], []  # ((topic, topic id), partition answer), each in request order
    for t in req.topics:
        name, topic_err = resolve_topic(broker, t.topic, t.topic_id, by_id)
        key = (t.topic, t.topic_id)
        for p in t.partitions:
            try:
                if topic_err is not None:
                    raise KafkaError(topic_err)
                lg = broker.require_log(name, p.partition)
            except KafkaError as e:
                # Kafka answers an unknown topic, topic id or partition before reading
                # (KafkaApis' erroneous partitions, FetchResponse.partitionResponse):
                # offsets -1 and an empty, not null, aborted transactions list; they follow
                # the partitions read in the answer
                errors = True
                erroneous.append((key, _error(p.partition, e.code, [])))
                continue
            r = {"partition_index": p.partition, "error_code": 0, "high_watermark": -1, "last_stable_offset": -1,
                 "log_start_offset": -1, "aborted_transactions": None, "preferred_read_replica": -1, "records": b""}
            try:
                check_leader_epoch(lg, p.current_leader_epoch if p.current_leader_epoch >= 0 else None)
                hw, lso = lg.high_watermark, lg.last_stable_offset
                r.update(high_watermark=hw, last_stable_offset=lso, log_start_offset=lg.log_start_offset)
                if p.last_fetched_epoch >= 0:
                    diverging = _diverging_epoch(lg, p.fetch_offset, p.last_fetched_epoch)
                    if diverging is not None:
                        r["diverging_epoch"] = diverging
                        errors = True  # answered at once, as an error is
                        answered.append((key, r))
                        continue
                # every partition is read, even with no byte budget left: a read_committed
                # answer then still lists aborted transactions, as Kafka's (readFromLog). Until a
                # partition returns data, its first batch comes whole whatever the limits (KIP-74)
                limit = max(min(p.partition_max_bytes, remaining), 0)
                rr = lg.read(p.fetch_offset, limit, max_offset=lso if committed else hw, min_one=total == 0,
                             include_aborted=committed)
                if rr.first_entry_incomplete:
                    # the limit cuts this partition's first batch: no records and no aborted
                    # list (ReplicaManager.readFromLog answers an empty FetchDataInfo)
                    answered.append((key, r))
                    continue
                data = rr.slice  # sent from the segment file as it is (server.send_response)
                if data is not None:
                    r["records"] = data
                    total += len(data)
                    remaining -= len(data)
                if rr.aborted is not None:
                    r["aborted_transactions"] = [{"producer_id": pid, "first_offset": first}
                                                 for pid, first in rr.aborted]
            except KafkaError as e:
                errors = True
                # an error of the read itself (ReplicaManager.createLogReadResult(e)): offsets are
                # UnknownOffset (-1), no records, no aborted list (OFFSET_OUT_OF_RANGE too)
                r = _error(p.partition, e.code, None)
                if e.code == ErrorCode.FENCED_LEADER_EPOCH and version >= 16:
                    r["current_leader"] = {"leader_id": broker.node_id, "leader_epoch": lg.leader_epoch}
                    fenced = True
            answered.append((key, r))
    # FetchResponse.of: consecutive partitions of one topic share a topic entry
    responses = []
    for (topic, topic_id), r in answered + erroneous:
        if responses and responses[-1]["topic"] == topic and responses[-1]["topic_id"] == topic_id:
            responses[-1]["partitions"].append(r)
        else:
            responses.append({"topic": topic, "topic_id": topic_id, "partitions": [r]})
    return responses, total, errors, fenced


async def handle(conn, header, req):
    broker = conn.broker
    by_id = header.api_version >= 13
    if req.session_id != 0 and req.session_epoch != -1:
        # We never create fetch sessions (KIP-227 allows that); a client naming one is stale.
        return {"throttle_time_ms": 0, "error_code": ErrorCode.FETCH_SESSION_ID_NOT_FOUND, "session_id": 0, "responses": []}
    deadline = trio.current_time() + max(req.max_wait_ms, 0) / 1000
    while True:
        event = broker.data_event
        responses, total, errors, fenced = _read_all(broker, req, by_id, header.api_version)
        if total >= req.min_bytes or errors or trio.current_time() >= deadline:
            break
        with trio.move_on_at(deadline):
            await event.wait()
    out = {"throttle_time_ms": 0, "error_code": 0, "session_id": 0, "responses": responses}
    if fenced:
        # v16: the leader named in current_leader, with its endpoint (KIP-951)
        host, port = broker.advertised_address(conn.listener_name)
        out["node_endpoints"] = [{"node_id": broker.node_id, "host": host, "port": port, "rack": None}]
    return out
