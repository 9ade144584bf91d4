"""DescribeTransactions (65): the coordinator's view of transactional ids (KIP-664)."""
from minikafka.protocol.errors import ErrorCode
from ..security import authorizer as acl


# Kafka's TransactionMetadata holds partitions only while markers may still be due: those
# of an Ongoing transaction, and in Prepare* those whose marker is not written yet; Empty
# and Complete* report none. kafka-transactions.sh find-hanging relies on it: a partition
# the coordinator does not list is hanging.


async def handle(conn, header, req):
    coord = conn.ctx.txn_coordinator
    out = []
    for tid in req.transactional_ids:
        md = coord.txns.get(tid) if tid else None
        if tid and not conn.authorize(acl.DESCRIBE, acl.TRANSACTIONAL_ID, tid):  # Kafka: DESCRIBE on the id
            out.append({"error_code": ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, "transactional_id": tid,
                        "transaction_state": "", "transaction_timeout_ms": 0, "transaction_start_time_ms": 0,
                        "producer_id": 0, "producer_epoch": 0, "topics": []})
            continue
        if md is None:
            # Kafka sets only the id and the error: the other fields keep their zero defaults
            out.append({"error_code": ErrorCode.INVALID_REQUEST if not tid else ErrorCode.TRANSACTIONAL_ID_NOT_FOUND,
                        "transactional_id": tid, "transaction_state": "", "transaction_timeout_ms": 0,
                        "transaction_start_time_ms": 0, "producer_id": 0, "producer_epoch": 0, "topics": []})
            continue
        topics: dict[str, list[int]] = {}
        for t, p in md.sorted_partitions():
            topics.setdefault(t, []).append(p)
        out.append({"error_code": 0, "transactional_id": tid, "transaction_state": md.state.display,
                    "transaction_timeout_ms": md.txn_timeout_ms, "transaction_start_time_ms": md.txn_start_ms,
                    "producer_id": md.producer_id, "producer_epoch": md.producer_epoch,
                    "topics": [{"topic": t, "partitions": ps} for t, ps in topics.items()]})
    return {"throttle_time_ms": 0, "transaction_states": out}
