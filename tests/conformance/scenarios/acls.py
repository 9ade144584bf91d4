"""Authorization (StandardAuthorizer): what a principal without the ACL gets, API by API, and
the ACL APIs themselves. The plain connection is User:ANONYMOUS, a super user that sets up
topics and ACLs; conn="sasl:alice" speaks as User:alice over SASL_PLAINTEXT (dsl.SECURED)."""
from ..dsl import (SECURED, Scenario, add_offsets, add_partitions, await_txn, batch, call, end_txn, init_pid,
                   list_offsets, produce, txn_offset_commit)

ALICE = "sasl:alice"
BOB = "sasl:bob"  # no ACL anywhere but the ones a scenario gives it (scenarios share a broker)
TOPIC, GROUP, TXN = 2, 3, 5
READ, WRITE, DESCRIBE = 3, 4, 8
LITERAL, PREFIXED = 3, 4
ANY = 1


def acl(resource_type, name, operation, principal="User:alice", pattern=LITERAL, permission=3):
    return {"resource_type": resource_type, "resource_name": name, "resource_pattern_type": pattern,
            "principal": principal, "host": "*", "operation": operation, "permission_type": permission}


def create_acls(*acls, **kw):
    return call(30, 3, {"creations": list(acls)}, **kw)


def metadata(topic="{t}", ops=True, **kw):
    return call(3, 12, {"topics": [{"name": topic, "topic_id": None}], "allow_auto_topic_creation": False,
                        "include_topic_authorized_operations": ops}, **kw)


def find_coordinator(key, key_type, v=4, **kw):
    body = {"key_type": key_type, "coordinator_keys": [key]} if v >= 4 else {"key": key, "key_type": key_type}
    return call(10, v, body, **kw)


def offset_commit(group="{g}", topic="{t}", **kw):
    return call(8, 8, {"group_id": group, "generation_id_or_member_epoch": -1, "member_id": "",
                       "group_instance_id": None, "retention_time_ms": -1, "topics": [
                           {"name": topic, "partitions": [{"partition_index": 0, "committed_offset": 0,
                                                           "committed_leader_epoch": -1, "committed_metadata": ""}]}]},
                **kw)


CAROL = "sasl:carol"  # given ACLs on its own scenario's names only (security.py uses carol too)
ALL, DENY = 2, 2


