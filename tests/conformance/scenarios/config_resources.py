"""ListConfigResources (74, KIP-1142; v0 was ListClientMetricsResources): the resources that have
configs, per resource type: topics, this broker, broker loggers, client metrics, groups with
config overrides. v0 lists client metrics resources only; v1 with no types lists every type.
Other scenarios' topics and groups are left out of the answers (normalize.own_entries)."""
from ..dsl import SECURED, Scenario, Topic, call
from .acls import ALICE

TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = 2, 4, 8, 16, 32


def list_resources(*types, v: int = 1, **kw):
    return call(74, v, {} if v == 0 else {"resource_types": list(types)}, **kw)


def group_config(group: str, name: str, value: str, **kw):
    """IncrementalAlterConfigs SET of one GROUP config."""
    return call(44, 1, {"resources": [{"resource_type": GROUP, "resource_name": group, "configs": [
        {"name": name, "config_operation": 0, "value": value}]}], "validate_only": False}, **kw)


SCENARIOS = [
    Scenario("config_resources/types", "v0, then v1 with each resource type alone, an unknown type, two types "
             "and none (every type): two topics of this scenario, a group with a config override.",
             topics={"a": Topic(), "b": Topic(partitions=2)}, steps=[
        group_config("{g}", "consumer.session.timeout.ms", "50000"),
        list_resources(v=0),
        list_resources(TOPIC),
        list_resources(BROKER),
        list_resources(BROKER_LOGGER),
        list_resources(CLIENT_METRICS),
        list_resources(GROUP),
        list_resources(1),
        list_resources(TOPIC, GROUP),
        list_resources(),
    ]),
    Scenario("config_resources/authorization", "ListConfigResources v0 and v1 without DESCRIBE_CONFIGS on the "
             "cluster.", broker=SECURED, steps=[
        list_resources(v=0, conn=ALICE),
        list_resources(TOPIC, conn=ALICE),
        list_resources(conn=ALICE),
    ]),
]
