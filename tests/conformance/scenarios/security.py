"""Security beyond SASL: the SSL listener's principals (no client certificate: User:ANONYMOUS; a
certificate with CN=alice: User:alice by ssl.principal.mapping.rules), the SCRAM admin APIs, and
KIP-430's authorized operations in Metadata and DescribeCluster with and without an authorizer.
Connections: "main" (plain, User:ANONYMOUS), "ssl", "ssl:alice", "sasl:alice" (dsl.SECURED)."""
from ..dsl import SECURED, SECURED_OPEN, SECURED_STRICT, Scenario, batch, call, fetch, produce
from .acls import ALICE, DESCRIBE, READ, TOPIC, WRITE, acl, create_acls, metadata

SSL, SSL_ALICE, CAROL = "ssl", "ssl:alice", "sasl:carol"
ANONYMOUS = "User:ANONYMOUS"
SHA256, SHA512 = 1, 2
OK = {"responses.0.partition_responses.0.error_code": 0}


def metadata_v(v, cluster_ops=True, topic_ops=True, topic="{t}", **kw):
    """Metadata v8-v10 (the versions with include_cluster_authorized_operations)."""
    return call(3, v, {"topics": [{"name": topic, "topic_id": None} if v >= 10 else {"name": topic}],
                       "allow_auto_topic_creation": False, "include_cluster_authorized_operations": cluster_ops,
                       "include_topic_authorized_operations": topic_ops}, **kw)


def describe_cluster(v=1, ops=True, **kw):
    body = {"include_cluster_authorized_operations": ops}
    if v >= 1:
        body["endpoint_type"] = 1
    return call(60, v, body, **kw)


def describe_scram(*users, **kw):
    return call(50, 0, {"users": [{"name": u} for u in users]}, **kw)


def upsert(user, mechanism=SHA256, iterations=4096, size=32):
    return {"name": user, "mechanism": mechanism, "iterations": iterations, "salt": b"0123456789abcdef",
            "salted_password": bytes(range(size))}


def alter_scram(upsertions=(), deletions=(), **kw):
    return call(51, 0, {"deletions": [{"name": u, "mechanism": m} for u, m in deletions],
                        "upsertions": list(upsertions)}, **kw)


