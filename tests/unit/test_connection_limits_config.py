"""The socket server settings (queued.max.request.bytes, max.connections*, sasl.server.max.receive.size):
Kafka's defaults and validation, each refusal one line naming the key."""
from __future__ import annotations

import pytest

from minikafka.broker.config import INT_MAX, BrokerConfig, ConfigError


def test_defaults():
    c = BrokerConfig.load()
    assert c["queued.max.request.bytes"] == 104857600  # minikafka's bound (Kafka: -1, unbounded)
    assert c["max.connections"] == c["max.connections.per.ip"] == c["max.connection.creation.rate"] == INT_MAX
    assert c["max.connections.per.ip.overrides"] == ""
    [lst] = c.listeners
    assert lst.max_connections == lst.max_connection_creation_rate == INT_MAX


def test_the_pool_follows_a_larger_request_size_unless_set():
    c = BrokerConfig.load(overrides=["socket.request.max.bytes=209715200"])
    assert c["queued.max.request.bytes"] == 209715200
    assert BrokerConfig.load(overrides=["queued.max.request.bytes=-1"])["queued.max.request.bytes"] == -1


@pytest.mark.parametrize("overrides,message", [
    (["queued.max.request.bytes=1000"],
     "queued.max.request.bytes must be larger or equal to socket.request.max.bytes"),
    (["queued.max.request.bytes=lots"], "Invalid value lots for configuration queued.max.request.bytes"),
    (["max.connections=-1"], "Invalid value -1 for configuration max.connections: Value must be at least 0"),
    (["max.connections.per.ip=-5"], "Invalid value -5 for configuration max.connections.per.ip"),
    (["max.connections.per.ip=0"],
     "max.connections.per.ip can be set to zero only if max.connections.per.ip.overrides property is set."),
    (["max.connections.per.ip.overrides=127.0.0.1:ten"],
     'Invalid value 127.0.0.1:ten for configuration max.connections.per.ip.overrides: For input string: "ten"'),
    (["max.connections.per.ip.overrides=no-such-host.invalid:3"],
     "max.connections.per.ip.overrides: contains invalid addresses : no-such-host.invalid"),
    (["max.connection.creation.rate=x"], "Invalid value x for configuration max.connection.creation.rate"),
    (["connections.max.idle.ms=50", "connection.failed.authentication.delay.ms=50"],
     "connection.failed.authentication.delay.ms=50 should always be less than connections.max.idle.ms=50"),
    (["listener.name.plaintext.max.connections=-2"],
     "Invalid value -2 for configuration listener.name.plaintext.max.connections: Value must be at least 0"),
    (["listener.name.plaintext.max.connection.creation.rate=fast"],
     "Invalid value fast for configuration listener.name.plaintext.max.connection.creation.rate"),
    (["listener.name.plaintext.max.connections.per.ip=3"], "listener.name.plaintext.max.connections.per.ip"),
])
def test_bad_values_are_refused_naming_the_key(overrides, message):
    with pytest.raises(ConfigError) as e:
        BrokerConfig.load(overrides=overrides)
    assert message in str(e.value) and "\n" not in str(e.value)


def test_per_listener_limits_default_to_the_broker_wide_ones():
    c = BrokerConfig.load(overrides=[
        "listeners=PLAINTEXT://127.0.0.1:0,OTHER://127.0.0.1:0",
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,OTHER:PLAINTEXT",
        "max.connections=50", "max.connection.creation.rate=7", "listener.name.other.max.connections=5",
        "max.connections.per.ip=0", "max.connections.per.ip.overrides=localhost:4,127.0.0.2:9"])
    plain, other = c.listeners
    assert (plain.max_connections, other.max_connections) == (50, 5)
    assert plain.max_connection_creation_rate == other.max_connection_creation_rate == 7


def test_sasl_max_receive_size_per_listener():
    c = BrokerConfig.load(overrides=[
        "listeners=SASL_PLAINTEXT://127.0.0.1:0",
        "sasl.enabled.mechanisms=PLAIN", "sasl.server.max.receive.size=1000",
        'plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_a="b";'])
    assert c.listeners[0].sasl_max_receive_size == 1000
    with pytest.raises(ConfigError, match="sasl.server.max.receive.size"):
        BrokerConfig.load(overrides=[
            "listeners=SASL_PLAINTEXT://127.0.0.1:0", "sasl.enabled.mechanisms=PLAIN",
            "listener.name.sasl_plaintext.sasl.server.max.receive.size=big",
            'plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_a="b";'])
