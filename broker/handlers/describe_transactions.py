"""DescribeTransactions (65): the coordinator's view of transactional ids (KIP-664)."""
from protocol.errors import ErrorCode
from coordinator.transaction import TxnState

API_KEY = 65
VERSIONS = (0, 0)

# Kafka's TransactionMetadata holds partitions only while markers may still be due
# (Ongoing, Prepare*); Empty and Complete* report none. kafka-transactions.sh
# find-hanging relies on it: a partition the coordinator does not list is hanging.
_WITH_PARTITIONS = {TxnState.ONGOING, TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT, TxnState.PREPARE_EPOCH_FENCE}


async def handle(conn, header, req):
    coord = conn.broker.txn_coordinator
    out = []
    for tid in req.transactional_ids:
        md = coord.txns.get(tid)
        if md is None or md.state == TxnState.DEAD:
            out.append({"error_code": ErrorCode.TRANSACTIONAL_ID_NOT_FOUND, "transactional_id": tid,
                        "transaction_state": "", "transaction_timeout_ms": 0, "transaction_start_time_ms": -1,
                        "producer_id": -1, "producer_epoch": -1, "topics": []})
            continue
        topics: dict[str, list[int]] = {}
        if md.state in _WITH_PARTITIONS:
            for t, p in md.sorted_partitions():
                topics.setdefault(t, []).append(p)
        out.append({"error_code": 0, "transactional_id": tid, "transaction_state": md.state.display,
                    "transaction_timeout_ms": md.txn_timeout_ms, "transaction_start_time_ms": md.txn_start_ms,
                    "producer_id": md.producer_id, "producer_epoch": md.producer_epoch,
                    "topics": [{"topic": t, "partitions": ps} for t, ps in topics.items()]})
    return {"throttle_time_ms": 0, "transaction_states": out}
