"""The ACL engine's StandardAuthorizer semantics, pure."""
from minikafka.broker.security.authorizer import (
    ALL, ALLOW, ALTER, ALTER_CONFIGS, CLUSTER, DENY, DESCRIBE, DESCRIBE_CONFIGS, GROUP, IDEMPOTENT_WRITE,
    LITERAL, PREFIXED, READ, TOPIC, WRITE, AclBinding, Authorizer, filter_matches, validate_binding)


def az(*bindings, supers=(), allow_if_none=False):
    return Authorizer([AclBinding(*b) for b in bindings], set(supers), allow_if_none)


def test_literal_prefixed_wildcard_and_host():
    a = az((TOPIC, "orders", LITERAL, "User:alice", "*", READ, ALLOW),
           (TOPIC, "log-", PREFIXED, "User:*", "10.0.0.1", WRITE, ALLOW),
           (TOPIC, "*", LITERAL, "User:bob", "*", DESCRIBE, ALLOW))
    assert a.authorize("User:alice", "1.2.3.4", READ, TOPIC, "orders")
    assert not a.authorize("User:alice", "1.2.3.4", READ, TOPIC, "orders2")
    assert a.authorize("User:carol", "10.0.0.1", WRITE, TOPIC, "log-app")
    assert not a.authorize("User:carol", "10.0.0.2", WRITE, TOPIC, "log-app")
    assert a.authorize("User:bob", "h", DESCRIBE, TOPIC, "anything")
    assert not a.authorize("User:bob", "h", DESCRIBE, GROUP, "anything")


def test_implied_describe_and_deny_wins():
    a = az((TOPIC, "t", LITERAL, "User:a", "*", WRITE, ALLOW), (TOPIC, "t", LITERAL, "User:a", "*", ALTER_CONFIGS, ALLOW))
    assert a.authorize("User:a", "h", DESCRIBE, TOPIC, "t") and a.authorize("User:a", "h", DESCRIBE_CONFIGS, TOPIC, "t")
    assert not a.authorize("User:a", "h", READ, TOPIC, "t")
    d = az((TOPIC, "t", LITERAL, "User:a", "*", ALL, ALLOW), (TOPIC, "t", PREFIXED, "User:*", "*", READ, DENY))
    assert d.authorize("User:a", "h", WRITE, TOPIC, "t") and not d.authorize("User:a", "h", READ, TOPIC, "t")
    # a denied READ does not deny the DESCRIBE that ALL allows
    assert d.authorize("User:a", "h", DESCRIBE, TOPIC, "t")


def test_super_users_and_no_acl_default():
    a = az((TOPIC, "t", LITERAL, "User:a", "*", READ, DENY), supers={"User:root"}, allow_if_none=True)
    assert a.authorize("User:root", "h", ALTER, CLUSTER, "kafka-cluster")
    assert a.authorize("User:x", "h", READ, TOPIC, "other")      # no ACL names it: allowed
    assert not a.authorize("User:x", "h", READ, TOPIC, "t")      # an ACL names it: not for x
    assert not az().authorize("User:x", "h", READ, TOPIC, "t")  # default: denied


def test_authorize_any_for_idempotent_producers():
    a = az((TOPIC, "a-", PREFIXED, "User:p", "*", WRITE, ALLOW))
    assert a.authorize_any("User:p", "h", WRITE, TOPIC) and not a.authorize_any("User:q", "h", WRITE, TOPIC)
    b = az((TOPIC, "a-", PREFIXED, "User:p", "*", WRITE, ALLOW), (TOPIC, "*", LITERAL, "User:p", "*", WRITE, DENY))
    assert not b.authorize_any("User:p", "h", WRITE, TOPIC)
    assert not a.authorize("User:p", "h", IDEMPOTENT_WRITE, CLUSTER, "kafka-cluster")


def test_validation_and_filters():
    assert validate_binding(AclBinding(TOPIC, "*", PREFIXED, "User:a", "*", READ, ALLOW)) is None  # Kafka 4.1 accepts it
    assert validate_binding(AclBinding(CLUSTER, "c", LITERAL, "User:a", "*", ALTER, ALLOW))
    assert validate_binding(AclBinding(TOPIC, "t", LITERAL, "alice", "*", READ, ALLOW))
    assert validate_binding(AclBinding(TOPIC, "t", LITERAL, "User:a", "*", READ, ALLOW)) is None
    b = AclBinding(TOPIC, "pre", PREFIXED, "User:a", "*", READ, ALLOW)
    f = {"resource_type": TOPIC, "resource_name": "prefix-x", "pattern_type": 2, "principal": None, "host": None,
         "operation": 1, "permission": 1}
    assert filter_matches(f, b) and not filter_matches(dict(f, pattern_type=LITERAL), b)
