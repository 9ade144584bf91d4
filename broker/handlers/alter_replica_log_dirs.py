"""AlterReplicaLogDirs (34, KIP-113): move partitions between this broker's log dirs
(broker/log_dirs.py does the move: a future replica is copied while the current one serves,
then swapped in). Per partition, as Kafka's ReplicaManager.alterReplicaLogDirs: a path that is
not one of ``log.dirs`` (compared as given, an absolute path) is LOG_DIR_NOT_FOUND; a partition
this broker lacks UNKNOWN_TOPIC_OR_PARTITION; the partition's current dir, or the dir it is
already moving to, is a success with nothing to do, and the current dir stops a move in progress.
A partition named under several dirs goes to the last one (Kafka keeps a map of them). A principal
without ALTER on the cluster (authorization.py) gets CLUSTER_AUTHORIZATION_FAILED for every
partition (error_response; recorded: log_dirs/*)."""
from minikafka.protocol.errors import ErrorCode, KafkaError


def _by_topic(codes: dict) -> list:
    out: dict[str, list] = {}
    for (topic, partition), code in codes.items():
        out.setdefault(topic, []).append({"partition_index": partition, "error_code": int(code)})
    return [{"topic_name": t, "partitions": ps} for t, ps in out.items()]


def _moves(req) -> dict:
    moves = {}
    for d in req.dirs:
        for t in d.topics:
            for p in t.partitions:
                moves[(t.name, p)] = d.path
    return moves


def error_response(req, code: ErrorCode, message: str | None = None, version: int = 0) -> dict:
    """AlterReplicaLogDirsRequest.getErrorResponse: the error for every partition."""
    return {"throttle_time_ms": 0, "results": _by_topic({tp: code for tp in _moves(req)})}


async def handle(conn, header, req):
    mover = conn.ctx.log_dirs
    codes = {}
    for (topic, partition), path in _moves(req).items():
        try:
            mover.alter(topic, partition, path)
            codes[(topic, partition)] = ErrorCode.NONE
        except KafkaError as e:
            codes[(topic, partition)] = e.code
        except OSError:   # the future replica could not be created in the target dir
            codes[(topic, partition)] = ErrorCode.KAFKA_STORAGE_ERROR
    return {"throttle_time_ms": 0, "results": _by_topic(codes)}
