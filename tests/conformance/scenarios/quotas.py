"""Client quotas (KIP-546): AlterClientQuotas and DescribeClientQuotas for user, client-id and ip
entities and their defaults, Kafka's validation (ClientQuotaControlManager) and filters
(ClientQuotasImage.describe), authorization (ALTER_CONFIGS / DESCRIBE_CONFIGS on the cluster), and
quotas surviving kill -9. Users and clients are the scenario's own names; scenarios that set a
type's default or name ip addresses (real addresses, shared by every scenario of a broker) have a
broker of their own. Kafka answers DescribeClientQuotas from its metadata image, a moment behind
the controller that answered AlterClientQuotas: a describe after an alter polls (until=)."""
from ..dsl import PRESENT, TOKENS, Scenario, batch, call, fetch, produce, restart
from .acls import acl, create_acls

USER, CLIENT, IP = "user", "client-id", "ip"
EXACT, DEFAULT, SPECIFIED = 0, 1, 2
CLUSTER, ALTER_CONFIGS, DESCRIBE_CONFIGS = 4, 11, 10


def entity(*pairs):
    return [{"entity_type": t, "entity_name": n} for t, n in pairs]


def op(key, value=0.0, remove=False):
    return {"key": key, "value": float(value), "remove": remove}


def alter(*entries, validate_only=False, v=1, **kw):
    """entries: (entity pairs, [ops])"""
    return call(49, v, {"entries": [{"entity": entity(*pairs), "ops": list(ops)} for pairs, ops in entries],
                        "validate_only": validate_only}, **kw)


def comp(kind, match_type, match=None):
    return {"entity_type": kind, "match_type": match_type, "match": match}


def describe(*components, strict=False, v=1, **kw):
    return call(48, v, {"components": list(components), "strict": strict}, **kw)


