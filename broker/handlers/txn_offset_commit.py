"""TxnOffsetCommit (28): offsets committed inside a producer's transaction.

The records are appended to the group's __consumer_offsets partition as a
transactional batch (producer id/epoch) and only take effect when the
transaction coordinator's COMMIT marker lands there (GroupCoordinator.
complete_transaction); ABORT drops them. v3+ carry the consumer's member id,
instance id and generation, which are checked as Kafka does (KIP-447). v5+ (transactions V2)
adds the group's offsets partition to the transaction itself, as a Produce v12+ adds its
partition: the client sends no AddOffsetsToTxn."""
from minikafka.protocol.errors import ErrorCode

from minikafka.coordinator.group import OffsetValue
from .group_common import coordinator, now_ms, partition_exists

API_KEY = 28
VERSIONS = (0, 5)
ADDS_PARTITION = 5  # Kafka's txnOffsetCommitRequestVersionToTransactionSupportedOperation: ADD_PARTITION


def _verify(broker, req, version: int) -> ErrorCode | None:
    """Kafka 4.1 verifies the group's __consumer_offsets partition like a produce's
    (Broker.transaction_verification), or from v5 adds it to the transaction;
    TRANSACTION_ABORTABLE is INVALID_TXN_STATE before v4."""
    if not broker.config["transaction.partition.verification.enable"]:
        return None
    broker.ensure_internal_topic("__consumer_offsets")
    lg = broker.get_log(*broker.txn_coordinator.offsets_partition(req.group_id))
    code = broker.transaction_verification(lg, req.transactional_id, req.producer_id, req.producer_epoch, -1,
                                           add=version >= ADDS_PARTITION)
    if code == ErrorCode.TRANSACTION_ABORTABLE and version < 4:
        code = ErrorCode.INVALID_TXN_STATE
    return None if code == ErrorCode.NONE else code


async def handle(conn, header, req):
    v = header.api_version
    broker = conn.broker
    now = now_ms()
    layout = []
    errors = {}
    offsets = {}
    for t in req.topics or []:
        tps = []
        for p in t.partitions or []:
            tp = (t.name, p.partition_index)
            tps.append(tp)
            if not partition_exists(broker, t.name, p.partition_index):
                errors[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                offsets[tp] = OffsetValue(
                    offset=p.committed_offset, leader_epoch=p.committed_leader_epoch,
                    metadata=p.committed_metadata if p.committed_metadata is not None else "",
                    commit_timestamp=now)
        layout.append((t.name, tps))
    result = {}
    if offsets:
        # checked and stored in one synchronous step (see coordinator.transaction)
        err = _verify(broker, req, v)
        if err is not None:
            result = {tp: err for tp in offsets}
        else:
            result = coordinator(conn).txn_commit_offsets(
                req.group_id, req.producer_id, req.producer_epoch,
                req.member_id if v >= 3 else "", req.group_instance_id if v >= 3 else None,
                req.generation_id if v >= 3 else -1, offsets, now)
    topics = [{"name": name, "partitions": [
        {"partition_index": tp[1], "error_code": int(errors.get(tp, result.get(tp, ErrorCode.NONE)))}
        for tp in tps]} for name, tps in layout]
    return {"throttle_time_ms": 0, "topics": topics}
