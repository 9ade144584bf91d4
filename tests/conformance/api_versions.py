"""Where minikafka's ApiVersions answer differs from Kafka 4.1's on purpose: the declarations
that hold for every ApiVersions answer of every scenario.

An ApiVersions answer is compared as a table by name (normalize.api_versions_table): every API
minikafka serves must be served by Kafka at exactly Kafka's versions, and every feature level
must be Kafka's, unless a row below declares minikafka's answer, with a reason that is a row of
DIFFERENCES.md. A declaration applies where Kafka's answer lists that API or feature (an
ApiVersions error answer lists ApiVersions alone), and fails when minikafka's answer is not the
declared one, or when Kafka's answer is the declared one too (the difference is gone: delete the
row). An API that minikafka serves and Kafka does not is never declared: it fails.
"""
from __future__ import annotations

from .golden import ABSENT

# API name -> (minikafka's answer there: its range "4-16", or ABSENT, and the reason, a row of
# DIFFERENCES.md)
NO_SHARE_GROUPS = "no-share-groups"
NO_QUORUM = "no-kraft-quorum"
APIS: dict[str, tuple[str, str]] = {
    **{name: (ABSENT, NO_SHARE_GROUPS) for name in (
        "ShareGroupHeartbeat", "ShareGroupDescribe", "ShareFetch", "ShareAcknowledge",
        "InitializeShareGroupState", "ReadShareGroupState", "WriteShareGroupState", "DeleteShareGroupState",
        "ReadShareGroupStateSummary", "DescribeShareGroupOffsets", "AlterShareGroupOffsets",
        "DeleteShareGroupOffsets")},
    **{name: (ABSENT, NO_QUORUM) for name in ("UnregisterBroker", "AddRaftVoter", "RemoveRaftVoter")},
}

# feature name -> (minikafka's supported range, its finalized level or ABSENT, the reason); None:
# not declared (Kafka's answer)
FEATURES: dict[str, tuple[str | None, str | None, str]] = {
    "metadata.version": ("27-27", None, "metadata-version-4.1-only"),
    "kraft.version": ("0-0", ABSENT, NO_QUORUM),
    "eligible.leader.replicas.version": ("0-0", ABSENT, "one-replica"),
    "share.version": ("0-0", None, NO_SHARE_GROUPS),
}


def declared_differences(api: str, kafka_response) -> list[tuple[str, str, object]]:
    """[(reason, path, minikafka's declared answer)] for an ApiVersions step's Kafka answer."""
    if api != "ApiVersions" or not isinstance(kafka_response, dict):
        return []
    out = []
    table = kafka_response.get("api_keys")
    if isinstance(table, dict):
        out += [(reason, f"api_keys.{name}", ours) for name, (ours, reason) in APIS.items() if name in table]
    for key, index in (("supported_features", 0), ("finalized_features", 1)):
        listed = kafka_response.get(key)
        if isinstance(listed, dict):
            out += [(row[2], f"{key}.{name}", row[index]) for name, row in FEATURES.items()
                    if row[index] is not None and name in listed]
    return out