SCENARIOS = [
    Scenario("quota/alter/set_change_remove",
             "Quotas of a user, a client id and a (user, client id) pair: set, changed, one key removed, "
             "the last key removed (the entity goes), validate_only changes nothing; DescribeClientQuotas "
             "of each entity exactly, of the user with any client (non-strict and strict), v0 and v1.", steps=[
        alter(([(USER, "{u}")], [op("producer_byte_rate", 1048576), op("consumer_byte_rate", 2097152)]),
              ([(CLIENT, "{c}")], [op("request_percentage", 12.5)]),
              ([(USER, "{u}"), (CLIENT, "{c}")], [op("controller_mutation_rate", 3.5)])),
        describe(comp(USER, EXACT, "{u}"), until={"entries.1.values.1.key": "producer_byte_rate"}),
        describe(comp(CLIENT, EXACT, "{c}"), until={"entries.1.values.0.key": "request_percentage"}),
        describe(comp(USER, EXACT, "{u}"), comp(CLIENT, SPECIFIED), until={"entries.0.values.0.value": 3.5}),
        describe(comp(USER, EXACT, "{u}"), strict=True, label="strict: only the user entity"),
        describe(comp(USER, EXACT, "{u}"), v=0),
        alter(([(USER, "{u}")], [op("producer_byte_rate", 4096), op("consumer_byte_rate", remove=True)])),
        describe(comp(USER, EXACT, "{u}"), strict=True,
                 until={"entries.0.values.0.value": 4096.0, "entries.0.values.1": "<absent>"}),
        alter(([(CLIENT, "{c}")], [op("request_percentage", 99)]), validate_only=True),
        describe(comp(CLIENT, EXACT, "{c}"), strict=True, label="validate_only changed nothing"),
        alter(([(USER, "{u}")], [op("producer_byte_rate", remove=True)]),
              ([(CLIENT, "{c}")], [op("no_such_key", remove=True)]), label="removing what is not there is fine"),
        describe(comp(USER, EXACT, "{u}"), strict=True, until={"entries.0": "<absent>"}),
        describe(comp(USER, EXACT, "{u}"), comp(CLIENT, EXACT, "{c}")),
    ]),
    Scenario("quota/alter/validation",
             "What ClientQuotaControlManager refuses, each INVALID_REQUEST for its entity alone (the valid "
             "entity of the same request is applied): unknown key, a key of another entity kind, zero, "
             "negative and fractional values of integral keys, a LONG too large, an unknown entity type, "
             "an empty name, an empty entity, ip combined with user, a key twice, an entity twice (its first "
             "entry still applied), a type named twice (the last name wins); then what was applied.", steps=[
        alter(([(USER, "{u}")], [op("producer_byte_rate", 1000)]),
              ([(USER, "{v}")], [op("no_such_quota", 1)]),
              ([(CLIENT, "{c}")], [op("connection_creation_rate", 5)])),
        alter(([(USER, "{v}")], [op("producer_byte_rate", 0)]),
              ([(USER, "{w}")], [op("consumer_byte_rate", -1)]),
              ([(CLIENT, "{c}")], [op("producer_byte_rate", 1024.5)]),
              ([(CLIENT, "{d}")], [op("request_percentage", 0.001)])),
        alter(([(USER, "{v}")], [op("producer_byte_rate", 1e19)]),
              ([(USER, "{w}")], [op("controller_mutation_rate", 1e19)])),
        alter(([("group", "{g}")], [op("producer_byte_rate", 1)]),
              ([(USER, "")], [op("producer_byte_rate", 1)]),
              ([], [op("producer_byte_rate", 1)])),
        alter(([(IP, "127.0.0.1"), (USER, "{v}")], [op("connection_creation_rate", 1)])),
        alter(([(USER, "{v}")], [op("producer_byte_rate", 1), op("producer_byte_rate", 2)])),
        alter(([(USER, "{x}")], [op("producer_byte_rate", 7)]), ([(USER, "{x}")], [op("consumer_byte_rate", 8)])),
        alter(([(USER, "{y}"), (USER, "{z}")], [op("producer_byte_rate", 9)])),
        alter(([(USER, "{v}")], [op("producer_byte_rate", 1), op("bogus", 2)]),
              label="one bad key refuses the entity's other keys too"),
        describe(comp(USER, SPECIFIED), strict=True, until={"entries.3.entity.0.entity_name": "{z}"},
                 label="every user entity of this scenario"),
        describe(comp(CLIENT, SPECIFIED), strict=True, label="no client entity of this scenario"),
    ]),
    Scenario("quota/describe/filters",
             "DescribeClientQuotas filters over (user, client id) entities: a user's default client, the "
             "default user with a client, exact/default/specified per type, strict and not; and the filters "
             "Kafka refuses (an empty or unknown type, a type twice, exact without a name, default or "
             "specified with one, an unknown match type, ip beside user).", steps=[
        alter(([(USER, "{u}"), (CLIENT, None)], [op("producer_byte_rate", 100)]),
              ([(USER, None), (CLIENT, "{c}")], [op("consumer_byte_rate", 200)]),
              ([(USER, "{u}"), (CLIENT, "{c}")], [op("request_percentage", 30)]),
              ([(USER, "{u}")], [op("request_percentage", 40)])),
        describe(comp(USER, EXACT, "{u}"), until={"entries.2": PRESENT}),
        describe(comp(USER, EXACT, "{u}"), comp(CLIENT, DEFAULT)),
        describe(comp(USER, DEFAULT), comp(CLIENT, EXACT, "{c}")),
        describe(comp(CLIENT, EXACT, "{c}")),
        describe(comp(USER, SPECIFIED), comp(CLIENT, SPECIFIED), strict=True),
        describe(comp(USER, EXACT, "{u}"), comp(CLIENT, SPECIFIED), strict=True),
        describe(comp("", SPECIFIED)),
        describe(comp("group", SPECIFIED)),
        describe(comp(USER, SPECIFIED), comp(USER, EXACT, "{u}")),
        describe(comp(USER, EXACT, None)),
        describe(comp(USER, DEFAULT, "{u}")),
        describe(comp(USER, SPECIFIED, "{u}")),
        describe(comp(USER, 7)),
        describe(comp(IP, SPECIFIED), comp(USER, EXACT, "{u}")),
    ]),
    Scenario("quota/defaults_and_ips",
             "The default user, default client id and default (user, client id) entities, ip entities "
             "(an address, an IPv6 address, the short form \"1\", a host name that resolves, the default "
             "ip) and what is no ip (300.1.1.1, an empty name); DescribeClientQuotas of every entity, of "
             "the defaults, of every ip and of one.", alone=True, steps=[
        alter(([(USER, None)], [op("producer_byte_rate", 1024)]),
              ([(CLIENT, None)], [op("consumer_byte_rate", 2048)]),
              ([(USER, None), (CLIENT, None)], [op("request_percentage", 50)])),
        alter(([(IP, "10.1.2.3")], [op("connection_creation_rate", 10)]),
              ([(IP, "::1")], [op("connection_creation_rate", 11)]),
              ([(IP, "1")], [op("connection_creation_rate", 12)]),
              ([(IP, "localhost")], [op("connection_creation_rate", 13)]),
              ([(IP, None)], [op("connection_creation_rate", 14)])),
        alter(([(IP, "300.1.1.1")], [op("connection_creation_rate", 1)]),
              ([(IP, "")], [op("connection_creation_rate", 1)]),
              ([(IP, "10.1.2.4")], [op("connection_creation_rate", 1.5)]),
              ([(IP, "10.1.2.5")], [op("connection_creation_rate", 3e9)]),
              ([(IP, "10.1.2.6")], [op("producer_byte_rate", 1)])),
        describe(until={"entries.7": PRESENT}, label="every entity"),
        describe(comp(USER, DEFAULT)),
        describe(comp(USER, DEFAULT), strict=True),
        describe(comp(CLIENT, DEFAULT), strict=True),
        describe(comp(IP, SPECIFIED)),
        describe(comp(IP, DEFAULT)),
        describe(comp(IP, EXACT, "::1")),
        describe(comp(IP, EXACT, "0:0:0:0:0:0:0:1"), label="an ip entity is matched by its name as given"),
        alter(([(IP, "10.1.2.3")], [op("connection_creation_rate", remove=True)])),
        describe(comp(IP, SPECIFIED), until={"entries.4": "<absent>"}),
    ]),
    Scenario("quota/throttle/produce_and_fetch",
             "producer_byte_rate and consumer_byte_rate of 1024 for client id {c}: its first Produce of "
             "~12 KB is answered with Kafka's throttle time (the request's size over a fresh sensor's 10 "
             "windows, above the quota), its first Fetch of those records with an empty answer and the "
             "throttle of the answer's size; another client id's Produce and Fetch are not throttled.", steps=[
        alter(([(CLIENT, "{c}")], [op("producer_byte_rate", 1024), op("consumer_byte_rate", 1024)])),
        describe(comp(CLIENT, EXACT, "{c}"), until={"entries.0.values.1": PRESENT}),
        produce(batch(values=("x" * 12000,)), acks=1, conn="client:{c}", throttle=True,
                label="12 KB over 10 s windows at 1024 B/s: throttled"),
        produce(batch(values=("y" * 12000,)), acks=1, conn="client:{d}", throttle=True, label="another client"),
        fetch(isolation=0, conn="client:{d}", throttle=True, label="another client reads both batches"),
        fetch(isolation=0, conn="client:{c}", throttle=True,
              label="capped to the quota's window (10240 bytes: the first batch), then throttled: empty"),
    ]),
    Scenario("quota/survive_kill",
             "Quotas of a user, a (default user, client id) pair and an ip survive a kill -9 right after "
             "AlterClientQuotas answers, and a clean restart.", alone=True, steps=[
        alter(([(USER, "{u}")], [op("producer_byte_rate", 1048576)]),
              ([(USER, None), (CLIENT, "{c}")], [op("request_percentage", 25)]),
              ([(IP, "10.9.9.9")], [op("connection_creation_rate", 3)])),
        restart(kill=True),
        describe(until={"entries.2": PRESENT}),
        alter(([(USER, "{u}")], [op("producer_byte_rate", remove=True), op("consumer_byte_rate", 5)])),
        describe(comp(USER, EXACT, "{u}"), until={"entries.0.values.0.key": "consumer_byte_rate"}),
        restart(),
        describe(until={"entries.2": PRESENT}),
    ]),
    Scenario("quota/auth/cluster_acls",
             "Without ACLs on the cluster a principal gets CLUSTER_AUTHORIZATION_FAILED from "
             "AlterClientQuotas (every entry, the entity as sent) and DescribeClientQuotas (no entries); "
             "DESCRIBE_CONFIGS on the cluster lets it describe, ALTER_CONFIGS lets it alter (and describe). "
             "On the delegation token scenarios' broker, where carol's cluster ACLs change nothing else.",
             broker=TOKENS, steps=[
        alter(([(USER, "{u}")], [op("producer_byte_rate", 1)]),
              ([(USER, "{v}"), (USER, "{w}")], [op("producer_byte_rate", 1)]), conn="sasl:carol"),
        describe(comp(USER, EXACT, "{u}"), conn="sasl:carol"),
        create_acls(acl(CLUSTER, "kafka-cluster", DESCRIBE_CONFIGS, principal="User:carol")),
        describe(comp(USER, EXACT, "{u}"), conn="sasl:carol", until={"error_code": 0}),
        alter(([(USER, "{u}")], [op("producer_byte_rate", 1)]), conn="sasl:carol"),
        create_acls(acl(CLUSTER, "kafka-cluster", ALTER_CONFIGS, principal="User:carol")),
        alter(([(USER, "{u}")], [op("producer_byte_rate", 1)]), conn="sasl:carol",
              until={"entries.0.error_code": 0}),
        describe(comp(USER, EXACT, "{u}"), conn="sasl:carol", until={"entries.0.values.0.value": 1.0}),
    ]),
]
