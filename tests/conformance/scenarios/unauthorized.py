"""What a principal without ACLs gets, for every API key the broker serves (the AUTHORIZATION table,
broker/handlers/authorization.py), from a broker with Kafka's default strictness (dsl.SECURED_STRICT:
only User:admin is a super user, nothing is allowed without an ACL). The main connection is User:admin,
who sets things up; "sasl:bob" is User:bob, who no scenario gives an ACL unless it says so (and then
only on its own names), "ssl" an SSL client without a certificate (User:ANONYMOUS).

Cluster-wide listings (ListGroups, ListTransactions, Metadata of every topic) keep only each
scenario's own names: that they leave bob's unauthorized names out is what they show. And the KIP-848
takeover of issue 32: a principal without ACLs describes a consumer group, joins it, and leaves in
its victim's name (member_epoch -1); each step is refused with GROUP_AUTHORIZATION_FAILED and the
victim keeps its partitions."""
from ..dsl import (SECURED, SECURED_STRICT, TOKENS, Scenario, Topic, add_offsets, add_partitions, batch, call, end_txn, fetch,
                   init_pid, list_offsets, produce, ref, topic_id, txn_offset_commit, txn_produce, write_markers)
from .acls import DESCRIBE, GROUP, READ, TOPIC, TXN, WRITE, acl, create_acls
from .consumer_groups import beat, describe, hb

BOB, SSL = "sasl:bob", "ssl"
BROKER, BROKER_LOGGER, CLIENT_METRICS, CONFIG_GROUP = 4, 8, 16, 32
CREATE = 5
TWO_TOPICS = {"t": Topic(), "u": Topic()}
# InitProducerId v6 (KIP-939's enable_2pc) is advertised only with the unstable API versions
STRICT_UNSTABLE = dict(SECURED_STRICT, **{"unstable.api.versions.enable": "true"})


def bob_acl(resource_type, name, operation):
    return acl(resource_type, name, operation, principal="User:bob")


def metadata(topics=("{t}",), auto=False, v=12, **kw):
    return call(3, v, {"topics": None if topics is None else [{"name": n, "topic_id": None} for n in topics],
                       "allow_auto_topic_creation": auto, "include_topic_authorized_operations": True}, **kw)


def describe_configs(*resources, **kw):
    return call(32, 4, {"resources": [{"resource_type": t, "resource_name": n, "configuration_keys": None}
                                      for t, n in resources],
                        "include_synonyms": False, "include_documentation": False}, **kw)


def alter_configs(*resources, **kw):
    return call(33, 2, {"resources": [{"resource_type": t, "resource_name": n, "configs": [{"name": k, "value": v}]}
                                      for t, n, k, v in resources], "validate_only": False}, **kw)


def incremental_alter(*resources, **kw):
    return call(44, 1, {"resources": [{"resource_type": t, "resource_name": n, "configs": [
        {"name": k, "config_operation": 0, "value": v}]} for t, n, k, v in resources], "validate_only": False}, **kw)


def simple_commit(group="{g}", **kw):
    """OffsetCommit of a group without members (generation -1): creates the group as admin."""
    return call(8, 8, {"group_id": group, "generation_id_or_member_epoch": -1, "member_id": "",
                       "group_instance_id": None, "retention_time_ms": -1, "topics": [
                           {"name": "{t}", "partitions": [{"partition_index": 0, "committed_offset": 1,
                                                           "committed_leader_epoch": -1,
                                                           "committed_metadata": ""}]}]}, **kw)


def join(member="bob-m", **kw):
    return call(11, 9, {"group_id": "{g}", "session_timeout_ms": 10000, "rebalance_timeout_ms": 10000,
                        "member_id": member, "group_instance_id": None, "protocol_type": "consumer",
                        "protocols": [{"name": "range", "metadata": b""}], "reason": None}, **kw)


