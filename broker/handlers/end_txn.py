"""EndTxn (26): the client's commit or abort; answered once the decision (Prepare*) is
written (durable, when the flush settings ask), the marker writer writes the markers
afterwards, before this connection's next request is read (TransactionRuntime.markers_tried). v5 is transactions V2 (KIP-890
part 2): the coordinator bumps the epoch and answers with the producer id and epoch the
producer goes on with; older versions keep them (-1 in the answer)."""
from minikafka.coordinator.transaction import TxnError
from .common import fenced_error

TRANSACTIONS_V2 = 5  # Kafka's TransactionVersion.transactionVersionForEndTxn: v5+ is TV2


async def handle(conn, header, req):
    # (the request read by subscript: an attribute of a decoded message costs about ten times as
    # much, and EndTxn comes once a transaction)
    ctx = conn.ctx
    transactional_id = req["transactional_id"]
    pid = epoch = -1
    try:
        pid, epoch = await ctx.transactions.end_txn(transactional_id, req["producer_id"], req["producer_epoch"],
                                                       req["committed"], v2=header.api_version >= TRANSACTIONS_V2)
        code = 0
        conn.after_answer = ctx.transactions.markers_tried
    except TxnError as e:
        code = fenced_error(e.code, header.api_version, 2)
    return {"throttle_time_ms": 0, "error_code": code, "producer_id": pid, "producer_epoch": epoch}
