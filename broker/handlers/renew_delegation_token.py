"""RenewDelegationToken (39): the owner or a renewer moves a token's expiry to now plus the
asked period (at most delegation.token.expiry.time.ms, never past its maximum lifetime)."""
from minikafka.protocol.errors import ErrorCode
from .delegation_token_common import token_requests_allowed


async def handle(conn, header, req):
    if not token_requests_allowed(conn):
        return {"error_code": int(ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED), "expiry_timestamp_ms": -1,
                "throttle_time_ms": 0}
    tokens = conn.ctx.tokens
    if tokens is None:
        return {"error_code": int(ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED), "expiry_timestamp_ms": 0,
                "throttle_time_ms": 0}
    code, expiry = tokens.renew(bytes(req.hmac), conn.principal, req.renew_period_ms)
    return {"error_code": int(code), "expiry_timestamp_ms": expiry, "throttle_time_ms": 0}