def sync(protocol_type="consumer", **kw):
    return call(14, 5, {"group_id": "{g}", "generation_id": 1, "member_id": "bob-m", "group_instance_id": None,
                        "protocol_type": protocol_type, "protocol_name": "range", "assignments": []}, **kw)


SCENARIOS = [
    Scenario("unauth/topics/data",
             "A principal without ACLs on the topic: Produce, Fetch (a consumer's and a follower's), ListOffsets, "
             "OffsetForLeaderEpoch, DeleteRecords and DescribeProducers refuse each partition with "
             "TOPIC_AUTHORIZATION_FAILED (a follower's fetch needs CLUSTER_ACTION); a transactional Produce is "
             "refused on its transactional id first.", broker=SECURED_STRICT, steps=[
        produce(batch(), conn=BOB),
        produce(batch(pid=1000, epoch=0, transactional=True), txn="{tx}", conn=BOB),
        fetch(isolation=0, conn=BOB),
        call(1, 12, {"replica_id": 1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0,
                     "session_id": 0, "session_epoch": -1, "topics": [{"topic": "{t}", "partitions": [
                         {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20, "current_leader_epoch": -1,
                          "log_start_offset": -1}]}], "forgotten_topics_data": [], "rack_id": ""},
             conn=BOB, label="a follower's fetch (replica id 1)"),
        list_offsets(isolation=0, conn=BOB),
        call(23, 4, {"replica_id": -1, "topics": [{"topic": "{t}", "partitions": [
            {"partition": 0, "current_leader_epoch": -1, "leader_epoch": 0}]}]}, conn=BOB),
        call(23, 4, {"replica_id": 1, "topics": [{"topic": "{t}", "partitions": [
            {"partition": 0, "current_leader_epoch": -1, "leader_epoch": 0}]}]}, conn=BOB, label="as a follower"),
        call(21, 2, {"topics": [{"name": "{t}", "partitions": [{"partition_index": 0, "offset": 0}]}],
                     "timeout_ms": 30000}, conn=BOB),
        call(61, 0, {"topics": [{"name": "{t}", "partition_indexes": [0]}]}, conn=BOB),
    ]),
    Scenario("unauth/topics/admin",
             "A principal without ACLs: Metadata of a named topic, of a missing one it asks to auto-create, and "
             "of every topic (the scenario's topic left out); DescribeTopicPartitions of the topic and of every "
             "topic; CreateTopics, DeleteTopics (by name and by id) and CreatePartitions refuse each topic.",
             broker=SECURED_STRICT, steps=[
        metadata(conn=BOB),
        metadata(["{n}"], auto=True, conn=BOB),
        metadata(None, conn=BOB),
        call(75, 0, {"topics": [{"name": "{t}"}], "response_partition_limit": 2000, "cursor": None}, conn=BOB),
        call(75, 0, {"topics": [], "response_partition_limit": 2000, "cursor": None}, conn=BOB),
        call(19, 7, {"topics": [{"name": "{n}", "num_partitions": 1, "replication_factor": 1, "assignments": [],
                                 "configs": []}], "timeout_ms": 5000, "validate_only": False}, conn=BOB),
        call(20, 6, {"topics": [{"name": "{t}", "topic_id": None}], "timeout_ms": 5000}, conn=BOB),
        call(20, 6, {"topics": [{"name": None, "topic_id": topic_id()}], "timeout_ms": 5000}, conn=BOB),
        call(37, 3, {"topics": [{"name": "{t}", "count": 2, "assignments": None}], "timeout_ms": 5000,
                     "validate_only": False}, conn=BOB),
        metadata(),
    ]),
    Scenario("unauth/topics/create_without_describe_configs",
             "Bob may CREATE {n} and {m} but not DESCRIBE_CONFIGS them: CreateTopics creates them (validate_only "
             "and for real) and answers without their configs.", broker=SECURED_STRICT, steps=[
        create_acls(bob_acl(TOPIC, "{n}", CREATE), bob_acl(TOPIC, "{m}", CREATE)),
        call(19, 7, {"topics": [{"name": "{n}", "num_partitions": 2, "replication_factor": 1, "assignments": [],
                                 "configs": [{"name": "retention.ms", "value": "100000"}]}], "timeout_ms": 5000,
                     "validate_only": True}, conn=BOB),
        call(19, 7, {"topics": [{"name": "{n}", "num_partitions": 2, "replication_factor": 1, "assignments": [],
                                 "configs": [{"name": "retention.ms", "value": "100000"}]},
                                {"name": "{m}", "num_partitions": 1, "replication_factor": 1, "assignments": [],
                                 "configs": []}], "timeout_ms": 5000, "validate_only": False}, conn=BOB),
        # (Kafka's brokers learn new topics from the metadata log a moment after CreateTopics answers)
        metadata(["{n}", "{m}"], until={"topics.0.error_code": 0, "topics.1.error_code": 0}),
    ]),
    Scenario("unauth/groups/classic",
             "A principal without ACLs on a group admin uses: FindCoordinator, JoinGroup (its member id not "
             "echoed), SyncGroup (v5 without a protocol type: INCONSISTENT_GROUP_PROTOCOL comes first), "
             "Heartbeat, LeaveGroup, DescribeGroups, OffsetCommit, OffsetFetch (v7 and v8), OffsetDelete and "
             "DeleteGroups are refused with GROUP_AUTHORIZATION_FAILED; ListGroups leaves the group out.",
             broker=SECURED_STRICT, steps=[
        simple_commit(),
        call(10, 4, {"key_type": 0, "coordinator_keys": ["{g}"]}, conn=BOB),
        call(10, 3, {"key": "{g}", "key_type": 0}, conn=BOB),
        join(conn=BOB),
        sync(conn=BOB),
        sync(protocol_type=None, conn=BOB),
        call(12, 4, {"group_id": "{g}", "generation_id": 1, "member_id": "bob-m", "group_instance_id": None},
             conn=BOB),
        call(13, 5, {"group_id": "{g}", "members": [{"member_id": "bob-m", "group_instance_id": None,
                                                      "reason": None}]}, conn=BOB),
        call(15, 5, {"groups": ["{g}"], "include_authorized_operations": True}, conn=BOB),
        call(16, 5, {"states_filter": [], "types_filter": []}, conn=BOB),
        simple_commit(conn=BOB),
        call(9, 7, {"group_id": "{g}", "topics": None, "require_stable": True}, conn=BOB),
        call(9, 8, {"groups": [{"group_id": "{g}", "topics": None}], "require_stable": True}, conn=BOB),
        call(47, 0, {"group_id": "{g}", "topics": [{"name": "{t}", "partitions": [{"partition_index": 0}]}]},
             conn=BOB),
        call(42, 2, {"groups_names": ["{g}"]}, conn=BOB),
        call(15, 5, {"groups": ["{g}"], "include_authorized_operations": False}),
    ]),
    Scenario("unauth/groups/offsets_of_undescribable_topics",
             "Bob may READ the group and DESCRIBE {t}, not {u}: OffsetFetch of every offset leaves {u} out (v7, v8), "
             "of {u} by name is TOPIC_AUTHORIZATION_FAILED; OffsetCommit and OffsetDelete of {u} are "
             "TOPIC_AUTHORIZATION_FAILED (READ on the topic), of {t} too (DESCRIBE is not READ); ListGroups "
             "shows the group.", broker=SECURED_STRICT, topics=TWO_TOPICS, steps=[
        call(8, 8, {"group_id": "{g}", "generation_id_or_member_epoch": -1, "member_id": "", "group_instance_id": None,
                    "retention_time_ms": -1, "topics": [
                        {"name": t, "partitions": [{"partition_index": 0, "committed_offset": 1,
                                                    "committed_leader_epoch": -1, "committed_metadata": ""}]}
                        for t in ("{t}", "{u}")]}),
        create_acls(bob_acl(GROUP, "{g}", READ), bob_acl(TOPIC, "{t}", DESCRIBE)),
        call(9, 7, {"group_id": "{g}", "topics": None, "require_stable": True}, conn=BOB,
             until={"error_code": 0}),
        call(9, 8, {"groups": [{"group_id": "{g}", "topics": None}], "require_stable": True}, conn=BOB),
        call(9, 7, {"group_id": "{g}", "topics": [{"name": "{u}", "partition_indexes": [0]},
                                                  {"name": "{t}", "partition_indexes": [0]}],
                    "require_stable": True}, conn=BOB),
        simple_commit(conn=BOB),
        call(47, 0, {"group_id": "{g}", "topics": [{"name": "{u}", "partitions": [{"partition_index": 0}]}]},
             conn=BOB),
        call(16, 5, {"states_filter": [], "types_filter": []}, conn=BOB),
    ]),
    Scenario("unauth/transactions/all",
             "A principal without ACLs on a transactional id admin uses: FindCoordinator, InitProducerId, "
             "AddPartitionsToTxn (v3; v4, the brokers' form, needs CLUSTER_ACTION), AddOffsetsToTxn, "
             "TxnOffsetCommit, EndTxn and DescribeTransactions are refused with "
             "TRANSACTIONAL_ID_AUTHORIZATION_FAILED; an idempotent InitProducerId with "
             "CLUSTER_AUTHORIZATION_FAILED; WriteTxnMarkers with CLUSTER_AUTHORIZATION_FAILED; ListTransactions "
             "leaves the id out. The transaction stays admin's.", broker=SECURED_STRICT, steps=[
        init_pid("a"),
        add_partitions("a"),
        txn_produce("a"),
        call(10, 4, {"key_type": 1, "coordinator_keys": ["{tx}"]}, conn=BOB),
        init_pid(conn=BOB),
        init_pid(txn=None, conn=BOB),
        add_partitions("a", conn=BOB),
        add_partitions("a", v=4, conn=BOB),
        add_offsets("a", conn=BOB),
        txn_offset_commit("a", {("{t}", 0): 1}, conn=BOB),
        end_txn("a", commit=False, conn=BOB),
        write_markers(ref("a.producer_id"), ref("a.producer_epoch"), False, conn=BOB),
        call(65, 0, {"transactional_ids": ["{tx}"]}, conn=BOB),
        call(66, 1, {"state_filters": [], "producer_id_filters": [], "duration_filter": -1}, conn=BOB),
        call(66, 1, {"state_filters": [], "producer_id_filters": [], "duration_filter": -1}),
        end_txn("a", commit=True),
    ]),
    Scenario("unauth/transactions/two_phase_commit",
             "Bob may WRITE the transactional id but not TWO_PHASE_COMMIT: InitProducerId v6 with enable_2pc is "
             "TRANSACTIONAL_ID_AUTHORIZATION_FAILED, without it answered.", broker=STRICT_UNSTABLE, steps=[
        create_acls(bob_acl(TXN, "{tx}", WRITE)),
        call(22, 6, {"transactional_id": "{tx}", "transaction_timeout_ms": 60000, "producer_id": -1,
                     "producer_epoch": -1, "enable2_pc": True, "keep_prepared_txn": False}, conn=BOB),
        call(22, 6, {"transactional_id": "{tx}", "transaction_timeout_ms": 60000, "producer_id": -1,
                     "producer_epoch": -1, "enable2_pc": False, "keep_prepared_txn": False}, conn=BOB,
             until={"error_code": 0}),
    ]),
    Scenario("unauth/cluster/acls_and_configs",
             "A principal without ACLs: DescribeAcls, CreateAcls and DeleteAcls are CLUSTER_AUTHORIZATION_FAILED; "
             "DescribeConfigs, AlterConfigs and IncrementalAlterConfigs refuse a topic with "
             "TOPIC_AUTHORIZATION_FAILED, a group with GROUP_AUTHORIZATION_FAILED, the broker, a broker logger "
             "and client metrics with CLUSTER_AUTHORIZATION_FAILED.", broker=SECURED_STRICT, steps=[
        call(29, 3, {"resource_type_filter": 2, "resource_name_filter": "{t}", "pattern_type_filter": 3,
                     "principal_filter": None, "host_filter": None, "operation": 1, "permission_type": 1}, conn=BOB),
        create_acls(bob_acl(TOPIC, "{t}", READ), conn=BOB),
        call(31, 3, {"filters": [{"resource_type_filter": 2, "resource_name_filter": "{t}", "pattern_type_filter": 3,
                                  "principal_filter": None, "host_filter": None, "operation": 1,
                                  "permission_type": 1}]}, conn=BOB),
        describe_configs((TOPIC, "{t}"), conn=BOB),
        describe_configs((BROKER, "1"), conn=BOB),
        describe_configs((BROKER_LOGGER, "1"), conn=BOB),
        describe_configs((CONFIG_GROUP, "{g}"), conn=BOB),
        describe_configs((CLIENT_METRICS, "{c}"), conn=BOB),
        alter_configs((TOPIC, "{t}", "retention.ms", "100000"), conn=BOB),
        alter_configs((BROKER, "1", "log.cleaner.backoff.ms", "15001"), conn=BOB),
        alter_configs((CONFIG_GROUP, "{g}", "consumer.session.timeout.ms", "50000"), conn=BOB),
        incremental_alter((TOPIC, "{t}", "retention.ms", "100000"), conn=BOB),
        incremental_alter((BROKER, "1", "log.cleaner.backoff.ms", "15001"), conn=BOB),
        incremental_alter((BROKER_LOGGER, "1", "kafka.server.KafkaApis", "DEBUG"), conn=BOB),
        incremental_alter((CONFIG_GROUP, "{g}", "consumer.session.timeout.ms", "50000"), conn=BOB),
        incremental_alter((CLIENT_METRICS, "{c}", "interval.ms", "60000"), conn=BOB),
        describe_configs((TOPIC, "{t}")),
    ]),
    Scenario("unauth/cluster/config_resource_types",
             "The config resource types the scenario above leaves out: the legacy AlterConfigs of a broker logger "
             "and of client metrics, and an unknown resource type in each config API.", broker=SECURED_STRICT, steps=[
        alter_configs((BROKER_LOGGER, "1", "kafka.server.KafkaApis", "DEBUG"), conn=BOB),
        alter_configs((CLIENT_METRICS, "{c}", "interval.ms", "60000"), conn=BOB),
        describe_configs((99, "{c}"), conn=BOB),
        alter_configs((99, "{c}", "interval.ms", "60000"), conn=BOB),
        incremental_alter((99, "{c}", "interval.ms", "60000"), conn=BOB),
    ]),
    Scenario("unauth/cluster/operations",
             "A principal without ACLs: DescribeLogDirs, ElectLeaders, DescribeUserScramCredentials, "
             "AlterUserScramCredentials and UpdateFeatures are CLUSTER_AUTHORIZATION_FAILED; DescribeCluster and "
             "ApiVersions answer (no authorized operation); SaslHandshake and SaslAuthenticate after the login "
             "are ILLEGAL_SASL_STATE.", broker=SECURED_STRICT, steps=[
        call(35, 4, {"topics": None}, conn=BOB),
        call(43, 2, {"election_type": 0, "topic_partitions": [{"topic": "{t}", "partitions": [0]}],
                     "timeout_ms": 5000}, conn=BOB),
        call(50, 0, {"users": [{"name": "{u}"}]}, conn=BOB),
        call(51, 0, {"deletions": [], "upsertions": [
            {"name": "{u}", "mechanism": 1, "iterations": 4096, "salt": b"0123456789abcdef",
             "salted_password": bytes(range(32))}]}, conn=BOB),
        call(57, 1, {"timeout_ms": 5000, "feature_updates": [
            {"feature": "transaction.version", "max_version_level": 1, "upgrade_type": 1}],
            "validate_only": True}, conn=BOB),
        call(60, 2, {"include_cluster_authorized_operations": True, "endpoint_type": 1,
                     "include_fenced_brokers": False}, conn=BOB),
        call(18, 4, {"client_software_name": "minikafka-conformance", "client_software_version": "1"}, conn=BOB),
        call(17, 1, {"mechanism": "PLAIN"}, conn=BOB),
        call(36, 2, {"auth_bytes": b"\x00bob\x00bob-secret"}, conn=BOB),
    ]),
    # ------------------------------------------------------------------ KIP-848 consumer groups
    Scenario("unauth/consumer_group/takeover_refused",
             "Issue 32: admin's consumer is a member of a KIP-848 group. A principal without ACLs (bob over "
             "SASL, an SSL client without a certificate) describes the group, joins it, and sends member_epoch "
             "-1 with the victim's member id: GROUP_AUTHORIZATION_FAILED each time (ConsumerGroupDescribe per "
             "group); DescribeGroups, OffsetFetch and ListGroups show it nothing. The victim's heartbeat still "
             "finds it a member with its partitions.", broker=SECURED_STRICT, steps=[
        hb("{m1}", save="victim"),
        describe(conn=SSL),
        describe(conn=BOB),
        hb("{m2}", conn=SSL),
        hb("{m2}", conn=BOB),
        hb("{m1}", -1, topics=None, rto=-1, conn=SSL),
        hb("{m1}", -1, topics=None, rto=-1, conn=BOB),
        hb("{m1}", ref("victim.member_epoch"), topics=None, rto=-1, instance=None, conn=BOB,
           label="a heartbeat as the victim"),
        call(15, 6, {"groups": ["{g}"], "include_authorized_operations": True}, conn=BOB),
        call(9, 9, {"groups": [{"group_id": "{g}", "member_id": "{m1}", "member_epoch": ref("victim.member_epoch"),
                                "topics": None}], "require_stable": True}, conn=BOB),
        call(16, 5, {"states_filter": [], "types_filter": []}, conn=BOB),
        beat("{m1}", ref("victim.member_epoch")),
        describe(),
    ]),
    Scenario("unauth/consumer_group/topic_checks",
             "Bob may READ the group but DESCRIBE only {t}: a ConsumerGroupHeartbeat subscribing {u}, or {t} and "
             "{u}, is TOPIC_AUTHORIZATION_FAILED; subscribing {t} joins. Once admin's member is assigned {u}, "
             "bob's ConsumerGroupDescribe of the group is TOPIC_AUTHORIZATION_FAILED without members; admin's "
             "is whole.", broker=SECURED_STRICT, topics=TWO_TOPICS, steps=[
        create_acls(bob_acl(GROUP, "{g}", READ), bob_acl(TOPIC, "{t}", DESCRIBE)),
        hb("{m1}", topics=["{u}"], conn=BOB, until={"error_code": 29}),
        hb("{m1}", topics=["{t}", "{u}"], conn=BOB),
        hb("{m1}", topics=["{t}"], conn=BOB, save="bob"),
        describe(conn=BOB),
        hb("{m2}", topics=["{u}"], save="admin"),
        describe(conn=BOB),
        describe(ops=False),
    ]),
    Scenario("unauth/consumer_group/regex_without_describe",
             "Bob may READ the group but DESCRIBE no topic: a ConsumerGroupHeartbeat subscribing a regex "
             "matching {t} is answered, and resolves to no topic (Kafka resolves a regex with the topics the "
             "heartbeat's principal may DESCRIBE): bob is assigned nothing.", broker=SECURED_STRICT, steps=[
        create_acls(bob_acl(GROUP, "{g}", READ)),
        hb("{m1}", topics=None, regex="{t}", conn=BOB, until={"error_code": 0}, save="bob"),
        hb("{m1}", ref("bob.member_epoch"), topics=None, regex="{t}", owned=(), conn=BOB),
        describe(ops=False),
    ]),
]

