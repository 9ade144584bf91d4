"""The cluster-level APIs no other module covers, adversarially: DescribeTopicPartitions (KIP-966:
the Java 4.x admin's describeTopics) with its paging cursor, DescribeLogDirs (sizes after known
produces), ElectLeaders on one node, FindCoordinator over its versions and key types, ListGroups'
filters, DescribeCluster's endpoint types, Metadata's topic-list forms, ApiVersions' client
software checks and the SASL APIs on a plain listener.

Answers that list every topic (DescribeTopicPartitions and Metadata without topics, DescribeLogDirs
and ElectLeaders with null topics) keep only this scenario's topics and the internal ones
(normalize.own_entries): other scenarios share the broker. A DescribeTopicPartitions page over every
topic therefore starts at a cursor on this scenario's own topics, or at the internal topics, which
sort first ('_' before the lower-case names of scenario topics), and ends inside them."""
import struct
import uuid
from dataclasses import dataclass

from ..dsl import (NAMED_LISTENER, NAMED_LISTENERS, SECURED, Call, Differs, Scenario, Topic, add_partitions,
                   await_txn, batch, call, delete_records, end_txn, init_pid, produce, ref, restart, txn_produce)
from ..runner import decode_exact
from .admin_topics import create1, create_parts, delete_names, gone, served
from .acls import ALICE, DESCRIBE, TOPIC, acl, create_acls
from .classic_groups import commit as classic_commit, delete_groups, list_groups
from .consumer_groups import beat, hb

ZERO = uuid.UUID(int=0)
CLIENT = f"listener:{NAMED_LISTENER}"   # a connection to the named listener (dsl.NAMED_LISTENERS)
NOWHERE = uuid.UUID("0badc0de-0000-4000-8000-000000000001")   # a topic id no cluster has
ABC = {"a": Topic(partitions=3), "b": Topic(partitions=2), "c": Topic()}
RAW = "sasl-raw"   # the SASL listener, not logged in (runner.Run.conn)


# ------------------------------------------------------------------ request builders

def dtp(*names, limit: int = 2000, cursor=None, **kw):
    """DescribeTopicPartitions v0; ``cursor`` = (topic, partition)."""
    return call(75, 0, {"topics": [{"name": n} for n in names], "response_partition_limit": limit,
                        "cursor": None if cursor is None else {"topic_name": cursor[0], "partition_index": cursor[1]}},
                **kw)


def next_page(saved: str, *names, limit: int = 2000, **kw):
    """The page after the answer saved as ``saved`` (its next_cursor)."""
    return call(75, 0, {"topics": [{"name": n} for n in names], "response_partition_limit": limit,
                        "cursor": {"topic_name": ref(f"{saved}.next_cursor.topic_name"),
                                   "partition_index": ref(f"{saved}.next_cursor.partition_index")}}, **kw)


def log_dirs(topics=None, v: int = 4, **kw):
    """DescribeLogDirs; ``topics`` = {name: [partitions]} or None (every partition)."""
    return call(35, v, {"topics": None if topics is None else
                        [{"topic": t, "partitions": list(ps)} for t, ps in _items(topics)]}, **kw)


def elect(parts=None, election_type: int = 0, v: int = 2, timeout_ms: int = 30000, **kw):
    """ElectLeaders; ``parts`` = {topic: [partitions]} (or pairs) or None (every partition)."""
    return call(43, v, {"election_type": election_type, "timeout_ms": timeout_ms,
                        "topic_partitions": None if parts is None else
                        [{"topic": t, "partitions": list(ps)} for t, ps in _items(parts)]}, **kw)


def _items(d):
    return d.items() if isinstance(d, dict) else d


def find_coordinator(key: str, key_type: int = 0, v: int = 3, **kw):
    return call(10, v, {"key": key, "key_type": key_type}, **kw)


def find_coordinators(keys, key_type: int = 0, v: int = 4, **kw):
    return call(10, v, {"key_type": key_type, "coordinator_keys": list(keys)}, **kw)


def describe_cluster(v: int = 1, endpoint_type: int = 1, ops: bool = False, **kw):
    return call(60, v, {"include_cluster_authorized_operations": ops, "endpoint_type": endpoint_type}, **kw)


def metadata(topics, v: int = 12, auto: bool = False, **kw):
    """Metadata; ``topics`` None (every topic) or a list of names or (name, topic id) pairs."""
    def one(t):
        name, tid = t if isinstance(t, tuple) else (t, ZERO)
        return {"name": name, "topic_id": tid}
    return call(3, v, {"topics": None if topics is None else [one(t) for t in topics],
                       "allow_auto_topic_creation": auto, "include_topic_authorized_operations": False}, **kw)


