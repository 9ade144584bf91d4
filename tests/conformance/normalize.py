"""Normalize requests and responses so Kafka's answers and minikafka's can be compared.

Only what legitimately differs between two brokers or two runs is normalized:
- real topic names, transactional ids and group ids -> their scenario placeholders;
- producer ids -> P1, P2, ... in order of first appearance; topic ids -> T1, T2, ...;
  fetch session ids (random in Kafka) -> S1, S2, ... (0, "no session", stays 0);
- timestamps (fields named ``*timestamp*``, ``*_time_ms``) -> "<ts>" unless negative, except a
  LogAppendTime stamp, which becomes the Produce step whose answer gave it (the same stamp must
  come back in that answer, in the fetched batch and in ListOffsets);
- throttle times are dropped; cluster ids -> a placeholder; a host and port -> the listener
  they belong to (``<SASL_PLAINTEXT port>``), so an endpoint of the wrong listener differs;
- record bytes -> the decoded batches, their CRC checked (``crc`` appears only when it is
  wrong), without CreateTime timestamps (a trailing cut batch: its size);
- an ApiVersions answer -> its API table and feature levels by name ("Produce": "0-13").
Bytes left after a decoded answer appear as ``trailing_bytes`` (runner.py).
Everything else (error codes, offsets, epochs, states, sequences...) is kept as is.
"""
from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass

# the CRC-32C of the crc32c package itself, not the broker's protocol/records.py: a checker
# that shares the broker's code would miss a fault in it
from crc32c import crc32c as _crc32c

from minikafka.coordinator.hashing import partition_for
from minikafka.protocol.schema import API_NAMES
from minikafka.protocol import records as rec
from minikafka.protocol.errors import KafkaError

DROP = {"throttle_time_ms"}
TIMESTAMP_EXACT = {"log_append_time_ms", "transaction_start_time_ms", "last_timestamp", "timestamp",
                   "max_timestamp", "base_timestamp"}
ZERO_UUID = uuid.UUID(int=0)
# A classic group member id as Kafka makes it: the client id (the runner's connections say
# "conformance"), or a static member's instance id, and a random UUID. Only these forms are
# normalized, so another form still differs.
GENERATED_MEMBER_ID = re.compile(r"(.+)-([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})")
# keys and values longer than this are shown by their size (a batch over segment.bytes would
# otherwise put a megabyte into its golden file)
LONG_VALUE = 4096
# The member id Kafka makes for a classic member joining a consumer group (KIP-848 migration):
# Uuid.randomUuid().toString(), 16 random bytes in unpadded URL-safe base64. Normalized only as
# a "member_id" field's value.
UUID_MEMBER_ID = re.compile(r"[A-Za-z0-9_-]{21}[AQgw]")
# A response's bytes after its last decoded field (runner.decode_exact puts them under this key)
TRAILING = "trailing_bytes"


class Done(list):
    """A list already normalized (decoded record batches): left as it is."""


@dataclass
class AppendTime:
    """A LogAppendTime stamp a Produce answer gave for the offsets [base, last] of a partition."""
    step: int
    base: int
    last: int
    stamp: int

    def symbol(self, value: int) -> str:
        """``value`` (a stamp seen later for these offsets) as the transcript shows it: the step's
        stamp, or how far from it."""
        if value == self.stamp:
            return f"<log_append_time_ms of step {self.step}>"
        return f"<log_append_time_ms of step {self.step} {value - self.stamp:+d} ms>"