# --------------------------------------------------------- client quotas, delegation tokens
# SECURED_STRICT with a delegation token secret and the SCRAM mechanisms (dsl.TOKENS' additions)
STRICT_TOKENS = dict(SECURED_STRICT, **{k: v for k, v in TOKENS.items() if k not in SECURED})
SCENARIOS += [
    Scenario("unauth/client_quotas",
             "Bob without ACLs: AlterClientQuotas is CLUSTER_AUTHORIZATION_FAILED for every entry (its entity "
             "as sent, nothing changed), DescribeClientQuotas too (no entries).", broker=SECURED_STRICT, steps=[
        call(49, 1, {"entries": [{"entity": [{"entity_type": "user", "entity_name": "{u}"}],
                                  "ops": [{"key": "producer_byte_rate", "value": 1024.0, "remove": False}]}],
                     "validate_only": False}, conn=BOB),
        call(48, 1, {"components": [{"entity_type": "user", "match_type": 0, "match": "{u}"}], "strict": False},
             conn=BOB),
        call(48, 1, {"components": [{"entity_type": "user", "match_type": 0, "match": "{u}"}], "strict": False}),
    ]),
    Scenario("unauth/delegation_tokens",
             "Bob without ACLs and admin's token: a token for admin is DELEGATION_TOKEN_AUTHORIZATION_FAILED "
             "(CREATE_TOKENS on User:admin), renewing or expiring admin's token DELEGATION_TOKEN_OWNER_MISMATCH, "
             "describing tokens lists none of admin's; his own token he may create.", broker=STRICT_TOKENS, steps=[
        call(38, 3, {"owner_principal_type": None, "owner_principal_name": None, "renewers": [],
                     "max_lifetime_ms": 3600000}, save="admins"),
        call(38, 3, {"owner_principal_type": "User", "owner_principal_name": "admin", "renewers": [],
                     "max_lifetime_ms": -1}, conn=BOB),
        call(39, 2, {"hmac": ref("admins.hmac"), "renew_period_ms": -1}, conn=BOB, retry_while=(62,)),
        call(40, 2, {"hmac": ref("admins.hmac"), "expiry_time_period_ms": -1}, conn=BOB),
        call(41, 3, {"owners": None}, conn=BOB),
        call(41, 3, {"owners": [{"principal_type": "User", "principal_name": "admin"}]}, conn=BOB),
        call(38, 3, {"owner_principal_type": None, "owner_principal_name": None, "renewers": [],
                     "max_lifetime_ms": 3600000}, conn=BOB),
    ]),
]

