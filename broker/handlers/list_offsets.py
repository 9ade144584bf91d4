"""ListOffsets (2): latest (HW, or LSO for read_committed), earliest, max timestamp, by timestamp.

leader_epoch (v4+), as Kafka's Partition.fetchOffsetForTimestamp / UnifiedLog.fetchOffsetByTimestamp:
latest: the partition's current epoch; earliest: the first cached epoch if it covers the log
start offset; a record found by timestamp: the epoch stamped on its batch.
"""
from minikafka.protocol.errors import ErrorCode, KafkaError
from ..security import authorizer as acl
from .common import check_leader_epoch

API_KEY = 2
VERSIONS = (1, 10)

LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL, LATEST_TIERED = -1, -2, -3, -4, -5


async def handle(conn, header, req):
    broker = conn.broker
    committed = req.isolation_level == 1
    topics = []
    for t in req.topics:
        parts = []
        describable = conn.authorize(acl.DESCRIBE, acl.TOPIC, t.name)  # Kafka: DESCRIBE on the topic
        for p in t.partitions:
            r = {"partition_index": p.partition_index, "error_code": 0, "timestamp": -1, "offset": -1, "leader_epoch": -1}
            try:
                if not describable:
                    raise KafkaError(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                lg = broker.require_log(t.name, p.partition_index)
                check_leader_epoch(lg, None if p.current_leader_epoch == -1 else p.current_leader_epoch)
                fetchable = lg.last_stable_offset if committed else lg.high_watermark
                ts = p.timestamp
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
                    found = lg.max_timestamp_and_offset()
                elif ts >= 0:
                    hit = lg.fetch_offset_by_timestamp(ts)
                    found = (hit[1], hit[0]) if hit else None
                else:
                    raise KafkaError(ErrorCode.INVALID_REQUEST, f"invalid timestamp {ts}")
                if found is not None and ts not in (LATEST, EARLIEST, EARLIEST_LOCAL) and found[1] >= fetchable:
                    found = None  # Kafka only reveals offsets below the fetchable end
                if found is not None:
                    if epoch is None:
                        epoch = lg.leader_epoch_of_offset(found[1])
                    r.update(timestamp=found[0], offset=found[1], leader_epoch=epoch)
                if header.api_version == 0:
                    r["old_style_offsets"] = [r["offset"]] if r["offset"] >= 0 else []
            except KafkaError as e:
                r["error_code"] = int(e.code)
            parts.append(r)
        topics.append({"name": t.name, "partitions": parts})
    return {"throttle_time_ms": 0, "topics": topics}