SCENARIOS = [
    # ---------------------------------------------------------------- SSL principals
    Scenario("sec/ssl/no_certificate_is_anonymous_and_needs_acls",
             "An SSL client without a certificate is User:ANONYMOUS: once the topic has ACLs (for alice), "
             "its produce, fetch and Metadata are refused with TOPIC_AUTHORIZATION_FAILED; after CreateAcls "
             "for User:ANONYMOUS (WRITE, READ) they go through.", broker=SECURED_OPEN, steps=[
        create_acls(acl(TOPIC, "{t}", READ)),
        metadata(conn=SSL, until={"topics.0.error_code": 29}),
        produce(batch(), conn=SSL),
        fetch(isolation=0, conn=SSL),
        create_acls(acl(TOPIC, "{t}", WRITE, principal=ANONYMOUS), acl(TOPIC, "{t}", READ, principal=ANONYMOUS)),
        produce(batch(), conn=SSL, until=OK),
        fetch(isolation=0, conn=SSL),
        metadata(conn=SSL),
    ]),
    Scenario("sec/ssl/strict/no_certificate_needs_acls",
             "Kafka's default (only User:admin is a super user, nothing without an ACL): an SSL client "
             "without a certificate gets TOPIC_AUTHORIZATION_FAILED on produce, fetch and Metadata; after "
             "CreateAcls (by admin) for User:ANONYMOUS it may write and read, and so may a plaintext "
             "client, the same principal; CN=alice still may not.", broker=SECURED_STRICT, steps=[
        produce(batch(), conn=SSL),
        fetch(isolation=0, conn=SSL),
        metadata(conn=SSL),
        produce(batch(), conn="plain"),
        create_acls(acl(TOPIC, "{t}", WRITE, principal=ANONYMOUS), acl(TOPIC, "{t}", READ, principal=ANONYMOUS)),
        produce(batch(), conn=SSL, until=OK),
        fetch(isolation=0, conn=SSL),
        metadata(conn=SSL),
        produce(batch(), conn="plain"),
        produce(batch(), conn=SSL_ALICE),
    ]),
    Scenario("sec/ssl/certificate_cn_is_the_principal",
             "A client certificate with subject CN=alice is User:alice (ssl.principal.mapping.rules): an ACL "
             "for User:alice lets it write, the same connection without a certificate is still refused.",
             broker=SECURED_OPEN, steps=[
        create_acls(acl(TOPIC, "{t}", WRITE)),
        produce(batch(), conn=SSL_ALICE, until=OK),
        metadata(conn=SSL_ALICE),
        produce(batch(), conn=SSL),
        call(60, 1, {"include_cluster_authorized_operations": True, "endpoint_type": 1}, conn=SSL_ALICE),
    ]),
    Scenario("sec/ssl/anonymous_super_user",
             "With super.users=User:ANONYMOUS an SSL client without a certificate may do everything (it is "
             "User:ANONYMOUS); with CN=alice and no ACL it is refused.", broker=SECURED, steps=[
        produce(batch(), conn=SSL),
        fetch(isolation=0, conn=SSL),
        metadata(conn=SSL),
        produce(batch(), conn=SSL_ALICE),
        metadata(conn=SSL_ALICE),
    ]),
    # ---------------------------------------------------------------- SCRAM admin APIs
    Scenario("sec/scram/alter_and_describe",
             "AlterUserScramCredentials and DescribeUserScramCredentials as a super user: upserts of both "
             "mechanisms (one user twice in one request: DUPLICATE_RESOURCE, whatever the mechanisms), too "
             "few or too many iterations, a salted password of another size than the hash's, an empty salt, an "
             "unknown mechanism, an "
             "unknown user, a user twice in one describe, deletions of an existing and of a missing credential.", broker=SECURED,
             steps=[
        describe_scram("{u}"),
        alter_scram([upsert("{u}"), upsert("{u}", SHA512, 8192, 64)]),
        alter_scram([upsert("{u}"), upsert("{v}", SHA512, 8192, 64)]),
        alter_scram([upsert("{u}", SHA512, 4096, 64)]),
        # Kafka's broker answers from its copy of the metadata log, a moment behind the controller
        # (one user: Kafka lists several in the order of a hash map)
        describe_scram("{u}", until={"results.0.credential_infos.1.iterations": 4096}),
        describe_scram("{u}", "{v}"),
        call(50, 0, {"users": None}, label="every user (only this scenario's are compared)"),
        alter_scram([upsert("{v}", iterations=1000)]),
        alter_scram([upsert("{v}", size=10)]),
        alter_scram([upsert("{v}", mechanism=0)]),
        alter_scram([dict(upsert("{x}"), salt=b"", salted_password=b"")]),
        alter_scram([upsert("{x}", iterations=16385)], deletions=[("{x}", SHA512), ("{x}", SHA512)]),
        alter_scram([upsert("{w}")], deletions=[("{w}", SHA256)]),
        describe_scram("{u}", "{u}"),
        alter_scram(deletions=[("{u}", SHA512), ("{v}", SHA256)]),
        describe_scram("{u}", until={"results.0.credential_infos.1": "<absent>"}),
    ]),
    Scenario("sec/scram/alter_needs_alter_on_the_cluster",
             "AlterUserScramCredentials as alice without ACLs: CLUSTER_AUTHORIZATION_FAILED, nothing changed.",
             broker=SECURED, steps=[
        alter_scram([upsert("{u}")], conn=ALICE),
        alter_scram(deletions=[("{u}", SHA256)], conn=ALICE),
        describe_scram("{u}"),
    ]),
    Scenario("sec/scram/describe_needs_describe_on_the_cluster",
             "DescribeUserScramCredentials as alice without ACLs.", broker=SECURED, steps=[
        describe_scram("{u}", conn=ALICE),
    ]),
    # ---------------------------------------------------------------- KIP-430 authorized operations
    Scenario("sec/ops/no_authorizer",
             "Metadata v8-v10 and DescribeCluster asked for authorized operations on a cluster without "
             "an authorizer, and not asked.", steps=[
        metadata_v(8), metadata_v(9), metadata_v(10),
        metadata_v(10, cluster_ops=False, topic_ops=False),
        call(3, 11, {"topics": [{"name": "{t}", "topic_id": None}], "allow_auto_topic_creation": False,
                     "include_topic_authorized_operations": True}),
        describe_cluster(0), describe_cluster(1), describe_cluster(1, ops=False),
    ]),
    Scenario("sec/ops/super_user",
             "The same as a super user of a cluster with ACLs.", broker=SECURED, steps=[
        metadata_v(8), metadata_v(9), metadata_v(10),
        metadata_v(10, cluster_ops=False, topic_ops=False),
        describe_cluster(0), describe_cluster(1), describe_cluster(1, ops=False),
    ]),
    Scenario("sec/ops/alice_without_acls",
             "The same as alice, who has no ACL on the cluster or on this scenario's topic.", broker=SECURED, steps=[
        metadata_v(8, conn=ALICE), metadata_v(9, conn=ALICE), metadata_v(10, conn=ALICE),
        metadata_v(10, cluster_ops=False, topic_ops=False, conn=ALICE),
        describe_cluster(0, conn=ALICE), describe_cluster(1, conn=ALICE), describe_cluster(1, ops=False, conn=ALICE),
    ]),
    # carol: a user no other scenario gives an ACL (a cluster ACL would change what others see)
    Scenario("sec/ops/without_super_user",
             "The same as carol, first without ACLs, then with READ on the topic and DESCRIBE on the cluster.",
             broker=SECURED, steps=[
        metadata_v(8, conn=CAROL), metadata_v(10, conn=CAROL), describe_cluster(1, conn=CAROL),
        create_acls(acl(TOPIC, "{t}", READ, principal="User:carol"),
                    acl(4, "kafka-cluster", DESCRIBE, principal="User:carol")),
        metadata_v(10, conn=CAROL, until={"topics.0.error_code": 0}),
        metadata_v(8, conn=CAROL), describe_cluster(1, conn=CAROL), describe_cluster(0, conn=CAROL),
    ]),
]
