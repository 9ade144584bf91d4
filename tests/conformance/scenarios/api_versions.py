"""The API list a broker listener advertises (ApiVersions): every API key of the protocol with the
version range Kafka 4.1 advertises for it, or "not advertised". Other ApiVersions steps compare
only the error and the served features (normalize.api_versions_features); this one compares the
whole list, so an API Kafka serves and minikafka does not (or at other versions) fails here.
The share group APIs (KIP-932) and KRaft's voter and broker registration APIs are the declared
differences."""
from dataclasses import dataclass

from minikafka.protocol import schema

from ..dsl import Call, Differs, Scenario

NOT_ADVERTISED = "not advertised"
# keys newer than the protocol schema (protocol/schema.jsonl), named here so that an answer
# without them says "not advertised" where Kafka's lists them
NEWER_APIS = {90: "DescribeShareGroupOffsets", 91: "AlterShareGroupOffsets", 92: "DeleteShareGroupOffsets"}
# Kafka 4.1's share groups (KIP-932): minikafka serves none of them
SHARE_GROUP_APIS = ("ShareGroupHeartbeat", "ShareGroupDescribe", "ShareFetch", "ShareAcknowledge",
                    "InitializeShareGroupState", "ReadShareGroupState", "WriteShareGroupState",
                    "DeleteShareGroupState", "ReadShareGroupStateSummary", *NEWER_APIS.values())
# KRaft's voter changes (KIP-853) and broker registration, which a broker listener forwards to the
# controller: minikafka has no controller quorum of several nodes
KRAFT_APIS = ("AddRaftVoter", "RemoveRaftVoter", "UnregisterBroker")
# issue 36's delegation tokens and client quotas, made by another branch (apis-quota): until it
# lands, declared here; it removes this (the test fails once they are advertised and still declared)
PENDING_APIS = ("CreateDelegationToken", "RenewDelegationToken", "ExpireDelegationToken",
                "DescribeDelegationToken", "DescribeClientQuotas", "AlterClientQuotas")


@dataclass
class ApiList(Call):
    """ApiVersions v3, answered as {"error_code", "api_keys": {API name: [min, max] or "not
    advertised"}} over every API key of the protocol schema and every key the broker lists."""

    def exchange(self, conn, body):
        resp = conn.request(18, self.version, body)
        listed = {k.api_key: [k.min_version, k.max_version] for k in resp.api_keys}
        names = {**NEWER_APIS, **schema.API_NAMES}
        keys = sorted(set(names) | set(listed))
        return {"error_code": resp.error_code,
                "api_keys": {names.get(k, f"key {k}"): listed.get(k, NOT_ADVERTISED) for k in keys}}


def api_list(**kw):
    return ApiList(18, 3, {"client_software_name": "minikafka-conformance", "client_software_version": "1.0"},
                   label="ApiVersions v3 (the API list)", **kw)


def _absent(*names) -> dict:
    return {f"api_keys.{n}": NOT_ADVERTISED for n in names}


SCENARIOS = [
    Scenario("api_versions/broker_listener", "The API keys and version ranges a broker listener advertises.",
             topics={}, steps=[api_list()],
             differs={1: [Differs("share-groups-not-served", _absent(*SHARE_GROUP_APIS)),
                          Differs("kraft-voter-and-registration-apis-not-served", _absent(*KRAFT_APIS)),
                          Differs("delegation-tokens-and-client-quotas-pending", _absent(*PENDING_APIS))]}),
]