class Normalizer:
    def __init__(self, names: dict[str, str], listeners: dict[str, str] | None = None):
        self.by_real = {real: placeholder for placeholder, real in names.items()}
        self.pids: dict[int, str] = {}
        self.topic_ids: dict[uuid.UUID, str] = {}
        self.sessions: dict[int, str] = {}
        self.members: dict[str, str] = {}
        self.tokens: dict[str, str] = {}      # delegation token id -> K1, K2, ...
        self.hmacs: dict[bytes, str] = {}     # its HMAC -> "<hmac of K1>"
        # (host, port) -> the name of the listener there ("PLAINTEXT", "SASL_PLAINTEXT", "SSL", or
        # a named listener's name); port -> that name, for an endpoint whose host is another
        self.endpoints: dict[tuple[str, int], str] = {}
        self.ports: dict[int, str] = {}
        for name, address in (listeners or {}).items():
            if address:
                host, port = address.rsplit(":", 1)
                self.endpoints[(host.strip("[]"), int(port))] = name
                self.ports[int(port)] = name
        self.topic_names: dict[uuid.UUID, str] = {}   # topic id -> real name, as the run learnt them
        # (real topic name, partition) -> the LogAppendTime stamps Produce answers gave
        self.append_times: dict[tuple[str, int], list[AppendTime]] = {}

    def pid(self, value):
        if not isinstance(value, int) or value < 0:
            return value
        if value not in self.pids:
            self.pids[value] = f"P{len(self.pids) + 1}"
        return self.pids[value]

    def session(self, value):
        if not isinstance(value, int) or value <= 0:
            return value
        if value not in self.sessions:
            self.sessions[value] = f"S{len(self.sessions) + 1}"
        return self.sessions[value]

    def topic_id(self, value):
        if not isinstance(value, uuid.UUID) or value == ZERO_UUID:
            return str(value) if isinstance(value, uuid.UUID) else value
        if value not in self.topic_ids:
            self.topic_ids[value] = f"T{len(self.topic_ids) + 1}"
        return self.topic_ids[value]

    def token(self, token_id: str, hmac) -> None:
        """A delegation token (id and HMAC, both random or secret-dependent) by its placeholder."""
        if token_id and token_id not in self.tokens:
            self.tokens[token_id] = f"K{len(self.tokens) + 1}"
        if token_id and hmac:
            self.hmacs[bytes(hmac)] = f"<hmac of {self.tokens[token_id]}>"

    def endpoint(self, host, port) -> tuple[object, object]:
        """A host and port as the listener they belong to: ``<SSL host>``, ``<SSL port>``. A
        port of no listener, or a listener's port with another host, stays visible as such."""
        name = self.endpoints.get((host, port))
        if name is not None:
            return f"<{name} host>", f"<{name} port>"
        owner = self.ports.get(port)
        if owner:
            return host, f"<{owner} port>"
        # no port at all (-1, or 0 in a field a version leaves unused) stays as it is
        return host, (port if not isinstance(port, int) or port <= 0 else "<not a listener's port>")

    def __call__(self, obj, key: str | None = None):
        if isinstance(obj, Done):
            return list(obj)
        if isinstance(obj, dict):
            if "token_id" in obj and "hmac" in obj:
                self.token(obj["token_id"], obj["hmac"])
            out = {}
            at = self.endpoint(obj["host"], obj["port"]) if "host" in obj and "port" in obj else None
            for k, v in obj.items():
                if k in DROP:
                    continue
                if at is not None and k in ("host", "port"):
                    out[k] = at[0] if k == "host" else at[1]
                    continue
                out[k] = self(v, k)
            _token_lifetimes(obj, out)
            return out
        if isinstance(obj, (list, tuple)):
            return [self(v, key) for v in obj]
        if key is not None:
            if key.endswith("producer_id") or key == "producer_id_filters":
                return self.pid(obj)
            if key == "topic_id":
                return self.topic_id(obj)
            if key == "session_id":
                return self.session(obj)
            if key in TIMESTAMP_EXACT or key.endswith("_timestamp") or key.endswith("timestamp_ms"):
                return obj if not isinstance(obj, int) or obj < 0 else "<ts>"
            if key == "log_dir" or key == "path":   # a log dir (DescribeLogDirs, AlterReplicaLogDirs)
                return log_dir_name(obj)
            if key in ("total_bytes", "usable_bytes"):   # the volume's size and free space
                return obj if not isinstance(obj, int) or obj < 0 else "<bytes>"
            if key == "cluster_id":
                return None if obj is None else "<cluster>"
            if key == "member_id" and isinstance(obj, str) and UUID_MEMBER_ID.fullmatch(obj):
                return self.members.setdefault(obj, f"M{len(self.members) + 1}")
            if key == "records" and isinstance(obj, (bytes, bytearray, memoryview)):
                return self.batches(bytes(obj))
        if isinstance(obj, str):
            if obj in self.tokens:
                return self.tokens[obj]
            generated = GENERATED_MEMBER_ID.fullmatch(obj)
            if generated and (generated[1] == "conformance" or generated[1] in self.by_real):
                member = self.members.setdefault(generated[2], f"M{len(self.members) + 1}")
                return member if generated[1] == "conformance" else f"{self.by_real[generated[1]]}-{member}"
            if obj not in self.by_real and ":" in obj:
                # a principal naming one of the run's names ("User:{o}", a USER resource's name)
                kind, _, name = obj.partition(":")
                if name in self.by_real:
                    return f"{kind}:{self.by_real[name]}"
            return self.by_real.get(obj, obj)
        if isinstance(obj, uuid.UUID):
            return self.topic_id(obj)
        if isinstance(obj, (bytes, bytearray, memoryview)):
            if bytes(obj) in self.hmacs:
                return self.hmacs[bytes(obj)]
            return self.opaque(bytes(obj)).hex()
        return obj

    def opaque(self, data: bytes) -> bytes:
        """Bytes the broker keeps for a client (a classic member's subscription or assignment)
        name the run's real topics: their placeholders instead. A real name is as long in both
        runs (the same token length), so the length prefixes before it stay equal."""
        for real, placeholder in self.by_real.items():
            data = data.replace(real.encode(), placeholder.encode())
        return data

    # ------------------------------------------------------------ what a step's answer says of earlier ones
    def response(self, api: str, request: dict, response, step: int):
        """A response normalized, with what ties it to earlier steps: the LogAppendTime stamps
        of Produce answers, which the fetched batches and ListOffsets must repeat. (The answer
        itself is left as it is: a later step may use values saved from it.)"""
        response = _copy(response)
        if isinstance(response, dict) and not response.get("connection_closed"):
            if api == "Produce":
                self.produced(request, response, step)
            elif api == "Fetch":
                for t in response.get("responses") or []:
                    topic = self.topic_name(t.get("topic"), t.get("topic_id"))
                    for p in t.get("partitions") or []:
                        if isinstance(p.get("records"), (bytes, bytearray, memoryview)):
                            p["records"] = Done(self.batches(bytes(p["records"]), (topic, p.get("partition_index"))))
            elif api == "ListOffsets":
                for t in response.get("topics") or []:
                    for p in t.get("partitions") or []:
                        stamp = self.append_time((t.get("name"), p.get("partition_index")), p.get("offset"))
                        if stamp is not None and isinstance(p.get("timestamp"), int) and p["timestamp"] >= 0:
                            p["timestamp"] = stamp.symbol(p["timestamp"])
        return self(response)

    def topic_name(self, name, topic_id) -> str | None:
        if name:
            return name
        return self.topic_names.get(topic_id)

    def append_time(self, where, offset) -> AppendTime | None:
        for a in reversed(self.append_times.get(where, ())):
            if isinstance(offset, int) and a.base <= offset <= a.last:
                return a
        return None

    def produced(self, request: dict, response: dict, step: int) -> None:
        """Remember the LogAppendTime stamp each partition's answer gives (with the offsets of
        the batches sent there); an answer for offsets already stamped (a duplicate) is shown as
        that stamp."""
        counts: dict[tuple, int] = {}
        for t in request.get("topic_data") or []:
            topic = self.topic_name(t.get("name"), t.get("topic_id"))
            for p in t.get("partition_data") or []:
                data = p.get("records")
                if isinstance(data, (bytes, bytearray, memoryview)):
                    try:
                        counts[(topic, p.get("index"))] = sum(h.last_offset_delta + 1 for _, h in
                                                             rec.iter_batch_headers(bytes(data)))
                    except KafkaError:
                        pass
        for t in response.get("responses") or []:
            topic = self.topic_name(t.get("name"), t.get("topic_id"))
            for p in t.get("partition_responses") or []:
                stamp, base = p.get("log_append_time_ms"), p.get("base_offset")
                if not isinstance(stamp, int) or stamp < 0 or not isinstance(base, int) or base < 0:
                    continue
                where = (topic, p.get("index"))
                earlier = self.append_time(where, base)
                if earlier is not None:
                    p["log_append_time_ms"] = earlier.symbol(stamp)
                elif counts.get(where):
                    self.append_times.setdefault(where, []).append(
                        AppendTime(step, base, base + counts[where] - 1, stamp))

    # ------------------------------------------------------------ record batches
    def batches(self, data: bytes, where: tuple | None = None) -> list[dict]:
        """The batches of a records field, decoded. Where they were fetched from (topic,
        partition): a LogAppendTime batch's stamp is shown as the Produce step's that gave it."""
        out = []
        end = 0
        for pos, h in rec.iter_batch_headers(data):
            try:
                _, records = rec.decode_batch(data, pos)
            except KafkaError:
                # bytes a scenario broke on purpose (records that do not match the header, an
                # unknown codec or magic): the header as it was sent
                records = None
            b = {"base_offset": h.base_offset, "last_offset_delta": h.last_offset_delta,
                 "partition_leader_epoch": h.partition_leader_epoch,
                 "producer_id": self.pid(h.producer_id), "producer_epoch": h.producer_epoch,
                 "base_sequence": h.base_sequence, "transactional": h.is_transactional,
                 "control": h.is_control, "compression": h.compression,
                 "timestamp_type": int(h.timestamp_type), "records_count": h.records_count}
            if _crc32c(data[pos + rec.ATTRIBUTES_OFFSET: pos + h.size]) != h.crc:
                b["crc"] = "wrong: not the CRC-32C of the batch"
            if h.timestamp_type == rec.TimestampType.LOG_APPEND_TIME and where is not None:
                stamp = self.append_time(where, h.base_offset)
                b["append_time"] = stamp.symbol(h.max_timestamp) if stamp is not None else "<ts>"
            if records is None:
                b.update(magic=h.magic, attributes=h.attributes, records="<undecodable>")
            elif h.is_control:
                b["records"] = []
                for r in records:
                    ctype, coordinator_epoch = rec.parse_control_record(r)
                    b["records"].append({"control_type": rec.ControlRecordType(ctype).name,
                                         "coordinator_epoch": coordinator_epoch})
            else:
                b["records"] = [{"offset": r.offset, "key": _text(r.key), "value": _text(r.value),
                                 "headers": [[k, _text(v)] for k, v in r.headers]} for r in records]
            out.append(b)
            end = pos + h.size
        # a batch cut by the fetch's byte limit (Kafka sends the file's bytes up to the limit)
        if len(data) > end:
            out.append({"partial_batch_bytes": len(data) - end})
        return out


