"""Finalized features (KIP-584): UpdateFeatures on transaction.version as kafka-features.sh
sends it, what ApiVersions then reports, and what a downgrade to transaction.version=1 does
to transactions: the request version still decides the protocol (an open V2 transaction
finishes as V2), the finalized level decides what the coordinator does on its own. Each
scenario runs on a cluster of its own (it changes what every later scenario would see),
formatted with transaction.version=2 as Kafka 4.1 formats a new cluster."""
from ..dsl import (TV2, Scenario, Topic, add_partitions, await_txn, call, describe_txn, end_txn, fetch, init_pid,
                   ref, restart, txn_produce)
from .consumer_groups import beat, describe, hb

TXV = "transaction.version"
UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE = 1, 2, 3


def update(level: int, kind: int = UPGRADE, feature: str = TXV, v: int = 2, validate_only: bool = False, **kw):
    """UpdateFeatures of one feature (v1+: upgrade_type; v0: allow_downgrade)."""
    if v == 0:
        u = {"feature": feature, "max_version_level": level, "allow_downgrade": kind != UPGRADE}
        return call(57, 0, {"timeout_ms": 60000, "feature_updates": [u]}, **kw)
    u = {"feature": feature, "max_version_level": level, "upgrade_type": kind}
    return call(57, v, {"timeout_ms": 60000, "feature_updates": [u], "validate_only": validate_only}, **kw)


def updates(items: list, v: int = 2, **kw):
    return call(57, v, {"timeout_ms": 60000, "validate_only": False, "feature_updates": [
        {"feature": f, "max_version_level": level, "upgrade_type": kind} for f, level, kind in items]}, **kw)


def api_versions(**kw):
    return call(18, 4, {"client_software_name": "conformance", "client_software_version": "1"}, **kw)


def settled(level: int):
    """ApiVersions polled until it reports ``level`` (Kafka's brokers learn an update from the
    metadata log a moment after UpdateFeatures answers; a level of 0 is not listed)."""
    return api_versions(until={f"finalized_features.{TXV}": "<absent>" if level == 0 else f"{level}-{level}"})


def F(name: str, doc: str, steps: list) -> Scenario:
    return Scenario(name, doc, steps=steps, features=TV2, alone=True)


def group_version_settled(level: int):
    return api_versions(until={"finalized_features.group.version": "<absent>" if level == 0 else f"{level}-{level}"})


SCENARIOS = [
    F("features/update/refused", "UpdateFeatures that Kafka refuses leave transaction.version at 2: a level past "
      "the supported maximum, a lower level as an upgrade, an unknown feature, an unknown upgrade type, a "
      "feature twice, v0's allow_downgrade; an upgrade to the current level is a no-op.", [
        api_versions(),
        update(3),
        update(3, v=1),
        update(1, UPGRADE),
        update(1, kind=9),
        update(1, feature="nope.version"),
        update(5, feature="group.version"),
        updates([]),
        updates([(TXV, 1, SAFE_DOWNGRADE), (TXV, 2, UPGRADE)]),
        update(1, SAFE_DOWNGRADE, v=0),
        update(2, UPGRADE),
        update(2, UPGRADE, v=1),
        api_versions(),
    ]),
    F("features/update/downgrade_and_upgrade", "transaction.version 2 -> 1 (validate_only first: nothing changes), "
      "back to 2, disabled (0: no longer listed), 2 again, each seen in ApiVersions; v1 answers list each feature.", [
        update(1, SAFE_DOWNGRADE, validate_only=True),
        api_versions(),
        update(1, SAFE_DOWNGRADE),
        settled(1),
        update(2, SAFE_DOWNGRADE),
        update(2, UPGRADE, v=1),
        settled(2),
        update(0, UNSAFE_DOWNGRADE),
        settled(0),
        update(2, UPGRADE),
        settled(2),
    ]),
    F("features/downgrade/open_v2_transaction", "A downgrade to transaction.version=1 while a V2 transaction is "
      "open: its EndTxn v5 still bumps the epoch (the request decides); the producer's next transaction the V1 "
      "way (AddPartitionsToTxn v3, EndTxn v4) keeps the epoch.", [
        init_pid("a", v=5),
        txn_produce("a", ["v2"], 0, v=12),
        update(1, SAFE_DOWNGRADE),
        settled(1),
        end_txn("a", commit=True, v=5, save="e"),
        await_txn("CompleteCommit"),
        describe_txn(),
        add_partitions("e"),
        txn_produce("e", ["v1"], 0, v=11),
        end_txn("e", commit=True, v=4),
        await_txn("CompleteCommit"),
        describe_txn(),
        fetch(),
    ]),
    F("features/downgrade/coordinator_abort", "After a downgrade to transaction.version=1 the coordinator's own "
      "abort (the fence of a new InitProducerId) of a transaction begun with Produce v12 is V1's: the fenced "
      "epoch is nobody's (KIP-360 recovery with it is refused).", [
        init_pid("a", v=5),
        txn_produce("a", ["x"], 0, v=12),
        update(1, SAFE_DOWNGRADE),
        settled(1),
        init_pid("b", v=5),
        await_txn("CompleteAbort"),
        describe_txn(),
        fetch(isolation=0),
        init_pid("c", v=5, pid=ref("a.producer_id"), epoch=ref("a.producer_epoch")),
        init_pid("d", v=5),
        describe_txn(),
    ]),
    F("features/downgrade/v2_coordinator_abort", "The same fence at transaction.version=2: the abort is V2's "
      "(the epoch before the bump is kept as the last one, so KIP-360 recovery with it is a retry).", [
        init_pid("a", v=5),
        txn_produce("a", ["x"], 0, v=12),
        init_pid("b", v=5),
        await_txn("CompleteAbort"),
        describe_txn(),
        init_pid("c", v=5, pid=ref("a.producer_id"), epoch=ref("a.producer_epoch")),
        init_pid("d", v=5),
        describe_txn(),
    ]),
    F("features/restart/level_survives", "A downgraded transaction.version survives a kill -9 of the broker.", [
        update(1, SAFE_DOWNGRADE),
        settled(1),
        restart(kill=True),
        api_versions(),
        update(2, UPGRADE),
        settled(2),
        restart(),
        api_versions(),
    ]),
    Scenario("features/group_version/off_then_upgraded", "A cluster formatted with group.version=0 advertises "
             "ConsumerGroupHeartbeat and ConsumerGroupDescribe and answers both UNSUPPORTED_VERSION (every group "
             "named); UpdateFeatures to group.version=1 turns KIP-848 groups on: a member joins; a safe downgrade "
             "back to 0 is taken though the group has a member, survives a kill -9, and the member's next "
             "heartbeat is UNSUPPORTED_VERSION.",
             topics={"t": Topic(partitions=2)}, features={**TV2, "group.version": 0}, alone=True, steps=[
        api_versions(),
        hb(save="a0"),
        describe(groups=("{g}", "{g2}")),
        update(1, feature="group.version"),
        group_version_settled(1),
        hb(save="a", retry_while=(14, 15, 16)),
        beat(owned=[("a", [0, 1])]),
        describe(),
        update(0, SAFE_DOWNGRADE, feature="group.version"),
        group_version_settled(0),
        restart(kill=True),
        api_versions(),
        beat(owned=None, retry_while=(14, 15, 16)),
    ]),
]

