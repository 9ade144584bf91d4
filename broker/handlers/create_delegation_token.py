"""CreateDelegationToken (38): a token for the requester, or (v3) for another owner when the
requester may CREATE_TOKENS on that USER, with User renewers only; Kafka's checks in Kafka's
order (KafkaApis, then the controller's DelegationTokenControlManager)."""
from minikafka.protocol.errors import ErrorCode
from ..security import authorizer as acl
from ..security.delegation_tokens import principal, split_principal
from .delegation_token_common import token_requests_allowed


def _answer(code, owner: str, requester: str, token=None) -> dict:
    owner_type, owner_name = split_principal(owner)
    requester_type, requester_name = split_principal(requester)
    body = {"error_code": int(code), "principal_type": owner_type, "principal_name": owner_name,
            "token_requester_principal_type": requester_type, "token_requester_principal_name": requester_name,
            "issue_timestamp_ms": -1, "expiry_timestamp_ms": -1, "max_timestamp_ms": -1, "token_id": "",
            "hmac": b"", "throttle_time_ms": 0}
    if token is not None:
        body.update(issue_timestamp_ms=token["issue"], expiry_timestamp_ms=token["expiry"],
                    max_timestamp_ms=token["max"], token_id=token["token_id"], hmac=token["hmac"])
    return body


async def handle(conn, header, req):
    requester = conn.principal
    owner_name = req.get("owner_principal_name")
    owner = requester if not owner_name else principal(req.get("owner_principal_type"), owner_name)
    if not token_requests_allowed(conn):
        return _answer(ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, owner, requester)
    if owner != requester and not conn.authorize(acl.OP["CREATE_TOKENS"], acl.RESOURCE["USER"], owner):
        return _answer(ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED, owner, requester)
    if any(r.principal_type != "User" for r in req.renewers):
        return _answer(ErrorCode.INVALID_PRINCIPAL_TYPE, owner, requester)
    tokens = conn.ctx.tokens
    if tokens is None:
        # the controller's answer: no token fields set (zero timestamps)
        body = _answer(ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED, owner, requester)
        body.update(issue_timestamp_ms=0, expiry_timestamp_ms=0, max_timestamp_ms=0)
        return body
    token = tokens.create(owner, requester, [principal(r.principal_type, r.principal_name) for r in req.renewers],
                          req.max_lifetime_ms)
    return _answer(ErrorCode.NONE, owner, requester, token)
