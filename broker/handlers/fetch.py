"""Fetch (1): full, incremental (KIP-227 fetch sessions, broker/fetch_session.py) and sessionless
fetches, long-poll woken by appends and LSO moves.

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

The answer waits (up to max_wait_ms) for min_bytes unless a partition read failed or
diverged, or nothing is readable at all (KafkaApis, ReplicaManager.fetchMessages): an
unknown topic or partition next to readable ones does not cut the wait short.
"""
import trio

from ..security.authorizer import READ, TOPIC

from minikafka.protocol.errors import ErrorCode, KafkaError
from minikafka.protocol import schema
from ..context import now_ms
from ..quotas import quota_now_ms
from ..fetch_session import ZERO_UUID, PartitionData, ShardLookupError, partition_key
from .common import check_leader_epoch

INT32_MAX = 2**31 - 1


def _answer(partition: int, hw: int, lso: int, log_start: int, aborted: list | None) -> dict:
    """A partition's answer without records (read adds them)."""
    return {"partition_index": partition, "error_code": 0, "high_watermark": hw, "last_stable_offset": lso,
            "log_start_offset": log_start, "aborted_transactions": aborted, "preferred_read_replica": -1,
            "records": b""}


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


def _fetch_data(ctx, req, by_id: bool) -> dict:
    """The request's partitions, {key: PartitionData} in request order (a partition named twice
    is read once, with the later parameters, as Kafka's map of them)."""
    out = {}
    for t in req["topics"]:
        if by_id:
            topic_id = t["topic_id"]
            if topic_id == ZERO_UUID:
                topic_id = ZERO_UUID  # this object: `is` tells "no id" apart below
            name = _topic_name(ctx, topic_id)
        else:
            topic_id, name = ZERO_UUID, t["topic"]
        key = partition_key(name, topic_id, 0)[0]
        for p in t["partitions"]:  # (items, not attributes: thousands of partitions)
            index = p["partition"]
            out[key, index] = PartitionData(name, topic_id, index, p["fetch_offset"], p["log_start_offset"],
                                            p["partition_max_bytes"], p["current_leader_epoch"],
                                            p["last_fetched_epoch"])
    return out


def _topic_name(ctx, topic_id) -> str | None:
    info = ctx.topics.by_id(topic_id)
    return info.name if info is not None else None


def _to_forget(ctx, req, by_id: bool) -> list:
    if not req.forgotten_topics_data:
        return []
    return [partition_key(t.topic, t.topic_id if by_id else ZERO_UUID, p)
            for t in req.forgotten_topics_data for p in t.partitions]


