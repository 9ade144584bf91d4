"""DescribeClientQuotas (48): the stored quotas of the entities a filter matches (exact name,
default, or any specified name per entity type; strict: no other entity types), as Kafka's
ClientQuotasImage.describe answers them. DESCRIBE_CONFIGS on the cluster (handlers/authorization.py)."""
from ..quotas import DescribeError, describe_client_quotas
from .common import AUTH_MESSAGES


def error_response(req, code, message, version=None):
    """Kafka's DescribeClientQuotasRequest.getErrorResponse: the error at the top, no entries; the
    message only when it is not the error's default one (ApiError.fromThrowable)."""
    if message is not None and message == AUTH_MESSAGES.get(code):
        message = None
    return {"throttle_time_ms": 0, "error_code": int(code), "error_message": message, "entries": None}


async def handle(conn, header, req):
    try:
        found = describe_client_quotas(conn.ctx.client_quotas.entities,
                                       [(c.entity_type, c.match_type, c.match) for c in req.components], req.strict)
    except DescribeError as e:
        return error_response(req, e.code, e.message)
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": "", "entries": [
        {"entity": [{"entity_type": k, "entity_name": v} for k, v in entity.items()],
         "values": [{"key": k, "value": v} for k, v in quotas.items()]}
        for entity, quotas in found]}
