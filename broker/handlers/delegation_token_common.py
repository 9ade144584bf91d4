"""What the four delegation token APIs share: Kafka's KafkaApis.allowTokenRequests."""
from ..security.listener import ANONYMOUS


def token_requests_allowed(conn) -> bool:
    """Kafka refuses token requests (DELEGATION_TOKEN_REQUEST_NOT_ALLOWED) from a session
    authenticated with a token, over PLAINTEXT, and over SSL without a client certificate."""
    if conn.token_id is not None:
        return False
    protocol = conn.ctx.listeners[conn.listener_name].protocol
    return not (protocol == "PLAINTEXT" or (protocol == "SSL" and conn.principal == ANONYMOUS))