def _read_all(ctx, parts: list, req, version: int, readable=None, omit_unchanged: bool = False,
              quota_cap: float | None = None):
    """Read every partition: ([(key, PartitionData, answer)] with the erroneous ones last, bytes
    read, answer now (a read failed or diverged, or nothing was readable), fenced).

    ``omit_unchanged`` (an incremental session, whose ``parts`` are its CachedPartitions):
    a partition the session would leave out of the answer (no records, no error, the high
    watermark and log start offset it last answered: CachedPartition.must_respond) is left
    out here already, answer unbuilt."""
    committed = req.isolation_level == 1
    # Kafka's KafkaApis: min(the request's max_bytes, fetch.max.bytes); v0-2 ask for no limit
    remaining = min(req.max_bytes if req.max_bytes > 0 else INT32_MAX, ctx.config["fetch.max.bytes"])
    if quota_cap is not None:
        # a consumer under a consumer_byte_rate quota gets no more than its quota allows in one
        # window without certain throttling (Kafka's getMaxValueInQuotaWindow)
        remaining = min(remaining, int(quota_cap))
    total, now, fenced, readable_count = 0, False, False, 0
    answered, erroneous = [], []
    get_log = ctx.replicas.get_log
    for key, pd in parts:
        # Kafka answers an unknown topic, topic id or partition before reading (KafkaApis'
        # erroneous partitions, FetchResponse.partitionResponse): offsets -1 and an empty, not
        # null, aborted transactions list; they follow the partitions read in the answer
        topic = pd.topic
        if topic is None:
            erroneous.append((key, pd, _error(pd.partition, ErrorCode.UNKNOWN_TOPIC_ID, [])))
            continue
        if readable is not None and not readable(topic):  # no READ on the topic (ACLs)
            erroneous.append((key, pd, _error(pd.partition, ErrorCode.TOPIC_AUTHORIZATION_FAILED, [])))
            continue
        lg = get_log(topic, pd.partition)
        if lg is None:
            erroneous.append((key, pd, _error(pd.partition, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, [])))
            continue
        readable_count += 1
        try:
            topic_id = pd.topic_id
            if topic_id is not ZERO_UUID and lg.topic_id is not topic_id and (
                    lg.topic_id is None or lg.topic_id.int != topic_id.int):  # (UUID.__eq__ is a Python call)
                # a session's topic deleted and created again under the same name
                raise KafkaError(ErrorCode.INCONSISTENT_TOPIC_ID)
            epoch = pd.current_leader_epoch
            if epoch >= 0 and epoch != lg.leader_epoch:
                check_leader_epoch(lg, epoch)  # FENCED_LEADER_EPOCH or UNKNOWN_LEADER_EPOCH
            hw, lso, log_start = lg.high_watermark, lg.last_stable_offset, lg.log_start_offset
            # what an incremental session would leave out if nothing else changes (no records)
            unchanged = omit_unchanged and pd.high_watermark == hw and pd.local_log_start_offset == log_start
            fetch_offset = pd.fetch_offset
            if pd.last_fetched_epoch >= 0:
                diverging = _diverging_epoch(lg, fetch_offset, pd.last_fetched_epoch)
                if diverging is not None:
                    r = _answer(pd.partition, hw, lso, log_start, None)
                    r["diverging_epoch"] = diverging
                    now = True
                    answered.append((key, pd, r))
                    continue
            # every partition is read, even with no byte budget left: a read_committed
            # answer then still lists aborted transactions, as Kafka's (readFromLog). Until a
            # partition returns data, its first batch comes whole whatever the limits (KIP-74)
            limit = min(pd.max_bytes, remaining)
            caught_up = fetch_offset >= (lso if committed else hw)
            if caught_up or (limit <= 0 and total and not committed):
                # nothing to return: caught up, or no byte budget left under read_uncommitted
                # (no aborted list to give). The read would only check the range first, as
                # Kafka's LocalLog.read: OFFSET_OUT_OF_RANGE even so; else what it answers is
                # no records, and (read_committed, caught up) an empty aborted list
                lg.check_fetch_offset(fetch_offset)
                if unchanged:
                    continue
                answered.append((key, pd, _answer(pd.partition, hw, lso, log_start, [] if committed else None)))
                continue
            rr = lg.read(fetch_offset, max(limit, 0), max_offset=lso if committed else hw, min_one=total == 0,
                         include_aborted=committed)
            r = _answer(pd.partition, hw, lso, log_start, None)
            # a first batch the limit cuts: no records and no aborted list (ReplicaManager.readFromLog
            # answers an empty FetchDataInfo)
            data = None if rr.first_entry_incomplete else rr.slice
            if data is not None:
                r["records"] = data  # sent from the segment file as it is (server.send_response)
                total += len(data)
                remaining -= len(data)
            elif unchanged:
                continue
            if rr.aborted is not None and not rr.first_entry_incomplete:
                r["aborted_transactions"] = [{"producer_id": pid, "first_offset": first} for pid, first in rr.aborted]
        except KafkaError as e:
            now = True
            # an error of the read itself (ReplicaManager.createLogReadResult(e)): offsets are
            # UnknownOffset (-1), no records, no aborted list (OFFSET_OUT_OF_RANGE too)
            r = _error(pd.partition, e.code, None)
            if e.code == ErrorCode.FENCED_LEADER_EPOCH and version >= 16:
                r["current_leader"] = {"leader_id": ctx.node_id, "leader_epoch": lg.leader_epoch}
                fenced = True
        answered.append((key, pd, r))
    if not readable_count:
        now = True  # nothing to wait for (KafkaApis answers erroneous partitions alone at once)
    return answered + erroneous, total, now, fenced


