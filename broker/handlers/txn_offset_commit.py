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
from minikafka.coordinator.internal_topics import OFFSETS_TOPIC
from ..replica_manager import TransactionSupportedOperation
from ..security import authorizer as acl
from .group_common import coordinator, merge_refused_first, now_ms, partition_exists

def _verify(ctx, req, version: int) -> ErrorCode | None:
    """Kafka 4.1 verifies the group's __consumer_offsets partition like a produce's
    (ReplicaManager.verify_transaction), with the request's intent: from v5 it adds the
    partition to the transaction; before v4 TRANSACTION_ABORTABLE is INVALID_TXN_STATE."""
    if not ctx.config["transaction.partition.verification.enable"]:
        return None
    ctx.topics.ensure_internal(OFFSETS_TOPIC)
    lg = ctx.replicas.get_log(*ctx.txn_coordinator.offsets_partition(req.group_id))
    operation = TransactionSupportedOperation.of_txn_offset_commit(version)
    code = ctx.replicas.verify_transaction(lg, req.transactional_id, req.producer_id, req.producer_epoch, -1,
                                              operation)
    if code == ErrorCode.TRANSACTION_ABORTABLE and operation == TransactionSupportedOperation.DEFAULT:
        code = ErrorCode.INVALID_TXN_STATE
    return None if code == ErrorCode.NONE else code


def error_response(req, code: ErrorCode, message: str | None, version: int) -> dict:
    """TxnOffsetCommitRequest.getErrorResponse: the code in every partition, topics as asked."""
    return {"throttle_time_ms": 0, "topics": [
        {"name": t.name, "partitions": [{"partition_index": p.partition_index, "error_code": int(code)}
                                        for p in t.partitions or []]} for t in req.topics or []]}


async def handle(conn, header, req):
    v = header.api_version
    ctx = conn.ctx
    now = now_ms()
    layout = []    # [(name, None, [(partition, error or None: the coordinator's next answer)])]
    entries = []   # [(tp, OffsetValue)] in request order (a partition named twice is written twice)
    # (WRITE on the transactional id and READ on the group: the dispatcher's, AUTHORIZATION)
    for t in req.topics or []:
        parts = []
        readable = conn.authorize(acl.READ, acl.TOPIC, t.name)
        for p in t.partitions or []:
            if not readable:
                parts.append((p.partition_index, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
            elif not partition_exists(ctx, t.name, p.partition_index):
                parts.append((p.partition_index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
            else:
                parts.append((p.partition_index, None))
                entries.append(((t.name, p.partition_index), OffsetValue(
                    offset=p.committed_offset, leader_epoch=p.committed_leader_epoch,
                    metadata=p.committed_metadata if p.committed_metadata is not None else "",
                    commit_timestamp=now)))
        layout.append((t.name, None, parts))
    result = []
    if entries:
        # checked and stored in one synchronous step (see coordinator.transaction)
        err = _verify(ctx, req, v)
        if err is not None:
            result = [err] * len(entries)
        else:
            result = coordinator(conn).txn_commit_offsets(
                req.group_id, req.producer_id, req.producer_epoch,
                req.member_id if v >= 3 else "", req.group_instance_id if v >= 3 else None,
                req.generation_id if v >= 3 else -1, entries, now)
    topics = [{"name": name, "partitions": [{"partition_index": p, "error_code": err} for p, err in parts]}
              for name, _, parts in merge_refused_first(layout, result)]
    return {"throttle_time_ms": 0, "topics": topics}
