"""DescribeQuorum (55, KIP-595; v1 KIP-836, v2 KIP-853): the KRaft quorum of the metadata log
``__cluster_metadata``, as a combined broker+controller node that is its only voter reports it
(a Kafka broker listener forwards the request to the controller): this node leads, at the
quorum's epoch (one more each start, as a single voter elects itself again), with the metadata
log's high watermark (storage.log_manager: an offset that grows with every metadata change); the
one voter is caught up, with its metadata log dir's directory id (v2); no observers; at v2 the
voter's endpoint, named CONTROLLER as Kafka's controller listener is (minikafka answers the
controller's requests on the broker's own listener).

Only a request for exactly partition 0 of ``__cluster_metadata`` is answered; anything else gets
UNKNOWN_TOPIC_OR_PARTITION in each partition named (recorded: quorum/*). A principal without
DESCRIBE on the cluster gets CLUSTER_AUTHORIZATION_FAILED (authorization.py)."""
from minikafka.protocol.errors import ErrorCode
from ..context import now_ms

METADATA_TOPIC = "__cluster_metadata"
NOT_HOSTED = "This server does not host this topic-partition."
CONTROLLER_LISTENER = "CONTROLLER"


def error_response(req, code: ErrorCode, message: str | None = None, version: int = 0) -> dict:
    """DescribeQuorumResponse's error answer: the error alone (v2: with its message)."""
    return {"error_code": int(code), "error_message": message, "topics": [], "nodes": []}


def _unknown(p) -> dict:
    return {"partition_index": p.partition_index, "error_code": int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
            "error_message": NOT_HOSTED, "leader_id": 0, "leader_epoch": 0, "high_watermark": 0,
            "current_voters": [], "observers": []}


async def handle(conn, header, req):
    ctx = conn.ctx
    ours = (len(req.topics) == 1 and req.topics[0].topic_name == METADATA_TOPIC
            and [p.partition_index for p in req.topics[0].partitions] == [0])
    if not ours:
        return {"error_code": 0, "error_message": "", "nodes": [], "topics": [
            {"topic_name": t.topic_name, "partitions": [_unknown(p) for p in t.partitions]} for t in req.topics]}
    offset, directory_id, epoch = ctx.topics.quorum()
    now = now_ms()
    voter = {"replica_id": ctx.node_id, "replica_directory_id": directory_id,
             "log_end_offset": offset, "last_fetch_timestamp": now, "last_caught_up_timestamp": now}
    host, port = ctx.advertised_address(conn.listener_name)
    return {"error_code": 0, "error_message": "", "topics": [{"topic_name": METADATA_TOPIC, "partitions": [{
        "partition_index": 0, "error_code": 0, "error_message": "", "leader_id": ctx.node_id,
        "leader_epoch": epoch, "high_watermark": offset, "current_voters": [voter], "observers": []}]}],
        "nodes": [{"node_id": ctx.node_id,
                   "listeners": [{"name": CONTROLLER_LISTENER, "host": host, "port": port}]}]}