def _group(entries) -> list:
    """FetchResponse.of: consecutive partitions of one topic share a topic entry."""
    responses = []
    topic, topic_id, partitions = None, None, None
    for _, pd, r in entries:
        if partitions is not None and topic == pd.topic and (topic_id is pd.topic_id or topic_id == pd.topic_id):
            partitions.append(r)
        else:
            topic, topic_id, partitions = pd.topic, pd.topic_id, [r]
            responses.append({"topic": topic, "topic_id": topic_id, "partitions": partitions})
    return responses


def _unknown_server_error(req, by_id: bool) -> dict:
    """Kafka's FetchRequest.getErrorResponse, for a Fetch its handler failed on: the error at the
    top and in every partition of the request, as the request names them, and the request's
    session id."""
    code = ErrorCode.UNKNOWN_SERVER_ERROR
    return {"throttle_time_ms": 0, "error_code": code, "session_id": req.session_id,
            "responses": [{"topic": t.topic, "topic_id": t.topic_id if by_id else ZERO_UUID,
                           "partitions": [_error(p.partition, code, []) for p in t.partitions]}
                          for t in req.topics]}


def _throttled(conn, quotas, session, answered, version: int) -> dict | None:
    """Kafka's fetch throttling: the request time so far and the answer's size counted against the
    client's quotas before the answer is made; a throttled client gets an empty answer (its size
    taken back from its byte rate) with throttle_time_ms, and the session is left as it was."""
    request_throttle = conn.request_quota_throttle()
    fetch_throttle, size = 0, 0
    if quotas.fetch.enabled:
        body = {"throttle_time_ms": 0, "error_code": 0, "session_id": 0, "responses": _group(answered)}
        # Kafka's FetchResponse.sizeOf: 4 + the body's size (the frame without its response header)
        header = 5 if schema.response_header_version(1, version) >= 1 else 4
        size = sum(len(p) for p in schema.encode_response_parts(1, version, 0, body)) - header
        fetch_throttle = quotas.fetch.record(conn.principal, conn.client_id, size, quota_now_ms())
    throttle = max(request_throttle, fetch_throttle)
    if not throttle:
        return None
    if size:
        quotas.fetch.unrecord(conn.principal, conn.client_id, size, quota_now_ms())
    error, session_id = session.throttled()
    return {"throttle_time_ms": throttle, "error_code": error, "session_id": session_id, "responses": []}


async def handle(conn, header, req):
    ctx = conn.ctx
    version = header.api_version
    by_id = version >= 13
    fetch_data = _fetch_data(ctx, req, by_id)
    try:
        session = ctx.fetch_manager.new_context(version, req.session_id, req.session_epoch, fetch_data,
                                                _to_forget(ctx, req, by_id))
    except ShardLookupError:
        # a session id in no shard's range: Kafka's session cache throws (see fetch_session)
        return _unknown_server_error(req, by_id)
    parts = session.partitions(lambda topic_id: _topic_name(ctx, topic_id))
    deadline = trio.current_time() + max(req.max_wait_ms, 0) / 1000
    readable = None
    if ctx.authorizer is not None:
        allowed = {t: conn.authorize(READ, TOPIC, t) for t in {pd.topic for _, pd in parts if pd.topic}}
        readable = allowed.__getitem__
    omit = session.omits_unchanged
    quotas = ctx.quotas
    cap = quotas.fetch.max_value_in_window(conn.principal, conn.client_id) if quotas is not None else None
    min_bytes = req.min_bytes if cap is None else min(req.min_bytes, int(cap))
    while True:
        event = ctx.replicas.data_event
        answered, total, now, fenced = _read_all(ctx, parts, req, version, readable, omit, cap)
        if now or total >= min_bytes or trio.current_time() >= deadline:
            break
        with trio.move_on_at(deadline):
            await event.wait()
    if quotas is not None and quotas.any_client_quota:
        throttled = _throttled(conn, quotas, session, answered, version)
        if throttled is not None:
            return throttled
    error, session_id, out = session.respond(answered, now_ms())
    body = {"throttle_time_ms": 0, "error_code": error, "session_id": session_id, "responses": _group(out)}
    if fenced:
        # v16: the leader named in current_leader, with its endpoint (KIP-951)
        host, port = ctx.advertised_address(conn.listener_name)
        body["node_endpoints"] = [{"node_id": ctx.node_id, "host": host, "port": port, "rack": None}]
    return body
