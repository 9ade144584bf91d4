"""WriteTxnMarkers (27): write COMMIT/ABORT markers to partitions.

The coordinator uses the same path internally (Broker.write_marker). As an admin
API (KIP-664, coordinator epoch -1) an ABORT must name the open transaction's
first offset (TxnStartOffset) and its exact producer epoch.
"""
from protocol.errors import ErrorCode, KafkaError

API_KEY = 27
VERSIONS = (0, 1)


async def handle(conn, header, req):
    broker = conn.broker
    markers = []
    for m in req.markers:
        topics = []
        for t in m.topics:
            parts = []
            for p in t.partition_indexes:
                try:
                    code = await broker.write_marker(t.name, p, m.producer_id, m.producer_epoch,
                                                     m.transaction_result, m.coordinator_epoch,
                                                     admin=m.coordinator_epoch < 0)
                except KafkaError as e:
                    code = int(e.code)
                parts.append({"partition_index": p, "error_code": int(code)})
            topics.append({"name": t.name, "partitions": parts})
        markers.append({"producer_id": m.producer_id, "topics": topics})
    return {"markers": markers}
