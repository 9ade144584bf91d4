"""EndTxn (26): two-phase commit/abort through the transaction coordinator."""
from coordinator.transaction.coordinator import TxnError
from .common import fenced_error

API_KEY = 26
VERSIONS = (0, 4)
UNSTABLE_VERSIONS = (0, 5)


async def handle(conn, header, req):
    broker = conn.broker
    try:
        pid, epoch = await broker.txn_coordinator.end_txn(req.transactional_id, req.producer_id, req.producer_epoch, req.committed)
        return {"throttle_time_ms": 0, "error_code": 0, "producer_id": pid, "producer_epoch": epoch}
    except TxnError as e:
        return {"throttle_time_ms": 0, "error_code": fenced_error(e.code, header.api_version, 2),
                "producer_id": -1, "producer_epoch": -1}
