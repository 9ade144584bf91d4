"""WriteTxnMarkers (27): write COMMIT/ABORT markers to partitions.

The coordinator uses the same path internally (ReplicaManager.write_marker); an administrator
sends it too (KIP-664: ``kafka-transactions.sh abort`` / ``Admin.abortTransaction``).
As in Kafka, the partition checks a marker only as its ``ProducerAppendInfo`` does
(storage.producer_state): a producer epoch below the partition's is
INVALID_PRODUCER_EPOCH, a coordinator epoch below the last one the partition saw for
that producer is TRANSACTION_COORDINATOR_FENCED. Anything else is written, whether or
not the producer has a transaction open there; a higher producer epoch becomes the
partition's epoch for that producer.
"""
from minikafka.protocol.errors import ErrorCode, KafkaError


def error_response(req, code: ErrorCode, message: str | None, version: int) -> dict:
    """WriteTxnMarkersRequest.getErrorResponse: the code in every partition of every marker."""
    return {"markers": [{"producer_id": m.producer_id, "topics": [
        {"name": t.name, "partitions": [{"partition_index": p, "error_code": int(code)} for p in t.partition_indexes]}
        for t in m.topics]} for m in req.markers]}


async def handle(conn, header, req):
    ctx = conn.ctx
    markers = []
    for m in req.markers:
        topics = []
        for t in m.topics:
            parts = []
            for p in t.partition_indexes:
                try:
                    code = ctx.replicas.write_marker(t.name, p, m.producer_id, m.producer_epoch,
                                               m.transaction_result, m.coordinator_epoch)
                except KafkaError as e:
                    code = int(e.code)
                parts.append({"partition_index": p, "error_code": int(code)})
            topics.append({"name": t.name, "partitions": parts})
        markers.append({"producer_id": m.producer_id, "topics": topics})
    return {"markers": markers}