def api_versions(v: int = 3, name: str = "minikafka-conformance", version: str = "1.0", **kw):
    return call(18, v, {"client_software_name": name, "client_software_version": version}, **kw)


@dataclass
class UnsupportedApiVersions(Call):
    """ApiVersions at a version no schema knows (KIP-511): a v2 request header and an empty
    flexible body; the answer is read as v0, the version a broker answers it in."""

    def exchange(self, conn, body):
        conn.corr += 1
        cid = conn.client_id.encode()
        payload = struct.pack(">hhih", 18, self.version, conn.corr, len(cid)) + cid + b"\x00" + b"\x00"
        conn.send_frame(struct.pack(">i", len(payload)) + payload)
        frame = conn.recv_frame()
        if frame is None:
            raise ConnectionError("broker closed the connection")
        return decode_exact(18, 0, frame)


def api_versions_unsupported(v: int, **kw):
    return UnsupportedApiVersions(18, v, {}, **kw)


@dataclass
class RawSaslToken(Call):
    """A SASL token as a bare size-prefixed frame, no Kafka request header (what follows a SaslHandshake
    v0); the answer is the bare frame the broker sends back (recorded as SaslAuthenticate's auth_bytes)."""

    def exchange(self, conn, body):
        token = body["auth_bytes"]
        conn.send_frame(struct.pack(">i", len(token)) + token)
        frame = conn.recv_frame()
        if frame is None:
            raise ConnectionError("broker closed the connection")
        return {"auth_bytes": bytes(frame)}


def raw_token(token: bytes, **kw):
    return RawSaslToken(36, 0, {"auth_bytes": token}, label="raw SASL token", **kw)


def values(n: int, size: int = 10):
    return [f"{i:0{size}d}" for i in range(n)]


