"""InitProducerId (22): idempotent producers get a fresh id; transactional ids go to the coordinator.
v6 (KIP-939, two-phase commit; unstable in Kafka 4.1, so advertised only with
unstable.api.versions.enable) adds enable_2pc and keep_prepared_txn: see
TransactionCoordinator.init_producer_id for what is served."""
from minikafka.protocol.errors import ErrorCode
from minikafka.coordinator.internal_topics import TRANSACTION_TOPIC
from minikafka.coordinator.transaction import TxnError
from ..security import authorizer as acl
from .common import fenced_error


def _error(code, version: int) -> dict:
    return {"throttle_time_ms": 0, "error_code": fenced_error(code, version, 4), "producer_id": -1, "producer_epoch": -1,
            "ongoing_txn_producer_id": -1, "ongoing_txn_producer_epoch": -1}


async def handle(conn, header, req):
    ctx = conn.ctx
    v = header.api_version
    # v3+ (KIP-360): a producer recovering its own id names it and its epoch; both or neither
    if (req.producer_id == -1) != (req.producer_epoch == -1):
        return _error(ErrorCode.INVALID_REQUEST, v)
    # Kafka: WRITE on the transactional id, and TWO_PHASE_COMMIT on it to enable 2PC (KIP-939); an
    # idempotent producer needs IDEMPOTENT_WRITE on the cluster or WRITE on some topic (KIP-679)
    if req.transactional_id is not None and not conn.authorize(acl.WRITE, acl.TRANSACTIONAL_ID, req.transactional_id):
        return _error(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, header.api_version)
    if v >= 6 and req.enable2_pc and not conn.authorize(acl.TWO_PHASE_COMMIT, acl.TRANSACTIONAL_ID,
                                                        req.transactional_id):
        return _error(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, header.api_version)
    if req.transactional_id is None and not (conn.authorize(acl.IDEMPOTENT_WRITE, acl.CLUSTER, acl.CLUSTER_NAME)
                                             or conn.authorize_any(acl.WRITE, acl.TOPIC)):
        return _error(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, header.api_version)
    if req.transactional_id is None:
        return {"throttle_time_ms": 0, "error_code": 0, "producer_id": ctx.producer_ids.next_id(), "producer_epoch": 0,
                "ongoing_txn_producer_id": -1, "ongoing_txn_producer_epoch": -1}
    try:
        ctx.topics.ensure_internal(TRANSACTION_TOPIC)
        pid, epoch = await ctx.transactions.init_producer_id(
            req.transactional_id, req.transaction_timeout_ms, req.producer_id, req.producer_epoch,
            enable_2pc=bool(req.enable2_pc) if v >= 6 else False,
            keep_prepared_txn=bool(req.keep_prepared_txn) if v >= 6 else False)
    except TxnError as e:
        # a fenced transaction's abort (CONCURRENT_TRANSACTIONS): its markers before the retry
        conn.after_answer = ctx.transactions.markers_tried
        return _error(e.code, v)
    return {"throttle_time_ms": 0, "error_code": 0, "producer_id": pid, "producer_epoch": epoch,
            "ongoing_txn_producer_id": -1, "ongoing_txn_producer_epoch": -1}
