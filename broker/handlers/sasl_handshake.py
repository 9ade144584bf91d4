"""SaslHandshake (17): this broker has PLAINTEXT listeners only. A Kafka broker
advertises SaslHandshake on every listener, and on a PLAINTEXT one the request
reaches KafkaApis.handleSaslHandshakeRequest, which answers ILLEGAL_SASL_STATE
with no mechanisms; so do we."""
from minikafka.protocol.errors import ErrorCode


async def handle(conn, header, req):
    return {"error_code": int(ErrorCode.ILLEGAL_SASL_STATE), "mechanisms": []}
