"""ListOffsets (2): latest (HW, or LSO for read_committed), earliest, max timestamp, by timestamp.

leader_epoch (v4+), as Kafka's Partition.fetchOffsetForTimestamp / UnifiedLog.fetchOffsetByTimestamp:
latest: the partition's current epoch; earliest: the first cached epoch if it covers the log
start offset; a record found by timestamp: the epoch stamped on its batch.

A special timestamp before the version that introduced it (-3 before v7, -4 before v8, -5
before v9) and any other negative one is UNSUPPORTED_VERSION; a partition named twice in one
request is INVALID_REQUEST; a replica_id other than -1 (a debugging consumer's -2) reads up to
the log end whatever the isolation level (Kafka 4.1's answers, tests/conformance list_offsets/).
A lookup by timestamp reads a stored batch's records, which may inflate to a gigabyte: it runs
in slices of the event loop (broker/stepper.py), as a produce's record walk does.
"""
from minikafka.protocol.errors import ErrorCode, KafkaError
from ..security import authorizer as acl
from .common import check_leader_epoch


LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL, LATEST_TIERED = -1, -2, -3, -4, -5
CONSUMER = -1  # replica_id of a consumer; -2 (a debugging consumer) and brokers read up to the log end
# the first version that may ask for each special timestamp (Kafka's isListOffsetsTimestampUnsupported)
SINCE_VERSION = {LATEST: 0, EARLIEST: 0, MAX_TIMESTAMP: 7, EARLIEST_LOCAL: 8, LATEST_TIERED: 9}


def _duplicates(topics) -> set[tuple[str, int]]:
    """Kafka's ListOffsetsRequest.duplicatePartitions: partitions named more than once anywhere in
    the request (also under a topic listed twice)."""
    seen, dup = set(), set()
    for t in topics:
        for p in t.partitions:
            key = (t.name, p.partition_index)
            (dup if key in seen else seen).add(key)
    return dup


async def handle(conn, header, req):
    ctx = conn.ctx
    version = header.api_version
    # Kafka (ReplicaManager.fetchOffset) answers from a map keyed by partition, grouped by topic:
    # a partition named twice gets one answer (INVALID_REQUEST), a topic named twice one entry
    if req.isolation_level not in (0, 1):
        # Kafka's IsolationLevel.forId throws before any partition is looked at: every partition
        # named gets UNKNOWN_SERVER_ERROR (ListOffsetsRequest.getErrorResponse)
        return {"throttle_time_ms": 0, "topics": [{"name": t.name, "partitions": [
            {"partition_index": p.partition_index, "error_code": int(ErrorCode.UNKNOWN_SERVER_ERROR), "timestamp": -1,
             "offset": -1, "leader_epoch": -1} for p in t.partitions]} for t in req.topics]}
    answers: dict[str, dict[int, dict]] = {}
    duplicates = _duplicates(req.topics)
    if req.replica_id != CONSUMER:
        isolation = None  # Kafka ignores the isolation level of anyone but a consumer
    else:
        isolation = req.isolation_level
    for t in req.topics:
        parts = answers.setdefault(t.name, {})
        describable = conn.authorize(acl.DESCRIBE, acl.TOPIC, t.name)  # Kafka: DESCRIBE on the topic
        for p in t.partitions:
            r = {"partition_index": p.partition_index, "error_code": 0, "timestamp": -1, "offset": -1, "leader_epoch": -1}
            try:
                if not describable:
                    raise KafkaError(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                ts = p.timestamp
                if (t.name, p.partition_index) in duplicates:
                    raise KafkaError(ErrorCode.INVALID_REQUEST)
                if ts < 0 and version < SINCE_VERSION.get(ts, 1 << 15):
                    raise KafkaError(ErrorCode.UNSUPPORTED_VERSION)
                lg = ctx.replicas.require_log(t.name, p.partition_index)
                check_leader_epoch(lg, None if p.current_leader_epoch == -1 else p.current_leader_epoch)
                if isolation is None:
                    fetchable = lg.log_end_offset
                else:
                    fetchable = lg.last_stable_offset if isolation == 1 else lg.high_watermark
                found = None
                epoch = None  # None: the epoch stamped on the found record's batch
                if ts == LATEST:
                    found = (-1, fetchable)
                    epoch = lg.leader_epoch
                elif ts in (EARLIEST, EARLIEST_LOCAL):
                    found = (-1, lg.log_start_offset)
                    epoch = lg.earliest_leader_epoch()
                elif ts == LATEST_TIERED:
                    found = None  # no tiered storage: nothing uploaded
                elif ts == MAX_TIMESTAMP:
                    found = await ctx.replicas.stepper.run(lg.max_timestamp_steps())
                else:
                    hit = await ctx.replicas.stepper.run(lg.offset_by_timestamp_steps(ts))
                    found = (hit[1], hit[0]) if hit else None
                if found is not None and ts not in (LATEST, EARLIEST, EARLIEST_LOCAL) and found[1] >= fetchable:
                    found = None  # Kafka only reveals offsets below the fetchable end
                if found is not None:
                    if epoch is None:
                        epoch = lg.leader_epoch_of_offset(found[1])
                    r.update(timestamp=found[0], offset=found[1], leader_epoch=epoch)
            except KafkaError as e:
                r["error_code"] = int(e.code)
            parts[p.partition_index] = r
    return {"throttle_time_ms": 0,
            "topics": [{"name": name, "partitions": list(parts.values())} for name, parts in answers.items()]}