SCENARIOS = [
    Scenario("acl/topic/deny_wins_over_allow",
             "ALLOW ALL and DENY WRITE for one principal on a topic: reads and describes go through, a produce is "
             "refused and the topic's authorized operations leave WRITE out; then DENY DESCRIBE for User:* "
             "hides the topic from the same principal, whatever its ALLOW ALL.", broker=SECURED, steps=[
        create_acls(acl(TOPIC, "{t}", ALL, principal="User:carol"),
                    acl(TOPIC, "{t}", WRITE, principal="User:carol", permission=DENY)),
        list_offsets(isolation=0, conn=CAROL, until={"topics.0.partitions.0.error_code": 0}),
        produce(batch(), conn=CAROL),
        metadata(conn=CAROL),
        create_acls(acl(TOPIC, "{t}", DESCRIBE, principal="User:*", permission=DENY)),
        list_offsets(isolation=0, conn=CAROL, until={"topics.0.partitions.0.error_code": 29}),
        metadata(conn=CAROL),
        produce(batch(), conn=CAROL),
    ]),
    Scenario("acl/topic/write_needs_an_acl",
             "Produce and Metadata without an ACL: TOPIC_AUTHORIZATION_FAILED; with WRITE the produce "
             "goes through and WRITE implies DESCRIBE (KIP-430 operations).", broker=SECURED, steps=[
        produce(batch(), conn=ALICE, label="no ACL"),
        metadata(conn=ALICE),
        create_acls(acl(TOPIC, "{t}", WRITE)),
        produce(batch(), conn=ALICE, until={"responses.0.partition_responses.0.error_code": 0}),
        metadata(conn=ALICE),
        produce(batch(), conn=ALICE),
    ]),
    Scenario("acl/txn/transactional_id_needs_describe_and_write",
             "FindCoordinator already needs DESCRIBE on the transactional id (v4 list and v3 single "
             "answer), InitProducerId needs WRITE; an idempotent producer needs IDEMPOTENT_WRITE or WRITE "
             "on a topic.", broker=SECURED, steps=[
        find_coordinator("{tx}", 1, conn=BOB),
        find_coordinator("{tx}", 1, v=3, conn=BOB),
        init_pid(conn=BOB),
        init_pid(txn=None, conn=BOB),
        create_acls(acl(TXN, "{tx}", DESCRIBE, principal="User:bob")),
        find_coordinator("{tx}", 1, conn=BOB, until={"coordinators.0.error_code": 0}),
        init_pid(conn=BOB),
        produce(batch(pid=1000, epoch=0, transactional=True), txn="{tx}", conn=BOB),
    ]),
    Scenario("acl/group/commit_needs_read_on_the_group",
             "OffsetCommit and FindCoordinator without READ/DESCRIBE on the group: GROUP_AUTHORIZATION_FAILED, "
             "whatever the topic's ACLs; then with READ on the group.", broker=SECURED, steps=[
        create_acls(acl(TOPIC, "{t}", READ)),
        offset_commit(conn=ALICE),
        find_coordinator("{g}", 0, conn=ALICE),
        find_coordinator("{g}", 0, v=3, conn=ALICE),
        call(9, 7, {"group_id": "{g}", "topics": None, "require_stable": True}, conn=ALICE),
        create_acls(acl(GROUP, "{g}", READ)),
        offset_commit(conn=ALICE, until={"topics.0.partitions.0.error_code": 0}),
    ]),
    Scenario("acl/cluster/actions_need_cluster_acls",
             "WriteTxnMarkers and CreateTopics without ACLs.", broker=SECURED, steps=[
        call(27, 1, {"markers": [{"producer_id": 1, "producer_epoch": 0, "transaction_result": False,
                                  "topics": [{"name": "{t}", "partition_indexes": [0]}], "coordinator_epoch": 0}]},
             conn=ALICE),
        call(19, 7, {"topics": [{"name": "{n}", "num_partitions": 1, "replication_factor": 1, "assignments": [],
                                 "configs": []}], "timeout_ms": 5000, "validate_only": False}, conn=ALICE),
    ]),
    Scenario("acl/apis/create_describe_delete",
             "CreateAcls (valid, a wrong cluster name, a principal without a type), DescribeAcls of a "
             "literal and of a prefixed pattern, DeleteAcls.", broker=SECURED, steps=[
        create_acls(acl(TOPIC, "{t}", READ), acl(TOPIC, "{t}", WRITE, pattern=PREFIXED),
                    acl(4, "{t}", READ), acl(TOPIC, "{t}", READ, principal="alice")),
        # one resource per answer: Kafka groups the ACLs of a DescribeAcls answer in a hash map,
        # so the order of several resources is not Kafka's to keep
        call(29, 3, {"resource_type_filter": TOPIC, "resource_name_filter": "{t}", "pattern_type_filter": LITERAL,
                     "principal_filter": None, "host_filter": None, "operation": ANY, "permission_type": ANY}),
        call(29, 3, {"resource_type_filter": TOPIC, "resource_name_filter": "{t}", "pattern_type_filter": PREFIXED,
                     "principal_filter": "User:alice", "host_filter": None, "operation": WRITE, "permission_type": ANY}),
        call(31, 3, {"filters": [{"resource_type_filter": TOPIC, "resource_name_filter": "{t}",
                                  "pattern_type_filter": PREFIXED, "principal_filter": None, "host_filter": None,
                                  "operation": ANY, "permission_type": ANY}]}),
    ]),
    Scenario("acl/txn/pipeline_needs_read_on_its_group",
             "A transactional producer with WRITE on its id and its output but no READ on the consumer "
             "group: AddOffsetsToTxn and TxnOffsetCommit are refused with GROUP_AUTHORIZATION_FAILED; the "
             "transaction's own writes go through.", broker=SECURED, steps=[
        create_acls(acl(TXN, "{tx}", WRITE), acl(TOPIC, "{t}", WRITE)),
        init_pid("a", conn=ALICE, until={"error_code": 0}),
        add_partitions("a", conn=ALICE),
        produce(batch("a", transactional=True), txn="{tx}", conn=ALICE),
        add_offsets("a", conn=ALICE),
        txn_offset_commit("a", {("{t}", 0): 1}, conn=ALICE),
        end_txn("a", commit=True, conn=ALICE),
        await_txn("CompleteCommit"),
    ]),
    Scenario("acl/group/membership_needs_read",
             "Classic group APIs without ACLs on the group: JoinGroup, SyncGroup, Heartbeat, LeaveGroup, "
             "DescribeGroups answer GROUP_AUTHORIZATION_FAILED; ListGroups leaves the group out; Metadata of "
             "every topic leaves out those it may not describe.", broker=SECURED, steps=[
        call(11, 9, {"group_id": "{g}", "session_timeout_ms": 10000, "rebalance_timeout_ms": 10000, "member_id": "",
                     "group_instance_id": None, "protocol_type": "consumer",
                     "protocols": [{"name": "range", "metadata": b""}], "reason": None}, conn=BOB),
        call(14, 5, {"group_id": "{g}", "generation_id": 1, "member_id": "m", "group_instance_id": None,
                     "protocol_type": "consumer", "protocol_name": "range", "assignments": []}, conn=BOB),
        call(12, 4, {"group_id": "{g}", "generation_id": 1, "member_id": "m", "group_instance_id": None}, conn=BOB),
        call(13, 5, {"group_id": "{g}", "members": [{"member_id": "m", "group_instance_id": None, "reason": None}]},
             conn=BOB),
        call(15, 5, {"groups": ["{g}"], "include_authorized_operations": True}, conn=BOB),
        call(16, 4, {"states_filter": []}, conn=BOB),
        call(3, 12, {"topics": None, "allow_auto_topic_creation": False, "include_topic_authorized_operations": False},
             conn=BOB),
    ]),
]
