"""What every served API is authorized by: the one table, AUTHORIZATION, of the checks Kafka 4.1
makes for each API key (KafkaApis, and ControllerApis for the requests a broker forwards to its
controller), with the authorizer on (authorizer.class.name; without one nothing is checked).

Each entry is an `Auth` with one or more of:
- ``whole``: checks of the whole request, made by the dispatcher (server.dispatch) in order before
  the handler runs. A principal without the operation on the resource gets the API's whole-request
  error answer (the handler module's ``error_response``, as Kafka's getErrorResponse: the code in
  every partition, group or result the request names; without one, the top-level code alone).
- ``handler``: the finer checks the handler makes itself, per topic, group or id, or after a
  validation Kafka makes first; named here, done there.
- ``none``: why the API needs no authorization.

Adding an API: give it an entry here, in the same change as its line in APIS; a test
(tests/unit/test_authorization_table.py) fails for any advertised API without one. Read what
KafkaApis.handle<Name> checks before and while handling it, and record what a principal without
ACLs gets from Kafka (tests/conformance/scenarios/unauthorized.py).
"""
from __future__ import annotations

from typing import NamedTuple

from minikafka.protocol.errors import ErrorCode
from ..security.authorizer import (ALTER, ALTER_CONFIGS, CLUSTER, CLUSTER_ACTION, DELETE, DESCRIBE,
                                   DESCRIBE_CONFIGS, GROUP, READ, TRANSACTIONAL_ID, WRITE)

CLUSTER_REFUSED = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
GROUP_REFUSED = ErrorCode.GROUP_AUTHORIZATION_FAILED
TXN_REFUSED = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED


class Check(NamedTuple):
    """The principal needs one of ``operations`` on the resource of ``resource_type`` named by the
    request's field ``field`` (None: the cluster, kafka-cluster); else the request is refused with
    ``error``."""
    operations: tuple[int, ...]
    resource_type: int
    field: str | None
    error: ErrorCode


class Auth(NamedTuple):
    whole: tuple[Check, ...] = ()
    handler: str = ""
    none: str = ""


def cluster(*operations: int) -> Check:
    return Check(operations, CLUSTER, None, CLUSTER_REFUSED)


def group(operation: int) -> Check:
    return Check((operation,), GROUP, "group_id", GROUP_REFUSED)


def transactional_id(operation: int) -> Check:
    return Check((operation,), TRANSACTIONAL_ID, "transactional_id", TXN_REFUSED)