# a delegation token's timestamps: CreateDelegationToken's answer and DescribeDelegationToken's tokens
_TOKEN_TIMES = (("issue_timestamp_ms", "expiry_timestamp_ms", "max_timestamp_ms"),
                ("issue_timestamp", "expiry_timestamp", "max_timestamp"))


def _token_lifetimes(obj: dict, out: dict) -> None:
    """A token's expiry and maximum lifetime relative to its issue time (one clock reading in both
    brokers, so exact): "<issue>+86400000", or "<max>" for an expiry at the maximum lifetime."""
    for issue_k, expiry_k, max_k in _TOKEN_TIMES:
        issue, expiry, most = obj.get(issue_k), obj.get(expiry_k), obj.get(max_k)
        if isinstance(issue, int) and isinstance(expiry, int) and isinstance(most, int) and issue > 0:
            out[max_k] = f"<issue>+{most - issue}"
            out[expiry_k] = "<max>" if expiry == most else f"<issue>+{expiry - issue}"


def _copy(obj):
    """Dicts and lists copied, their leaves shared (record bytes are not copied)."""
    if isinstance(obj, dict):
        return {k: _copy(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_copy(v) for v in obj]
    return obj


def log_dir_name(path):
    """A log dir's path on the broker's machine: ``<log dir>``, with its last component where it
    is not the broker's data dir itself (``<log dir dir-a>`` for dsl.TWO_LOG_DIRS). A path that
    is no directory here (a scenario's made-up one) stays as it is."""
    import os
    if not isinstance(path, str) or not path or not os.path.isdir(path):
        return path
    base = os.path.basename(path.rstrip("/"))
    return "<log dir>" if base == "data" else f"<log dir {base}>"


def _text(b):
    if b is None:
        return None
    if len(b) > LONG_VALUE:
        return f"<{len(b)} bytes>"
    try:
        return bytes(b).decode("utf-8")
    except UnicodeDecodeError:
        return "0x" + bytes(b).hex()


def own_entries(api: str, response, own_names, request: dict | None = None, own_tokens=()) -> None:
    """Cluster-wide listings keep only this scenario's entries (before normalizing, so
    other scenarios' producer ids take no symbols)."""
    if api == "DescribeClientQuotas" and response.get("entries"):
        # entities naming another scenario's users or clients (ips and defaults: alone scenarios)
        response["entries"] = [e for e in response.entries
                               if not any(_foreign(x.entity_name, own_names) for x in e.entity)]
    elif api == "DescribeDelegationToken" and response.get("tokens"):
        response["tokens"] = [t for t in response.tokens if t.token_id in own_tokens]
    elif api == "ListTransactions":
        response["transaction_states"] = [s for s in response.transaction_states if s.transactional_id in own_names]
    elif api == "ListGroups":
        response["groups"] = [g for g in response.groups if g.group_id in own_names]
    elif api == "DescribeUserScramCredentials" and response.get("results") is not None:
        # every user (users=None): other scenarios' users are not this scenario's to compare
        response["results"] = [r for r in response.results if r.user in own_names or r.user == ""]
    elif api in ("Metadata", "DescribeTopicPartitions") and response.get("topics"):
        # every topic (no names asked): other scenarios' topics go, the internal ones stay
        response["topics"] = [t for t in response.topics if not _foreign(t.name, own_names)]
        body = (request or {}).get("body") or {}
        if api == "Metadata" and (body.get("topics") is None or (request["version"] == 0 and not body["topics"])):
            # every topic, from the metadata image's hash map of names: in name order
            response["topics"] = sorted(response.topics, key=lambda t: t.name or "")
    elif api == "ElectLeaders" and response.get("replica_election_results"):
        response["replica_election_results"] = [r for r in response.replica_election_results
                                                if not _foreign(r.topic, own_names)]
    elif api == "ListConfigResources":
        # topics and groups of other scenarios (the internal topics and the broker stay)
        response["config_resources"] = [r for r in response.config_resources
                                         if not _foreign(r.resource_name, own_names)]
    elif api == "DescribeLogDirs":
        # every partition of the dir (topics null): only this scenario's (the internal topics'
        # sizes follow from what other scenarios did)
        for d in response.get("results") or []:
            d["topics"] = [t for t in d.topics if t.name in own_names]


# A scenario topic's real name (runner.real_names: "<scenario slug>.<word>.<8 hex token>", or with
# '.' made '_', or the held topics' prefix): another scenario's when it is not one of ours
SCENARIO_TOPIC = re.compile(r"(?:cfheld-)?[a-z0-9._-]+[._][0-9a-f]{8}")


def _foreign(name, own_names) -> bool:
    return isinstance(name, str) and name not in own_names and SCENARIO_TOPIC.fullmatch(name) is not None


def canonical(api: str, response):
    """Put collections that Kafka keeps in hash sets into a fixed order. Order carries no
    meaning in these answers; without this, two recordings of one scenario would differ."""
    if not isinstance(response, dict):
        return response
    if api == "ApiVersions":
        return response if response.get("connection_closed") else api_versions_table(response)
    if api == "DescribeTransactions":
        for s in response.get("transaction_states", []):
            for t in s.get("topics") or []:
                t["partitions"] = sorted(t["partitions"])
            s["topics"] = sorted(s.get("topics") or [], key=lambda t: t["topic"])
    elif api == "ListTransactions":
        response["transaction_states"] = sorted(response.get("transaction_states", []),
                                                key=lambda s: s["transactional_id"])
    elif api == "ConsumerGroupDescribe":
        for g in response.get("groups", []):
            g["members"] = sorted(g.get("members") or [], key=lambda m: m["member_id"])
            for m in g["members"]:   # a HashSet of the run's names: their order changes with them
                m["subscribed_topic_names"] = sorted(m.get("subscribed_topic_names") or [])
                for a in ("assignment", "target_assignment"):   # topics: a HashMap of random ids
                    if isinstance(m.get(a), dict):
                        m[a]["topic_partitions"] = sorted(m[a].get("topic_partitions") or [],
                                                          key=lambda t: t.get("topic_name") or "")
    elif api == "ListGroups":
        response["groups"] = sorted(response.get("groups") or [], key=lambda g: g["group_id"])
    elif api == "DeleteGroups":   # one result list per coordinator partition, in a hash map's order
        response["results"] = sorted(response.get("results") or [], key=lambda r: r["group_id"])
    elif api == "JoinGroup":   # the leader's member list: a hash map in Kafka
        response["members"] = sorted(response.get("members") or [], key=lambda m: m["member_id"])
    elif api == "DescribeGroups":   # groups answered per coordinator partition, members from a hash map
        for g in response.get("groups", []):
            g["members"] = sorted(g.get("members") or [], key=lambda m: m["member_id"])
        response["groups"] = sorted(response.get("groups") or [], key=lambda g: g["group_id"])
    elif api == "OffsetFetch":
        # all of a group's offsets (topics null) come in the order of a hash map
        for g in [response] + list(response.get("groups") or []):
            if g.get("topics") is not None:
                for t in g["topics"]:
                    t["partitions"] = sorted(t.get("partitions") or [], key=lambda p: p["partition_index"])
                g["topics"] = sorted(g["topics"], key=lambda t: t["name"])
    elif api in ("DescribeUserScramCredentials", "AlterUserScramCredentials"):
        # Kafka answers in the order of a hash map (every user of a DescribeUserScramCredentials
        # with users=None; AlterUserScramCredentials' deletions, upsertions and errors)
        response["results"] = sorted(response.get("results", []), key=lambda r: r["user"])
        for r in response["results"]:   # a user's mechanisms too (seen in both orders)
            if "credential_infos" in r:
                r["credential_infos"] = sorted(r["credential_infos"], key=lambda c: c["mechanism"])
    elif api == "DescribeConfigs":
        # Kafka builds a resource's entries from a Scala hash map of the config names (ConfigHelper):
        # the order follows the names' hashes. A config's synonyms keep their order (precedence).
        for r in response.get("results", []):
            r["configs"] = sorted(r.get("configs") or [], key=lambda c: c["name"])
    elif api == "Metadata":
        # a topic's partitions come from the metadata image's hash map keyed by partition (Kafka
        # answered [1, 0] and [1, 2, 0] for two and three partitions)
        for t in response.get("topics") or []:
            t["partitions"] = sorted(t.get("partitions") or [], key=lambda p: p["partition_index"])
    elif api == "DeleteTopics":
        # Kafka shuffles these answers on purpose (ControllerApis.deleteTopics: Collections.shuffle)
        response["responses"] = sorted(response.get("responses") or [],
                                       key=lambda r: (r.get("name") or "", str(r.get("topic_id"))))
    elif api == "DescribeLogDirs":
        # a dir's partitions grouped by topic in a hash map (ReplicaManager.describeLogDirs)
        for d in response.get("results") or []:
            for t in d.get("topics") or []:
                t["partitions"] = sorted(t.get("partitions") or [], key=lambda p: p["partition_index"])
            d["topics"] = sorted(d.get("topics") or [], key=lambda t: t["name"])
    elif api == "ListConfigResources":
        # Kafka lists each type's resources from sets and maps (topic names in hash order)
        response["config_resources"] = sorted(response.get("config_resources") or [],
                                              key=lambda r: (r.get("resource_type", 0), r["resource_name"]))
    elif api == "DescribeQuorum":
        # the metadata log's offsets: Kafka's count its records (which differ run to run), minikafka's
        # its metadata changes; compared as given (>= 0) or not
        for t in response.get("topics") or []:
            for p in t.get("partitions") or []:
                for v in [p] + list(p.get("current_voters") or []) + list(p.get("observers") or []):
                    for k in ("high_watermark", "log_end_offset"):
                        if isinstance(v.get(k), int) and v[k] > 0:
                            v[k] = "<offset>"
    elif api == "AlterReplicaLogDirs":
        # ReplicaManager.alterReplicaLogDirs answers a map of partitions, grouped by topic in another
        for t in response.get("results") or []:
            t["partitions"] = sorted(t.get("partitions") or [], key=lambda p: p["partition_index"])
        response["results"] = sorted(response.get("results") or [], key=lambda t: t["topic_name"])
    elif api in ("AlterPartitionReassignments", "ListPartitionReassignments"):
        # the controller's answers come from hash maps of topics and partitions
        key = "responses" if api == "AlterPartitionReassignments" else "topics"
        for t in response.get(key) or []:
            t["partitions"] = sorted(t.get("partitions") or [], key=lambda p: p["partition_index"])
        response[key] = sorted(response.get(key) or [], key=lambda t: t["name"])
    elif api == "ElectLeaders":
        # results from the controller's hash maps of topic partitions
        for t in response.get("replica_election_results") or []:
            t["partition_result"] = sorted(t.get("partition_result") or [], key=lambda p: p["partition_id"])
        response["replica_election_results"] = sorted(response.get("replica_election_results") or [],
                                                      key=lambda t: t["topic"])
    elif api in ("DescribeClientQuotas", "AlterClientQuotas"):
        # entities, their types and their quotas come from Java hash maps
        for e in response.get("entries") or []:
            e["entity"] = sorted(e.get("entity") or [], key=lambda x: x["entity_type"])
            if "values" in e:
                e["values"] = sorted(e.get("values") or [], key=lambda v: v["key"])
        if response.get("entries") is not None:
            response["entries"] = sorted(response["entries"], key=lambda e: json.dumps(e["entity"]))
    elif api == "DescribeDelegationToken":   # the token cache's hash map
        response["tokens"] = sorted(response.get("tokens") or [], key=lambda t: str(t["token_id"]))
    elif api == "DescribeProducers":
        for t in response.get("topics", []):
            for p in t.get("partitions", []):
                p["active_producers"] = sorted(p.get("active_producers", []), key=lambda e: str(e["producer_id"]))
    canonical_partition_maps(api, response)
    return response


# Kafka 4.1's API keys newer than the protocol schemas minikafka is generated from
NEWER_API_NAMES = {88: "StreamsGroupHeartbeat", 89: "StreamsGroupDescribe", 90: "DescribeShareGroupOffsets",
                   91: "AlterShareGroupOffsets", 92: "DeleteShareGroupOffsets"}


def api_name(key: int) -> str:
    return API_NAMES.get(key) or NEWER_API_NAMES.get(key) or f"api {key}"


def api_versions_table(response: dict) -> dict:
    """An ApiVersions answer with its API table and feature levels keyed by name, so that a
    missing API or another range is reported by its name: ``api_keys.EndTxn``, Kafka "0-5",
    minikafka "<absent>". The finalized features' epoch is an offset of Kafka's metadata log
    (minikafka counts its own changes): only whether there is one (-1) is compared."""
    out = dict(response)
    if isinstance(response.get("api_keys"), list):
        out["api_keys"] = {api_name(a["api_key"]): f"{a['min_version']}-{a['max_version']}"
                           for a in sorted(response["api_keys"], key=lambda a: a["api_key"])}
    for key, lo, hi in (("supported_features", "min_version", "max_version"),
                        ("finalized_features", "min_version_level", "max_version_level")):
        if isinstance(response.get(key), list):
            out[key] = {f["name"]: f"{f[lo]}-{f[hi]}" for f in sorted(response[key], key=lambda f: f["name"])}
    epoch = response.get("finalized_features_epoch")
    if isinstance(epoch, int) and epoch >= 0:
        out["finalized_features_epoch"] = "<epoch>"
    return out


def canonical_partition_maps(api: str, response: dict) -> None:
    """Produce, WriteTxnMarkers and ListOffsets answers are built from hash maps keyed by partition
    (and producer id): with several partitions in one request, their order depends on the topic
    name's hash (ListOffsets: ReplicaManager.fetchOffset's map, grouped by topic)."""
    if api == "ListOffsets":
        for t in response.get("topics", []):
            t["partitions"] = sorted(t.get("partitions", []), key=lambda p: p["partition_index"])
        response["topics"] = sorted(response.get("topics", []), key=lambda t: t["name"])
    elif api == "Produce":
        for t in response.get("responses", []):
            t["partition_responses"] = sorted(t.get("partition_responses", []), key=lambda p: p["index"])
        response["responses"] = sorted(response.get("responses", []), key=lambda t: t["name"])
    elif api == "WriteTxnMarkers":
        for m in response.get("markers", []):
            for t in m.get("topics", []):
                t["partitions"] = sorted(t.get("partitions", []), key=lambda p: p["partition_index"])
            m["topics"] = sorted(m.get("topics", []), key=lambda t: t["name"])
        response["markers"] = sorted(response.get("markers", []), key=lambda m: str(m["producer_id"]))


# ------------------------------------------------------------------ comparison

# Free-text fields: Kafka's texts are Java exception messages; whether one is given is
# compared, the words are not (tests/conformance/DIFFERENCES.md).
MESSAGE_FIELDS = {"error_message", "batch_index_error_message"}


def flatten(obj, prefix: str = "") -> dict[str, object]:
    out: dict[str, object] = {}
    if isinstance(obj, dict):
        if not obj:
            out[prefix or "."] = {}
        for k, v in obj.items():
            out.update(flatten(v, f"{prefix}.{k}" if prefix else k))
    elif isinstance(obj, list):
        if not obj:
            out[prefix or "."] = []
        for i, v in enumerate(obj):
            out.update(flatten(v, f"{prefix}[{i}]"))
    else:
        out[prefix or "."] = obj
    return out


def differences(kafka, ours) -> list[tuple[str, object, object]]:
    """[(path, Kafka's value, ours)] for every field that differs."""
    a, b = flatten(kafka), flatten(ours)
    diffs = []
    for path in list(a) + [p for p in b if p not in a]:
        ka, ob = a.get(path, "<absent>"), b.get(path, "<absent>")
        leaf = path.rsplit(".", 1)[-1]
        if leaf in MESSAGE_FIELDS:
            if (ka is None) != (ob is None) or ka == "<absent>" or ob == "<absent>":
                if ka != ob:
                    diffs.append((path, ka, ob))
            continue
        if ka != ob:
            diffs.append((path, ka, ob))
    return diffs


def order_free(api: str, response):
    """The answer with the orders that carry no meaning sorted, for comparing a golden file with a
    run: both sides go through it, so golden files recorded before a sort was added here need no
    re-recording. ConsumerGroupDescribe answers its groups per coordinator partition (Kafka's
    shard order), which follows from the groups' real names, new each run."""
    if api == "ConsumerGroupDescribe" and isinstance(response, dict) and response.get("groups"):
        response = dict(response, groups=sorted(response["groups"], key=lambda g: g.get("group_id") or ""))
    return response


def group_partitions(api: str, response, names: dict[str, str], offsets_partitions: int = 50):
    """DescribeTransactions lists the __consumer_offsets partition that AddOffsetsToTxn added;
    which one it is follows from the group's real name, which is new each run. A partition
    that is a scenario name's partition (abs(hashCode) % 50, Kafka's rule) becomes
    ``"<partition of {g}>"``; any other number stays, so a broker that picks another
    partition still differs."""
    if api != "DescribeTransactions" or not isinstance(response, dict):
        return response
    by_partition = {partition_for(real, offsets_partitions): ph for ph, real in names.items() if ph.startswith("{g")}
    for s in response.get("transaction_states", []):
        for t in s.get("topics") or []:
            if t["topic"] == "__consumer_offsets":
                t["partitions"] = sorted((f"<partition of {by_partition[p]}>" if p in by_partition else p
                                          for p in t["partitions"]), key=str)
    return response


def canonical_add_partitions(api: str, response):
    """AddPartitionsToTxn answers are built from Java hash maps (transactional id -> partitions,
    partition -> error), so their order follows the hashes of the run's random names: put
    transactions, topics and partitions in a fixed order."""
    if api != "AddPartitionsToTxn" or not isinstance(response, dict):
        return response

    def topics(ts):
        for t in ts:
            t["results_by_partition"] = sorted(t.get("results_by_partition") or [], key=lambda p: p["partition_index"])
        return sorted(ts, key=lambda t: t["name"])

    response["results_by_topic_v3_and_below"] = topics(response.get("results_by_topic_v3_and_below") or [])
    for r in response.get("results_by_transaction") or []:
        r["topic_results"] = topics(r.get("topic_results") or [])
    response["results_by_transaction"] = sorted(response.get("results_by_transaction") or [],
                                                key=lambda r: r["transactional_id"])
    return response
