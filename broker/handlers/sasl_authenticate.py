"""SaslAuthenticate (36): PLAINTEXT listeners only; answered as Kafka's
KafkaApis.handleSaslAuthenticateRequest does outside a SASL exchange."""
from minikafka.protocol.errors import ErrorCode


async def handle(conn, header, req):
    return {"error_code": int(ErrorCode.ILLEGAL_SASL_STATE),
            "error_message": "SaslAuthenticate request received after successful authentication",
            "auth_bytes": b"", "session_lifetime_ms": 0}
