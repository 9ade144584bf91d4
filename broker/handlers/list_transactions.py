"""ListTransactions (66): filter by state, producer id, (v1) minimum running duration and (v2,
KIP-1152) a transactional id regular expression."""
import re

from minikafka.protocol.errors import ErrorCode
from minikafka.coordinator.transaction import TxnState
from ..context import now_ms
from ..security import authorizer as acl


KNOWN_STATES = {s.display for s in TxnState}


async def handle(conn, header, req):
    coord = conn.ctx.txn_coordinator
    wanted = set(req.state_filters or [])
    unknown = sorted(wanted - KNOWN_STATES)
    pattern = req.get("transactional_id_pattern")
    regex = None
    if pattern:
        try:
            regex = re.compile(pattern)
        except re.error:
            return {"throttle_time_ms": 0, "error_code": ErrorCode.INVALID_REGULAR_EXPRESSION,
                    "unknown_state_filters": [], "transaction_states": []}
    states = []
    for md in coord.list_transactions(now_ms(), wanted & KNOWN_STATES if wanted else None,
                                      set(req.producer_id_filters or []) or None,
                                      req.duration_filter if req.duration_filter is not None else -1):
        if regex is not None and not regex.fullmatch(md.transactional_id):
            continue
        if not conn.authorize(acl.DESCRIBE, acl.TRANSACTIONAL_ID, md.transactional_id):
            continue  # Kafka lists only the ids the principal may DESCRIBE
        states.append({"transactional_id": md.transactional_id, "producer_id": md.producer_id,
                       "transaction_state": md.state.display})
    if wanted and not wanted & KNOWN_STATES:
        states = []
    return {"throttle_time_ms": 0, "error_code": 0, "unknown_state_filters": unknown, "transaction_states": states}
