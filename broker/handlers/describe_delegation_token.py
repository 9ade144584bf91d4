"""DescribeDelegationToken (41): the tokens of the given owners (null: every owner) that the
requester owns, requested or renews, or may DESCRIBE (DELEGATION_TOKEN resource) or whose owner
it may DESCRIBE_TOKENS (USER resource), with their HMACs (Kafka's DelegationTokenManager.filterToken)."""
from minikafka.protocol.errors import ErrorCode
from ..security import authorizer as acl
from ..security.delegation_tokens import principal, split_principal
from .delegation_token_common import token_requests_allowed

DESCRIBE_TOKENS, DELEGATION_TOKEN, USER = acl.OP["DESCRIBE_TOKENS"], acl.RESOURCE["DELEGATION_TOKEN"], acl.RESOURCE["USER"]


def _principal_fields(text: str, prefix: str = "") -> dict:
    kind, name = split_principal(text)
    return {f"{prefix}principal_type": kind, f"{prefix}principal_name": name}


async def handle(conn, header, req):
    if not token_requests_allowed(conn):
        return {"error_code": int(ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED), "tokens": [], "throttle_time_ms": 0}
    tokens = conn.ctx.tokens
    if tokens is None:
        return {"error_code": int(ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED), "tokens": [], "throttle_time_ms": 0}
    owners = None if req.owners is None else [principal(o.principal_type, o.principal_name) for o in req.owners]
    if owners == []:
        return {"error_code": 0, "tokens": [], "throttle_time_ms": 0}
    found = tokens.describe(conn.principal, owners,
                            lambda token_id: conn.authorize(acl.DESCRIBE, DELEGATION_TOKEN, token_id),
                            lambda owner: conn.authorize(DESCRIBE_TOKENS, USER, owner))
    return {"error_code": 0, "throttle_time_ms": 0, "tokens": [
        {**_principal_fields(t["owner"]), **_principal_fields(t["requester"], "token_requester_"),
         "issue_timestamp": t["issue"], "expiry_timestamp": t["expiry"], "max_timestamp": t["max"],
         "token_id": t["token_id"], "hmac": t["hmac"], "renewers": [_principal_fields(r) for r in t["renewers"]]}
        for t in found]}
