"""WriteTxnMarkers (27): write COMMIT/ABORT markers to partitions.

The coordinator uses the same path internally (Broker.write_marker). As an admin
API (KIP-664: coordinator epoch -1, sent by ``kafka-transactions.sh abort`` /
``Admin.abortTransaction``) the marker is only written when the producer has an
open transaction on the partition (INVALID_TXN_STATE otherwise) and the request
names its current epoch exactly (INVALID_PRODUCER_EPOCH otherwise), so an
administrator can never bump a producer's epoch past its coordinator. The
transaction start offset of the KIP (``TxnStartOffset``) never made it into
Kafka's schema: the tool resolves it to the producer id/epoch through
DescribeProducers first, as Kafka's does.
"""
from protocol.errors import ErrorCode, KafkaError

API_KEY = 27
VERSIONS = (0, 1)


def admin_marker_error(broker, topic: str, partition: int, producer_id: int, producer_epoch: int) -> int:
    """KIP-664 checks for a marker from an administrator (coordinator epoch < 0)."""
    lg = broker.get_log(topic, partition)
    if lg is None:
        return int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    entry = next((e for e in lg.active_producers() if e.producer_id == producer_id), None)
    if entry is None:
        return int(ErrorCode.INVALID_TXN_STATE)  # no state at all for this producer: nothing to end
    if entry.producer_epoch != producer_epoch:
        return int(ErrorCode.INVALID_PRODUCER_EPOCH)
    if entry.current_txn_first_offset is None or entry.current_txn_first_offset < 0:
        return int(ErrorCode.INVALID_TXN_STATE)
    return 0


async def handle(conn, header, req):
    broker = conn.broker
    markers = []
    for m in req.markers:
        admin = m.coordinator_epoch < 0
        topics = []
        for t in m.topics:
            parts = []
            for p in t.partition_indexes:
                try:
                    code = admin_marker_error(broker, t.name, p, m.producer_id, m.producer_epoch) if admin else 0
                    if code == 0:
                        code = broker.write_marker(t.name, p, m.producer_id, m.producer_epoch,
                                                   m.transaction_result, m.coordinator_epoch)
                except KafkaError as e:
                    code = int(e.code)
                parts.append({"partition_index": p, "error_code": int(code)})
            topics.append({"name": t.name, "partitions": parts})
        markers.append({"producer_id": m.producer_id, "topics": topics})
    return {"markers": markers}
