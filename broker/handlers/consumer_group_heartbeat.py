"""ConsumerGroupHeartbeat (68, KIP-848): join, heartbeat and leave of a consumer-protocol
member; the answer carries the member's epoch and, when it changed (or the request
was a full one), its assignment. The work is the group coordinator's
(coordinator/group/consumer_groups.py)."""
from .group_common import client_host, coordinator, now_ms


async def handle(conn, header, req):
    return coordinator(conn).consumer_heartbeat(
        header.api_version, req.group_id, req.member_id, req.member_epoch, req.instance_id, req.rack_id,
        req.rebalance_timeout_ms, req.subscribed_topic_names,
        req.subscribed_topic_regex if header.api_version >= 1 else None, req.server_assignor,
        req.topic_partitions, header.client_id or "", client_host(conn), now_ms())
