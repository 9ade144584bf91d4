"""AddPartitionsToTxn (24): v0-3 one transaction from a client; v4+ batched, possibly
verify-only (the question a partition leader asks before a transactional append). v4+
records client transaction version 2 with the transition, older versions 0 (Kafka's
transactionVersionForAddPartitionsToTxn). The decoded request is read by subscript: an attribute
of a decoded message costs about ten times as much, and a client's AddPartitionsToTxn comes once
a transaction."""
from minikafka.protocol.errors import ErrorCode
from minikafka.coordinator.transaction import TxnError
from ..security import authorizer as acl
from .common import fenced_error


def _result_topics(parts: dict):
    topics: dict[str, list] = {}
    for (topic, p), code in parts.items():
        topics.setdefault(topic, []).append({"partition_index": p, "partition_error_code": int(code)})
    return [{"name": t, "results_by_partition": r} for t, r in topics.items()]


def _one(conn, tid, pid, epoch, topics, verify_only, version):
    ctx = conn.ctx
    wanted = [(t["name"], p) for t in topics for p in t["partitions"]]
    if version <= 3 and not conn.authorize(acl.WRITE, acl.TRANSACTIONAL_ID, tid):
        return {tp: ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED for tp in wanted}
    refused = {tp: ErrorCode.TOPIC_AUTHORIZATION_FAILED for tp in wanted
               if version <= 3 and not conn.authorize(acl.WRITE, acl.TOPIC, tp[0])}
    refused.update({tp: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION for tp in wanted
                    if tp not in refused and ctx.replicas.get_log(*tp) is None})
    if refused:
        # Kafka validates first and fails the others with OPERATION_NOT_ATTEMPTED
        return {tp: refused.get(tp, ErrorCode.OPERATION_NOT_ATTEMPTED) for tp in wanted}
    if verify_only:
        return ctx.txn_coordinator.verify_partitions(tid, pid, epoch, wanted)
    try:
        ctx.transactions.add_partitions(tid, pid, epoch, wanted, client_txn_version=2 if version >= 4 else 0)
        code = ErrorCode.NONE
    except TxnError as e:
        code = fenced_error(e.code, version, 2)
    return {tp: code for tp in wanted}


async def handle(conn, header, req):
    v = header.api_version
    if v <= 3:
        res = _one(conn, req["v3_and_below_transactional_id"], req["v3_and_below_producer_id"],
                   req["v3_and_below_producer_epoch"], req["v3_and_below_topics"], False, v)
        return {"throttle_time_ms": 0, "results_by_topic_v3_and_below": _result_topics(res)}
    if not conn.authorize(acl.CLUSTER_ACTION, acl.CLUSTER, acl.CLUSTER_NAME):
        # v4+ is the brokers' batched form: cluster action only (Kafka's KafkaApis)
        return {"throttle_time_ms": 0, "error_code": int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
                "results_by_transaction": []}
    out = []
    for txn in req["transactions"]:
        tid = txn["transactional_id"]
        res = _one(conn, tid, txn["producer_id"], txn["producer_epoch"], txn["topics"], txn["verify_only"], v)
        out.append({"transactional_id": tid, "topic_results": _result_topics(res)})
    return {"throttle_time_ms": 0, "error_code": 0, "results_by_transaction": out}
