"""OffsetForLeaderEpoch (23): clients validate positions after leader changes (KIP-320).

This node has led every partition since creation with leader epoch 0, so the end
offset of epoch 0 (and of any later epoch asked for) is the log end offset.
"""
from protocol.errors import ErrorCode, KafkaError

API_KEY = 23
VERSIONS = (2, 4)


async def handle(conn, header, req):
    broker = conn.broker
    topics = []
    for t in req.topics:
        parts = []
        for p in t.partitions:
            r = {"error_code": 0, "partition": p.partition, "leader_epoch": -1, "end_offset": -1}
            try:
                lg = broker.require_log(t.topic, p.partition)
                if p.current_leader_epoch > 0:
                    raise KafkaError(ErrorCode.UNKNOWN_LEADER_EPOCH)
                if p.leader_epoch >= 0:
                    r.update(leader_epoch=0, end_offset=lg.log_end_offset)
            except KafkaError as e:
                r["error_code"] = int(e.code)
            parts.append(r)
        topics.append({"topic": t.topic, "partitions": parts})
    return {"throttle_time_ms": 0, "topics": topics}
