"""ConsumerGroupHeartbeat (68, KIP-848): join, heartbeat and leave of a consumer-protocol
member; the answer carries the member's epoch and, when it changed (or the request
was a full one), its assignment. The work is the group coordinator's
(coordinator/group/consumer_groups.py).

Authorization as Kafka's KafkaApis.handleConsumerGroupHeartbeat: READ on the group (the
dispatcher's, AUTHORIZATION), then DESCRIBE on every subscribed topic name, else the whole
request is TOPIC_AUTHORIZATION_FAILED; a regex resolves only to topics the principal of the
heartbeat that resolves it may DESCRIBE (Kafka's GroupMetadataManager.refreshRegularExpressions)."""
from minikafka.protocol.errors import ErrorCode

from . import consumer_groups
from ..security import authorizer as acl
from .group_common import client_host, coordinator, now_ms


async def handle(conn, header, req):
    ctx = conn.ctx
    describable = None
    if ctx.authorizer is not None and consumer_groups(ctx):  # (else UNSUPPORTED_VERSION first)
        names = req.subscribed_topic_names
        if names and not all(conn.authorize(acl.DESCRIBE, acl.TOPIC, n) for n in set(names)):
            return {"throttle_time_ms": 0, "error_code": int(ErrorCode.TOPIC_AUTHORIZATION_FAILED)}

        def describable(topic: str) -> bool:
            return conn.authorize(acl.DESCRIBE, acl.TOPIC, topic)
    return coordinator(conn).consumer_heartbeat(
        header.api_version, req.group_id, req.member_id, req.member_epoch, req.instance_id, req.rack_id,
        req.rebalance_timeout_ms, req.subscribed_topic_names,
        req.subscribed_topic_regex if header.api_version >= 1 else None, req.server_assignor,
        req.topic_partitions, header.client_id or "", client_host(conn), now_ms(), describable=describable)
