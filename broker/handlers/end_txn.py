"""EndTxn (26): the client's commit or abort; answered once the decision (Prepare*) is
durable, the coordinator writes the markers afterwards."""
from minikafka.coordinator.transaction.coordinator import TxnError
from minikafka.protocol.errors import ErrorCode
from ..security import authorizer as acl
from .common import fenced_error

API_KEY = 26
VERSIONS = (0, 4)
UNSTABLE_VERSIONS = (0, 5)


async def handle(conn, header, req):
    broker = conn.broker
    if not conn.authorize(acl.WRITE, acl.TRANSACTIONAL_ID, req.transactional_id):
        return {"throttle_time_ms": 0, "error_code": int(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
                "producer_id": -1, "producer_epoch": -1}
    try:
        await broker.txn_coordinator.end_txn(req.transactional_id, req.producer_id, req.producer_epoch, req.committed)
        code = 0
    except TxnError as e:
        code = fenced_error(e.code, header.api_version, 2)
    # v5's producer id/epoch are TV2's bumped ones; a TV1 coordinator answers -1 (as Kafka)
    return {"throttle_time_ms": 0, "error_code": code, "producer_id": -1, "producer_epoch": -1}