SCENARIOS = [
    # ------------------------------------------------------------ DescribeTopicPartitions
    Scenario("cluster_apis/dtp/named_topics", "DescribeTopicPartitions of three topics asked in reverse order: "
             "answered in name order with every partition, no cursor.", topics=ABC, steps=[
        dtp("{c}", "{b}", "{a}"),
    ]),
    Scenario("cluster_apis/dtp/paging", "response_partition_limit 2 over topics of 3 and 2 partitions: each page's "
             "next_cursor, followed to the end; a page boundary at a topic's end.", topics=ABC, steps=[
        dtp("{a}", "{b}", limit=2, save="p1"),
        next_page("p1", "{a}", "{b}", limit=2, save="p2"),
        next_page("p2", "{a}", "{b}", limit=2, save="p3"),
        dtp("{a}", "{b}", "{c}", limit=3),
        dtp("{a}", "{b}", "{c}", limit=5),
    ]),
    Scenario("cluster_apis/dtp/limits", "response_partition_limit 0, -1, 1 and above the broker's cap "
             "(max.request.partition.size.limit).", topics=ABC, steps=[
        dtp("{a}", "{b}", limit=0),
        dtp("{a}", "{b}", limit=-1),
        dtp("{a}", "{b}", limit=1),
        dtp("{a}", "{b}", limit=100000),
    ]),
    Scenario("cluster_apis/dtp/cursor_edges", "A cursor naming a topic not asked for, a topic that does not exist, "
             "a partition past the topic's end, a negative partition, the last topic, an empty name.",
             topics=ABC, steps=[
        dtp("{a}", "{b}", cursor=("{c}", 0)),
        dtp("{a}", "{b}", cursor=("{x}", 0)),
        dtp("{a}", "{x}", cursor=("{x}", 0)),
        dtp("{a}", "{b}", cursor=("{a}", 7)),
        dtp("{a}", "{b}", cursor=("{a}", 3)),
        dtp("{a}", "{b}", cursor=("{a}", -1)),
        dtp("{a}", "{b}", cursor=("{b}", 1)),
        dtp("{a}", "{b}", cursor=("", 0)),
    ]),
    Scenario("cluster_apis/dtp/unknown_invalid_duplicate", "Unknown names, invalid names (a space, empty, too "
             "long), an internal name that is not a topic, and a name asked twice.", topics=ABC, steps=[
        dtp("{x}", "{c}"),
        dtp("{c}", "bad name"),
        dtp("{c}", ""),
        dtp("{c}", "x" * 250),
        dtp("{c}", "{c}", "{b}"),
        dtp("__not_internal", "__consumer_offsetz"),
    ]),
    Scenario("cluster_apis/dtp/internal_topics", "The internal topics by name: is_internal, a limit inside "
             "__consumer_offsets, a cursor at its last partition.", topics={}, steps=[
        dtp("__consumer_offsets", "__transaction_state", limit=3),
        dtp("__consumer_offsets", "__transaction_state", limit=2, cursor=("__consumer_offsets", 49)),
    ]),
    Scenario("cluster_apis/dtp/all_topics", "An empty topic list means every topic: the first page starts at "
             "the internal topics (limit 2); a cursor on this scenario's topics pages through them "
             "(the other topics are other scenarios'); a cursor past a topic's end, a negative one, one naming "
             "a topic that does not exist (its name sorts between this scenario's first two).",
             topics=ABC, steps=[
        dtp(limit=2),
        dtp(limit=3, cursor=("{a}", 1), save="p1"),
        next_page("p1", limit=1),
        dtp(limit=1, cursor=("{a}", 9)),
        dtp(limit=2, cursor=("{a}", -1)),
        dtp(limit=1, cursor=("{a0}", 5)),
    ]),
    Scenario("cluster_apis/dtp/deleted_between_pages", "A topic deleted between two pages: the next page's "
             "cursor names it; then a topic created under the same name (a new id, fewer partitions) and "
             "the cursor past its end.", topics=ABC, steps=[
        dtp("{a}", "{b}", limit=2, save="p1"),
        delete_names("{a}"),
        gone("{a}"),
        next_page("p1", "{a}", "{b}", limit=2),
        create1("{a}", partitions=1),
        served("{a}"),
        next_page("p1", "{a}", "{b}", limit=2),
        dtp("{a}", "{b}"),
    ]),
    Scenario("cluster_apis/dtp/topic_created_between_pages", "Paging over every topic from a cursor on "
             "this scenario's first topic; a topic whose name sorts between the two is created before the "
             "next page, which then includes it.", topics={"a": Topic(partitions=3), "b": Topic()}, steps=[
        dtp(limit=2, cursor=("{a}", 0), save="p1"),
        create1("{a2}", partitions=2),
        served("{a2}", 1),
        next_page("p1", limit=3),
    ]),
    Scenario("cluster_apis/dtp/partitions_added", "CreatePartitions between two pages: the cursor's topic now has "
             "more partitions.", topics=ABC, steps=[
        dtp("{b}", "{c}", limit=1, save="p1"),
        create_parts("{b}", 4),
        served("{b}", 3),
        next_page("p1", "{b}", "{c}", limit=10),
    ]),
    Scenario("cluster_apis/dtp/restart_between_pages", "A clean restart, then a kill -9, between two "
             "DescribeTopicPartitions pages: the cursor of the page before the restart used after it.",
             topics=ABC, steps=[
        dtp("{a}", "{b}", "{c}", limit=2, save="p1"),
        restart(),
        next_page("p1", "{a}", "{b}", "{c}", limit=2, save="p2"),
        restart(kill=True),
        next_page("p2", "{a}", "{b}", "{c}", limit=2),
        next_page("p1", "{a}", "{b}", "{c}", limit=10),
        dtp(limit=2, cursor=("{b}", 1)),
    ]),
    # ------------------------------------------------------------ DescribeLogDirs
    Scenario("cluster_apis/log_dirs/sizes_after_produce", "DescribeLogDirs of a two-partition topic after known "
             "produces: each partition's bytes (one batch of 3 records, then 5 more in a second batch; an "
             "empty partition is 0), offset_lag, is_future_key.", topics={"t": Topic(partitions=2)}, steps=[
        log_dirs({"{t}": [0, 1]}),
        produce(batch(None, values(3))),
        log_dirs({"{t}": [0, 1]}),
        produce(batch(None, values(5, 100), keys=values(5))),
        log_dirs({"{t}": [0, 1]}),
        log_dirs({"{t}": [1]}),
    ]),
    Scenario("cluster_apis/log_dirs/versions", "One produce, then DescribeLogDirs v1 to v5 (v3 adds the top-level "
             "error code, v4 the volume's bytes, v5 is_cordoned).", topics={"t": Topic()}, steps=[
        produce(batch(None, values(2))),
        log_dirs({"{t}": [0]}, v=1),
        log_dirs({"{t}": [0]}, v=2),
        log_dirs({"{t}": [0]}, v=3),
        log_dirs({"{t}": [0]}, v=4),
        log_dirs({"{t}": [0]}, v=5),
    ]),
    Scenario("cluster_apis/log_dirs/unknown_and_duplicates", "Unknown topic, a partition past the end, a negative "
             "partition, a topic with no partitions listed, the same partition and topic twice, an empty "
             "topic list.", topics={"t": Topic(partitions=2)}, steps=[
        produce(batch(None, values(1))),
        log_dirs({"{x}": [0]}),
        log_dirs({"{t}": [5, -1]}),
        log_dirs({"{t}": []}),
        log_dirs([("{t}", [0, 0]), ("{t}", [0, 1])]),
        log_dirs({}),
    ]),
    Scenario("cluster_apis/log_dirs/all_partitions", "topics null: every partition of the dir (this scenario's "
             "topics kept), after produces to one of two topics.",
             topics={"t": Topic(partitions=2), "u": Topic()}, steps=[
        produce(batch(None, values(4)), partition=1),
        log_dirs(None),
        log_dirs(None, v=1),
    ]),
    Scenario("cluster_apis/log_dirs/transactions_and_deletes", "Sizes count control batches (a committed "
             "transaction's marker); DeleteRecords leaves the segment's bytes; a deleted topic.",
             topics={"t": Topic(), "u": Topic()}, steps=[
        init_pid("a"),
        add_partitions("a"),
        txn_produce("a", values(2)),
        end_txn("a"),
        await_txn("CompleteCommit"),
        log_dirs({"{t}": [0]}),
        delete_records(2),
        log_dirs({"{t}": [0]}),
        produce(batch(None, values(1)), topic="{u}"),
        delete_names("{u}"),
        gone("{u}"),
        log_dirs({"{u}": [0]}),
    ]),
    # ------------------------------------------------------------ ElectLeaders
    Scenario("cluster_apis/elect/preferred", "Preferred election on one node: every partition already led by its "
             "preferred replica; an unknown partition, an unknown topic, a negative partition.",
             topics={"t": Topic(partitions=2)}, steps=[
        elect({"{t}": [0, 1]}),
        elect([("{t}", [0, 9, -1]), ("{x}", [0])]),
    ]),
    Scenario("cluster_apis/elect/unclean", "Unclean election of a partition that has a leader; of an unknown one.",
             topics={"t": Topic(partitions=2)}, steps=[
        elect({"{t}": [1]}, election_type=1),
        elect({"{t}": [0], "{x}": [3]}, election_type=1),
    ]),
    Scenario("cluster_apis/elect/all_and_empty", "topic_partitions null (every partition: this scenario's topic "
             "kept), an empty list, a topic with no partitions, the same partition twice.",
             topics={"t": Topic(partitions=2)}, steps=[
        elect(None),
        elect(None, election_type=1),
        elect({}),
        elect({"{t}": []}),
        elect([("{t}", [0, 0])]),
        elect([("{t}", [1]), ("{t}", [1])]),
    ]),
    Scenario("cluster_apis/elect/versions_and_types", "ElectLeaders v0 (no election type: preferred) and v1 (a "
             "top-level error code), each also with null topics; election types 2 and -1; timeouts 0 and -1.", topics={"t": Topic()}, steps=[
        elect({"{t}": [0]}, v=0),
        elect({"{t}": [0]}, v=1),
        elect(None, v=0),
        elect(None, v=1),
        elect({"{t}": [0]}, election_type=2),
        elect({"{t}": [0]}, election_type=-1),
        elect({"{t}": [0]}, timeout_ms=0),
        elect({"{t}": [0]}, election_type=1, timeout_ms=-1),
    ]),
    # ------------------------------------------------------------ FindCoordinator
    Scenario("cluster_apis/find_coordinator/group_versions", "FindCoordinator of a group through v0 to v6 "
             "(v4+ batched).", topics={}, steps=[
        find_coordinator("{g}", v=0),
        find_coordinator("{g}", v=1),
        find_coordinator("{g}", v=2),
        find_coordinator("{g}", v=3),
        find_coordinators(["{g}"], v=4),
        find_coordinators(["{g}"], v=5),
        find_coordinators(["{g}"], v=6),
    ]),
    Scenario("cluster_apis/find_coordinator/transactional_id", "FindCoordinator of a transactional id never "
             "seen (v1, v3, v4-v6), several in one request.", topics={}, steps=[
        find_coordinator("{tx}", key_type=1, v=1),
        find_coordinator("{tx}", key_type=1, v=3),
        find_coordinators(["{tx}", "{tx2}"], key_type=1, v=4),
        find_coordinators(["{tx}"], key_type=1, v=6),
    ]),
    Scenario("cluster_apis/find_coordinator/key_types", "Key type 2 (share, KIP-932) before v6, and invalid "
             "key types 3 and -1, single and batched.", topics={}, steps=[
        find_coordinator("{g}", key_type=2, v=3),
        find_coordinators(["{g}"], key_type=2, v=5),
        find_coordinator("{g}", key_type=3, v=3),
        find_coordinators(["{g}"], key_type=3, v=4),
        find_coordinators(["{g}"], key_type=-1, v=6),
    ]),
    Scenario("cluster_apis/find_coordinator/empty_keys", "Empty group and transactional ids, an empty key list, "
             "a key repeated in one batched request.", topics={}, steps=[
        find_coordinator("", v=3),
        find_coordinator("", v=0),
        find_coordinator("", key_type=1, v=3),
        find_coordinators([""], v=4),
        find_coordinators([""], key_type=1, v=4),
        find_coordinators([], v=4),
        find_coordinators(["{g}", "{g}", "", "{g2}"], v=4),
    ]),
    Scenario("cluster_apis/find_coordinator/odd_names", "Group and transactional ids with spaces, slashes, "
             "non-ASCII letters and control characters, and very long ones (no name rules for either).", topics={}, steps=[
        find_coordinator("a group/with spaces ü", v=3),
        find_coordinators(["a group/with spaces ü", "tab\there", "..", "-"], v=4),
        find_coordinators(["txn id ü/1", " "], key_type=1, v=4),
        find_coordinator("\u00e9t\u00e9", key_type=1, v=2),
        find_coordinators(["g" * 300, "x" * 5000], v=4),
        find_coordinator("t" * 300, key_type=1, v=3),
    ]),
    # ------------------------------------------------------------ ListGroups
    Scenario("cluster_apis/list_groups/filters", "ListGroups with type names in other cases, an unknown type, "
             "state names in upper case, an unknown state beside a known one, a state repeated: a classic "
             "group with offsets only (Empty) and a consumer group with a member (Stable).",
             topics={"t": Topic()}, steps=[
        classic_commit(group="{e}"),
        hb(group="{c}", save="a"),
        list_groups(),
        list_groups(types=["CLASSIC"]),
        list_groups(types=["Consumer", "bogus"]),
        list_groups(types=["bogus"]),
        list_groups(states=["EMPTY", "stable"]),
        list_groups(states=["Bogus", "Empty"]),
        list_groups(states=["Stable", "Stable"]),
        list_groups(states=["Empty"], types=["consumer"]),
    ]),
    Scenario("cluster_apis/list_groups/versions", "ListGroups v0 to v3 (no filters) and v4 (states) with an "
             "empty classic group and a consumer group whose only member left (Empty).",
             topics={"t": Topic()}, steps=[
        classic_commit(group="{e}"),
        hb(group="{c}", save="a"),
        beat(group="{c}", epoch=-1),
        list_groups(v=0),
        list_groups(v=2),
        list_groups(v=3),
        list_groups(states=["Empty"], v=4),
        list_groups(states=["EMPTY"], v=4),
    ]),
    # ------------------------------------------------------------ DescribeCluster
    Scenario("cluster_apis/describe_cluster/endpoints_and_versions", "DescribeCluster v0 and v1 with and without "
             "the cluster's authorized operations; v1 asking for the controller endpoint (2), endpoint "
             "type 0 and 5; v2 (KIP-1073) with and without fenced brokers.", topics={}, steps=[
        describe_cluster(v=0),
        describe_cluster(v=0, ops=True),
        describe_cluster(v=1),
        describe_cluster(v=1, ops=True),
        describe_cluster(v=1, endpoint_type=2),
        describe_cluster(v=1, endpoint_type=0),
        describe_cluster(v=1, endpoint_type=5),
        call(60, 2, {"include_cluster_authorized_operations": False, "endpoint_type": 1,
                     "include_fenced_brokers": True}),
        call(60, 2, {"include_cluster_authorized_operations": True, "endpoint_type": 1,
                     "include_fenced_brokers": False}),
        call(60, 2, {"include_cluster_authorized_operations": False, "endpoint_type": 2,
                     "include_fenced_brokers": True}),
    ]),
    # ------------------------------------------------------------ listeners
    Scenario("cluster_apis/listeners/named_listener", "A named listener (CLIENT, plain text) beside PLAINTEXT, "
             "advertised with another host: Metadata, FindCoordinator (v3, v4) and DescribeCluster over it name "
             "its advertised endpoint, over PLAINTEXT that listener's.", broker=NAMED_LISTENERS, steps=[
        metadata(["{t}"], conn=CLIENT),
        metadata(["{t}"]),
        find_coordinator("{g}", conn=CLIENT),
        find_coordinators(["{g}"], conn=CLIENT),
        find_coordinator("{g}"),
        describe_cluster(conn=CLIENT),
        describe_cluster(v=2),
    ]),
    # ------------------------------------------------------------ Metadata
    Scenario("cluster_apis/metadata/topic_ids", "Metadata v12 by a topic id no cluster has, by a known id, a name "
             "with its own id, a name with another id, and v10 by id.", topics={"t": Topic(), "u": Topic()},
             steps=[
        metadata(["{t}"], save="m"),
        metadata([(None, NOWHERE)]),
        metadata([(None, ref("m.topics.0.topic_id"))]),
        metadata([("{u}", ref("m.topics.0.topic_id"))]),
        metadata([(None, NOWHERE), "{u}"]),
        metadata([(None, ref("m.topics.0.topic_id"))], v=10),
    ]),
    Scenario("cluster_apis/metadata/topic_list_forms", "Metadata with null topics and with an empty list (v12: "
             "none; v0 empty: every topic), a name twice, an unknown name without auto-creation.",
             topics={"t": Topic()}, steps=[
        metadata([]),
        metadata(None, v=12),
        metadata(None, v=1),
        metadata([], v=0),
        metadata(["{t}", "{t}"]),
        metadata(["{x}", "{t}"], v=4),
    ]),
    Scenario("cluster_apis/metadata/deleted_and_recreated_by_id", "A topic deleted between two steps: Metadata by "
             "its id and by its name; created again: the old id beside the new name.", topics={"t": Topic()},
             steps=[
        metadata(["{t}"], save="m"),
        delete_names("{t}"),
        gone("{t}"),
        metadata([(None, ref("m.topics.0.topic_id"))]),
        create1("{t}", partitions=2),
        served("{t}", 1),
        metadata([(None, ref("m.topics.0.topic_id")), "{t}"]),
    ]),
    # ------------------------------------------------------------ ApiVersions, SASL on a plain listener
    Scenario("cluster_apis/api_versions/client_software", "ApiVersions v3 with valid and invalid client software "
             "names and versions (KIP-511's pattern), empty ones, v0-v2 which carry none, and versions 5 and 127 "
             "(unsupported: UNSUPPORTED_VERSION in a v0 answer; the connection stays usable).", topics={},
             steps=[
        api_versions(),
        api_versions(name="bad name"),
        api_versions(version="1.0 beta"),
        api_versions(name="", version=""),
        api_versions(name="-x", version="1.0-"),
        api_versions(name="x", version="1"),
        api_versions(v=4, name="apache-kafka-java", version="4.1.0"),
        call(18, 0, {}),
        call(18, 2, {}),
        api_versions_unsupported(5),
        api_versions_unsupported(127),
        api_versions(),
    ]),
    Scenario("cluster_apis/sasl/on_plaintext_listener", "SaslHandshake v0/v1 and SaslAuthenticate v0-v2 on a "
             "PLAINTEXT listener (the requests reach the request handler, not the authenticator).",
             topics={}, steps=[
        call(17, 1, {"mechanism": "PLAIN"}),
        call(17, 0, {"mechanism": "BOGUS"}),
        call(36, 0, {"auth_bytes": b"\0alice\0alice-secret"}),
        call(36, 1, {"auth_bytes": b""}),
        call(36, 2, {"auth_bytes": b""}),
        metadata(["{t}"], auto=False),
    ]),

    # ------------------------------------------------------------ more adversarial orders
    Scenario("cluster_apis/dtp/authorization", "A principal with DESCRIBE on one of two topics: "
             "DescribeTopicPartitions of both (its authorized operations; TOPIC_AUTHORIZATION_FAILED), every "
             "topic from a cursor on the allowed one; Metadata of every topic; DescribeLogDirs and ElectLeaders "
             "without cluster ACLs.", topics={"a": Topic(partitions=2), "b": Topic()}, broker=SECURED, steps=[
        create_acls(acl(TOPIC, "{a}", DESCRIBE)),
        dtp("{a}", "{b}", conn=ALICE, until={"topics.0.error_code": 0}),
        dtp(limit=1, cursor=("{a}", 0), conn=ALICE),
        dtp("{b}", conn=ALICE),
        metadata(None, conn=ALICE),
        log_dirs({"{a}": [0]}, conn=ALICE),
        log_dirs(None, v=2, conn=ALICE),
        elect({"{a}": [0]}, conn=ALICE),
        elect(None, conn=ALICE),
    ]),
    Scenario("cluster_apis/elect/internal_and_deleted", "ElectLeaders of the internal topics' partitions, "
             "of a topic deleted a step before, of the same name created again.", topics={"t": Topic()}, steps=[
        elect({"__consumer_offsets": [0, 49, 50], "__transaction_state": [3]}),
        delete_names("{t}"),
        gone("{t}"),
        elect({"{t}": [0]}),
        create1("{t}", partitions=2),
        served("{t}", 1),
        elect({"{t}": [0, 1]}, election_type=1),
    ]),
    Scenario("cluster_apis/metadata/internal_and_null_name", "Metadata v12 by the id of __consumer_offsets "
             "(from DescribeTopicPartitions), a null name with the zero id, and the internal topics by name "
             "at v0.", topics={}, steps=[
        dtp("__consumer_offsets", limit=1, save="d"),
        metadata([(None, ref("d.topics.0.topic_id"))]),
        metadata([(None, ZERO)]),
        metadata(["__transaction_state"], v=0),
    ]),
    Scenario("cluster_apis/list_groups/deleted_group", "A classic group with offsets only, deleted "
             "(DeleteGroups) between two listings; the states filter Dead.", topics={"t": Topic()}, steps=[
        classic_commit(group="{e}"),
        list_groups(states=["Empty"]),
        delete_groups(["{e}"]),
        list_groups(),
        list_groups(states=["Dead"]),
        classic_commit(group="{e}"),
        list_groups(),
    ]),
    # one broker of its own for both restarts and the share key (a broker start each costs CI time)
    Scenario("cluster_apis/restart/logs_groups_coordinators", "Partition sizes, DescribeTopicPartitions' leader "
             "epochs, ListGroups (a classic group with offsets only, a consumer group with a member) and "
             "FindCoordinator after a kill -9 and after a clean restart. Then key type 2 (share) at v6 with share "
             "groups not enabled: Kafka answers the coordinator of a groupId:topicId:partition key and creates "
             "__share_group_state (50 partitions) for it, which would show in other scenarios' listings (hence "
             "here); a key of another form is INVALID_REQUEST.", topics={"t": Topic(partitions=2)}, differs={
                 17: Differs("no-share-groups", {"coordinators[0]": {
                     "key": "share-group:AAAAAAAAAAAAAAAAAAAAAA:0", "node_id": -1, "host": "", "port": -1,
                     "error_code": 42, "error_message": "Share groups are not served"}}),
             }, steps=[
        produce(batch(None, values(3))),
        classic_commit(group="{e}"),
        hb(group="{c}", save="a"),
        list_groups(),
        restart(kill=True),
        log_dirs({"{t}": [0, 1]}),
        dtp("{t}"),
        list_groups(),
        produce(batch(None, values(2)), partition=1),
        restart(),
        log_dirs({"{t}": [0, 1]}),
        dtp("{t}"),
        list_groups(),
        find_coordinators(["{e}", "{c}"], v=4),
        find_coordinator("{e}", v=3),
        describe_cluster(v=1),
        find_coordinators(["share-group:AAAAAAAAAAAAAAAAAAAAAA:0"], key_type=2, v=6),
        find_coordinators(["{g}"], key_type=2, v=6),
    ]),
    # ------------------------------------------------------------ SASL on the SASL listener
    Scenario("cluster_apis/sasl/unsupported_mechanism", "On the SASL listener before logging in: ApiVersions "
             "is answered; SaslHandshake v1 naming a mechanism not enabled (SCRAM-SHA-256; PLAIN is): "
             "UNSUPPORTED_SASL_MECHANISM with the enabled ones, then the connection is closed.",
             topics={}, broker=SECURED, steps=[
        api_versions(conn=RAW),
        call(17, 1, {"mechanism": "SCRAM-SHA-256"}, conn=RAW),
        api_versions(conn=RAW),
    ]),
    Scenario("cluster_apis/sasl/wrong_password", "SaslHandshake v1 PLAIN, then SaslAuthenticate v2 with a "
             "wrong password: SASL_AUTHENTICATION_FAILED with a message, then the connection is closed; an "
             "unknown user likewise (v0).", topics={}, broker=SECURED, steps=[
        call(17, 1, {"mechanism": "PLAIN"}, conn=RAW),
        call(36, 2, {"auth_bytes": b"\0alice\0wrong"}, conn=RAW),
        api_versions(conn=RAW),
        call(17, 1, {"mechanism": "PLAIN"}, conn=RAW),
        call(36, 0, {"auth_bytes": b"\0nobody\0x"}, conn=RAW),
        api_versions(conn=RAW),
    ]),
    Scenario("cluster_apis/sasl/out_of_order", "Before logging in: Metadata instead of SaslHandshake (the "
             "connection is closed); SaslAuthenticate before SaslHandshake; SaslHandshake then Metadata instead "
             "of SaslAuthenticate (its error answer, then the close), and ElectLeaders likewise (the message in "
             "each partition); a malformed PLAIN token (no separators).", topics={"t": Topic()}, broker=SECURED,
             steps=[
        metadata(["{t}"], conn=RAW),
        call(36, 2, {"auth_bytes": b"\0alice\0alice-secret"}, conn=RAW),
        call(17, 1, {"mechanism": "PLAIN"}, conn=RAW),
        metadata(["{t}"], conn=RAW),
        api_versions(conn=RAW),
        call(17, 1, {"mechanism": "PLAIN"}, conn=RAW),
        call(36, 2, {"auth_bytes": b"alice"}, conn=RAW),
        api_versions(conn=RAW),
        call(17, 1, {"mechanism": "PLAIN"}, conn=RAW),
        elect({"{t}": [0]}, conn=RAW),
        api_versions(conn=RAW),
    ]),
    Scenario("cluster_apis/sasl/handshake_v0_raw_tokens", "SaslHandshake v0 PLAIN, then the token as a bare "
             "frame (no SaslAuthenticate): a wrong password (the connection is closed, nothing answered); on a new "
             "connection ApiVersions, the v0 handshake and the good password (an empty frame back), then Metadata "
             "as alice (no ACL) and ApiVersions on that connection.", topics={"t": Topic()}, broker=SECURED, steps=[
        call(17, 0, {"mechanism": "PLAIN"}, conn=RAW),
        raw_token(b"\0alice\0wrong", conn=RAW),
        api_versions(conn=RAW),
        call(17, 0, {"mechanism": "PLAIN"}, conn=RAW),
        raw_token(b"\0alice\0alice-secret", conn=RAW),
        metadata(["{t}"], conn=RAW),
        api_versions(conn=RAW),
    ]),
    Scenario("cluster_apis/sasl/handshake_v0_odd_tokens", "After SaslHandshake v0 PLAIN, bare tokens that are "
             "not a plain login, each on a new connection: no separators, empty, an unknown user, an authorization "
             "id other than the user, a framed SaslAuthenticate v2 request sent as if the token; then an "
             "authorization id equal to the user (a login: Metadata answered).", topics={"t": Topic()},
             broker=SECURED, steps=[
        call(17, 0, {"mechanism": "PLAIN"}, conn=RAW),
        raw_token(b"alice", conn=RAW),
        call(17, 0, {"mechanism": "PLAIN"}, conn=RAW),
        raw_token(b"", conn=RAW),
        call(17, 0, {"mechanism": "PLAIN"}, conn=RAW),
        raw_token(b"\0nobody\0x", conn=RAW),
        call(17, 0, {"mechanism": "PLAIN"}, conn=RAW),
        raw_token(b"bob\0alice\0alice-secret", conn=RAW),
        call(17, 0, {"mechanism": "PLAIN"}, conn=RAW),
        call(36, 2, {"auth_bytes": b"\0alice\0alice-secret"}, conn=RAW),
        call(17, 0, {"mechanism": "PLAIN"}, conn=RAW),
        raw_token(b"alice\0alice\0alice-secret", conn=RAW),
        metadata(["{t}"], conn=RAW),
    ]),
    Scenario("cluster_apis/sasl/login_then_sasl_again", "A good PLAIN login by hand (v1 handshake, v2 "
             "authenticate: the answer's session lifetime), then a Metadata as alice (no ACL) on that "
             "connection, then SaslHandshake and SaslAuthenticate again (ILLEGAL_SASL_STATE).",
             topics={"t": Topic()}, broker=SECURED, steps=[
        call(17, 1, {"mechanism": "PLAIN"}, conn=RAW),
        call(36, 2, {"auth_bytes": b"\0alice\0alice-secret"}, conn=RAW),
        metadata(["{t}"], conn=RAW),
        call(17, 1, {"mechanism": "PLAIN"}, conn=RAW),
        call(36, 2, {"auth_bytes": b"\0alice\0alice-secret"}, conn=RAW),
        call(36, 1, {"auth_bytes": b""}, conn=ALICE),
    ]),
]
