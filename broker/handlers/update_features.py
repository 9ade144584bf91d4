"""UpdateFeatures (57): change finalized feature levels (KIP-584), as `kafka-features.sh`
upgrade/downgrade/disable send it; Kafka forwards it to its controller, which this one
broker also is. All updates of a request succeed or none does; the new levels are durable
before the answer (broker/features.py)."""
from minikafka.broker.features import UPGRADE, FeatureUpdate
from minikafka.protocol.errors import ErrorCode


async def handle(conn, header, req):
    v = header.api_version
    ctx = conn.ctx
    updates = []
    for u in req.feature_updates or []:
        # v0's allow_downgrade is not honoured by Kafka 4.1 (a lower level is refused as a
        # downgrade without a downgrade type, whatever it says): an upgrade
        kind = u.upgrade_type if v >= 1 else UPGRADE
        updates.append(FeatureUpdate(u.feature, u.max_version_level, kind))
    validate_only = bool(req.validate_only) if v >= 1 else False
    code, message = ctx.features.update(updates, ctx.node_id, validate_only)
    ctx.txn_coordinator.transaction_version = ctx.features.transaction_version
    if code:
        return error_response(req, code, message, v)
    body = {"throttle_time_ms": 0, "error_code": 0, "error_message": message}
    if v <= 1:  # v0-1 list each feature: NONE with the text "NONE" (Kafka's answer)
        body["results"] = [{"feature": u.feature, "error_code": 0, "error_message": "NONE"} for u in updates]
    return body


def error_response(req, code: ErrorCode, message: str | None, version: int) -> dict:
    """The error and its message; v0-1 list no features."""
    body = {"throttle_time_ms": 0, "error_code": int(code), "error_message": message}
    if version <= 1:
        body["results"] = []
    return body