# issue 36 (apis-admin): partition reassignments, DescribeQuorum, log-dir moves, config resources
SCENARIOS += [
    Scenario("unauth/admin_apis/reassignments_quorum_log_dirs_config_resources",
             "Bob without ACLs: AlterPartitionReassignments and AlterReplicaLogDirs (ALTER on the cluster), "
             "ListPartitionReassignments and DescribeQuorum (DESCRIBE on the cluster), ListConfigResources "
             "(DESCRIBE_CONFIGS on the cluster): each refused with CLUSTER_AUTHORIZATION_FAILED.",
             broker=SECURED_STRICT, steps=[
        call(45, 1, {"timeout_ms": 30000, "allow_replication_factor_change": True, "topics": [
            {"name": "{t}", "partitions": [{"partition_index": 0, "replicas": [1]}]}]}, conn=BOB),
        call(46, 0, {"timeout_ms": 30000, "topics": [{"name": "{t}", "partition_indexes": [0]}]}, conn=BOB),
        call(55, 2, {"topics": [{"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}]}]},
             conn=BOB),
        call(34, 2, {"dirs": [{"path": "/no/such/log-dir", "topics": [{"name": "{t}", "partitions": [0]}]}]},
             conn=BOB),
        call(74, 1, {"resource_types": []}, conn=BOB),
        call(74, 0, {}, conn=BOB),
    ]),
]