AUTHORIZATION: dict[int, Auth] = {
    0: Auth(handler="Produce: WRITE on the transactional id of a transactional batch (every partition "
                    "TRANSACTIONAL_ID_AUTHORIZATION_FAILED), then WRITE on each topic (its partitions "
                    "TOPIC_AUTHORIZATION_FAILED)"),
    1: Auth(handler="Fetch: a follower's (replica id >= 0) CLUSTER_ACTION on the cluster (top-level "
                    "CLUSTER_AUTHORIZATION_FAILED); a consumer's READ on each topic (its partitions "
                    "TOPIC_AUTHORIZATION_FAILED)"),
    2: Auth(handler="ListOffsets: DESCRIBE on each topic (its partitions TOPIC_AUTHORIZATION_FAILED)"),
    3: Auth(handler="Metadata: DESCRIBE on each named topic (TOPIC_AUTHORIZATION_FAILED), topics left out "
                    "of an every-topic answer; auto-creation needs CREATE on the cluster or the topic; "
                    "authorized operations are the principal's"),
    8: Auth(whole=(group(READ),),
            handler="OffsetCommit: READ on each topic (its partitions TOPIC_AUTHORIZATION_FAILED)"),
    9: Auth(handler="OffsetFetch: DESCRIBE on each group (GROUP_AUTHORIZATION_FAILED), DESCRIBE on each "
                    "topic (its partitions TOPIC_AUTHORIZATION_FAILED; left out of an all-offsets answer)"),
    10: Auth(handler="FindCoordinator: DESCRIBE on each group key (GROUP_AUTHORIZATION_FAILED) or "
                     "transactional id key (TRANSACTIONAL_ID_AUTHORIZATION_FAILED)"),
    11: Auth(whole=(group(READ),)),
    12: Auth(whole=(group(READ),)),
    13: Auth(whole=(group(READ),)),
    14: Auth(handler="SyncGroup: READ on the group (GROUP_AUTHORIZATION_FAILED), after v5's check of the "
                     "protocol type and name (INCONSISTENT_GROUP_PROTOCOL first, as Kafka)"),
    15: Auth(handler="DescribeGroups: DESCRIBE on each group (GROUP_AUTHORIZATION_FAILED); authorized "
                     "operations are the principal's"),
    16: Auth(handler="ListGroups: DESCRIBE on the cluster, else only the groups with DESCRIBE"),
    17: Auth(none="SaslHandshake is authentication: it comes before any principal exists"),
    18: Auth(none="ApiVersions is answered to anyone, before authentication too"),
    19: Auth(handler="CreateTopics: CREATE on the cluster or on each topic (TOPIC_AUTHORIZATION_FAILED); "
                     "DESCRIBE_CONFIGS on the topic for the configs in the answer"),
    20: Auth(handler="DeleteTopics: DELETE on each topic (TOPIC_AUTHORIZATION_FAILED; by id: DESCRIBE first)"),
    21: Auth(handler="DeleteRecords: DELETE on each topic (its partitions TOPIC_AUTHORIZATION_FAILED)"),
    22: Auth(handler="InitProducerId: WRITE on the transactional id, and TWO_PHASE_COMMIT with enable_2pc "
                     "(TRANSACTIONAL_ID_AUTHORIZATION_FAILED); without one IDEMPOTENT_WRITE on the cluster "
                     "or WRITE on some topic (CLUSTER_AUTHORIZATION_FAILED)"),
    23: Auth(handler="OffsetForLeaderEpoch: CLUSTER_ACTION on the cluster, else DESCRIBE on each topic "
                     "(its partitions TOPIC_AUTHORIZATION_FAILED)"),
    24: Auth(handler="AddPartitionsToTxn: v4+ (brokers' batches) CLUSTER_ACTION on the cluster (top-level "
                     "CLUSTER_AUTHORIZATION_FAILED); v0-3 WRITE on the transactional id (every partition "
                     "TRANSACTIONAL_ID_AUTHORIZATION_FAILED), then WRITE on each topic "
                     "(TOPIC_AUTHORIZATION_FAILED, the others OPERATION_NOT_ATTEMPTED)"),
    25: Auth(whole=(transactional_id(WRITE), group(READ))),
    26: Auth(whole=(transactional_id(WRITE),)),
    27: Auth(whole=(cluster(ALTER, CLUSTER_ACTION),)),
    28: Auth(whole=(transactional_id(WRITE), group(READ)),
             handler="TxnOffsetCommit: READ on each topic (its partitions TOPIC_AUTHORIZATION_FAILED)"),
    29: Auth(whole=(cluster(DESCRIBE),)),
    30: Auth(whole=(cluster(ALTER),)),
    31: Auth(whole=(cluster(ALTER),)),
    32: Auth(handler="DescribeConfigs: DESCRIBE_CONFIGS on each resource: a topic (TOPIC_AUTHORIZATION_FAILED), "
                     "a group (GROUP_AUTHORIZATION_FAILED), the cluster for a broker, broker logger or client "
                     "metrics resource (CLUSTER_AUTHORIZATION_FAILED)"),
    33: Auth(handler="AlterConfigs: ALTER_CONFIGS on each resource, as DescribeConfigs"),
    34: Auth(whole=(cluster(ALTER),)),
    35: Auth(whole=(cluster(DESCRIBE),)),
    36: Auth(none="SaslAuthenticate is authentication: it comes before any principal exists"),
    37: Auth(handler="CreatePartitions: ALTER on each topic (TOPIC_AUTHORIZATION_FAILED)"),
    38: Auth(handler="CreateDelegationToken: refused (DELEGATION_TOKEN_REQUEST_NOT_ALLOWED) over PLAINTEXT, "
                     "over SSL without a client certificate and in a session authenticated with a token; "
                     "for another owner CREATE_TOKENS on that USER (DELEGATION_TOKEN_AUTHORIZATION_FAILED)"),
    39: Auth(handler="RenewDelegationToken: refused as CreateDelegationToken's connections; only the token's "
                     "owner or a renewer (DELEGATION_TOKEN_OWNER_MISMATCH)"),
    40: Auth(handler="ExpireDelegationToken: as RenewDelegationToken"),
    41: Auth(handler="DescribeDelegationToken: refused as CreateDelegationToken's connections; only the tokens "
                     "the principal owns or renews, may DESCRIBE (DELEGATION_TOKEN, the token id) or whose "
                     "owner it may DESCRIBE_TOKENS (USER)"),
    42: Auth(handler="DeleteGroups: DELETE on each group (GROUP_AUTHORIZATION_FAILED)"),
    43: Auth(whole=(cluster(ALTER),)),
    44: Auth(handler="IncrementalAlterConfigs: ALTER_CONFIGS on each resource, as DescribeConfigs"),
    45: Auth(whole=(cluster(ALTER),)),     # ControllerApis (forwarded)
    46: Auth(whole=(cluster(DESCRIBE),)),  # ControllerApis (forwarded)
    47: Auth(whole=(group(DELETE),),
             handler="OffsetDelete: READ on each topic (its partitions TOPIC_AUTHORIZATION_FAILED)"),
    48: Auth(whole=(cluster(DESCRIBE_CONFIGS),)),
    49: Auth(whole=(cluster(ALTER_CONFIGS),)),
    50: Auth(whole=(cluster(DESCRIBE),)),
    51: Auth(whole=(cluster(ALTER),)),
    55: Auth(whole=(cluster(DESCRIBE),)),  # ControllerApis (forwarded)
    57: Auth(whole=(cluster(ALTER),)),
    60: Auth(none="DescribeCluster is answered to anyone; its authorized operations are the principal's"),
    61: Auth(handler="DescribeProducers: READ on each topic (its partitions TOPIC_AUTHORIZATION_FAILED)"),
    65: Auth(handler="DescribeTransactions: DESCRIBE on each transactional id "
                     "(TRANSACTIONAL_ID_AUTHORIZATION_FAILED); topics without DESCRIBE left out"),
    66: Auth(handler="ListTransactions: only the transactional ids with DESCRIBE"),
    68: Auth(whole=(group(READ),),
             handler="ConsumerGroupHeartbeat: DESCRIBE on every subscribed topic name (else the whole "
                     "request TOPIC_AUTHORIZATION_FAILED); a regex resolves to the topics with DESCRIBE"),
    69: Auth(handler="ConsumerGroupDescribe: DESCRIBE on each group (GROUP_AUTHORIZATION_FAILED); a group "
                     "whose assignments name a topic without DESCRIBE is TOPIC_AUTHORIZATION_FAILED; "
                     "authorized operations are the principal's"),
    74: Auth(whole=(cluster(DESCRIBE_CONFIGS),)),
    75: Auth(handler="DescribeTopicPartitions: DESCRIBE on each topic (TOPIC_AUTHORIZATION_FAILED), topics "
                     "left out of an every-topic answer"),
}


def _complete() -> None:
    """Every served API has an entry, and every entry is a served API: a broker missing one does
    not start (the import fails), whatever tests run."""
    from . import APIS
    missing, extra = sorted(set(APIS) - set(AUTHORIZATION)), sorted(set(AUTHORIZATION) - set(APIS))
    if missing or extra:
        raise ImportError(f"AUTHORIZATION and APIS disagree: no entry for API keys {missing}, "
                          f"entries for unserved keys {extra}")


_complete()
