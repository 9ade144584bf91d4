"""AddOffsetsToTxn (25): registers the group's __consumer_offsets partition in the transaction."""
from minikafka.coordinator.transaction.coordinator import TxnError
from minikafka.protocol.errors import ErrorCode
from ..security import authorizer as acl
from .common import fenced_error


async def handle(conn, header, req):
    broker = conn.broker
    # Kafka: WRITE on the transactional id, then READ on the group
    if not conn.authorize(acl.WRITE, acl.TRANSACTIONAL_ID, req.transactional_id):
        return {"throttle_time_ms": 0, "error_code": int(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)}
    if not conn.authorize(acl.READ, acl.GROUP, req.group_id):
        return {"throttle_time_ms": 0, "error_code": int(ErrorCode.GROUP_AUTHORIZATION_FAILED)}
    broker.ensure_internal_topic("__consumer_offsets")
    try:
        broker.txn_coordinator.add_offsets(req.transactional_id, req.producer_id, req.producer_epoch, req.group_id)
        code = 0
    except TxnError as e:
        code = fenced_error(e.code, header.api_version, 2)
    return {"throttle_time_ms": 0, "error_code": code}
