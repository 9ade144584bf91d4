"""AddOffsetsToTxn (25): registers the group's __consumer_offsets partition in the transaction."""
from minikafka.coordinator.internal_topics import OFFSETS_TOPIC
from minikafka.coordinator.transaction import TxnError
from .common import fenced_error


async def handle(conn, header, req):
    ctx = conn.ctx
    ctx.topics.ensure_internal(OFFSETS_TOPIC)
    try:
        ctx.transactions.add_offsets(req.transactional_id, req.producer_id, req.producer_epoch, req.group_id)
        code = 0
    except TxnError as e:
        code = fenced_error(e.code, header.api_version, 2)
    return {"throttle_time_ms": 0, "error_code": code}
