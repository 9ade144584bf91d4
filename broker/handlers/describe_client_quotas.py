"""DescribeClientQuotas (48): the stored quotas of the entities a filter matches (exact name,
default, or any specified name per entity type; strict: no other entity types), as Kafka's
ClientQuotasImage.describe answers them."""
from ..quotas import DescribeError, describe_client_quotas
from ..security import authorizer as acl
from minikafka.protocol.errors import ErrorCode


def error_response(req, code, message):
    return {"throttle_time_ms": 0, "error_code": int(code), "error_message": message, "entries": None}


async def handle(conn, header, req):
    if not conn.authorize(acl.DESCRIBE_CONFIGS, acl.CLUSTER, acl.CLUSTER_NAME):
        # Kafka (recorded): the error code alone, no message (the exception's is the default one)
        return error_response(req, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None)
    try:
        found = describe_client_quotas(conn.broker.client_quotas.entities,
                                       [(c.entity_type, c.match_type, c.match) for c in req.components], req.strict)
    except DescribeError as e:
        return error_response(req, e.code, e.message)
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": "", "entries": [
        {"entity": [{"entity_type": k, "entity_name": v} for k, v in entity.items()],
         "values": [{"key": k, "value": v} for k, v in quotas.items()]}
        for entity, quotas in found]}
