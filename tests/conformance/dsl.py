"""The scenario language: short, readable sequences of raw Kafka requests.

A scenario names its topics and ids with placeholders (``"{t}"``, ``"{tx}"``,
``"{g}"``); the runner turns each into a unique real name per run and turns
them back in what it records. Values captured from earlier responses are
``Ref``s: ``ref("a.producer_epoch")`` is the ``producer_epoch`` of the response
saved as ``a``; ``ref("a.producer_epoch") - 1`` is one less.

    Scenario("txn/init/fenced_zombie_retries_v4", "what it shows", steps=[
        init_pid("a"),                       # InitProducerId for {tx}, saved as "a"
        init_pid("b"),                       # a second instance fences the first
        init_pid("a2", pid=ref("a.producer_id"), epoch=ref("a.producer_epoch")),
    ])

Each step records Kafka's response; the conformance test replays the steps
against minikafka and compares the normalized responses field by field.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable

ApiKey = int


class Ref:
    """A value taken from an earlier saved response (``"name.path.0.field"``), plus a delta."""

    def __init__(self, path: str, delta: int = 0):
        self.path, self.delta = path, delta

    def __add__(self, n: int) -> "Ref":
        return Ref(self.path, self.delta + n)

    def __sub__(self, n: int) -> "Ref":
        return Ref(self.path, self.delta - n)

    def resolve(self, saved: dict) -> Any:
        name, *parts = self.path.split(".")
        if name not in saved:
            raise KeyError(f"no response saved as {name!r} (for {self.path})")
        value = saved[name]
        for p in parts:
            value = value[int(p)] if p.isdigit() else value[p]
        return value + self.delta if self.delta else value

    def __repr__(self) -> str:
        return f"ref({self.path!r}){' %+d' % self.delta if self.delta else ''}"


def ref(path: str) -> Ref:
    return Ref(path)


@dataclass
class Topic:
    partitions: int = 1
    configs: dict = field(default_factory=dict)
    # a "held" topic: markers to it cannot be written (its leader is offline in Kafka;
    # MINIKAFKA_FAULT_HOLD_MARKERS in minikafka), so transactions touching it stay Prepare*
    held: bool = False


@dataclass
class Batch:
    """A record batch built at run time (timestamps are the current time)."""
    values: list
    pid: Any = -1
    epoch: Any = -1
    seq: Any = -1
    transactional: bool = False
    keys: list | None = None
    control: str | None = None      # "COMMIT" / "ABORT": a control batch (as a client should never send)
    coordinator_epoch: int = 0
    # per-record timestamps in ms relative to the time the request is built (-3600000: an hour ago);
    # None: every record is stamped now
    timestamps: list | None = None
    # the time ``timestamps`` are relative to, in ms since the epoch (None: when the request is
    # built); a fixed one for timestamp lookups (ListOffsets), whose targets are then fixed too
    base_time: int | None = None
    compression: int = 0            # the codec id (protocol/records.py Compression)
    # the built bytes -> bytes a client should never send (a wrong CRC, a count that does not
    # match the records): a scenario module's helper that names what it breaks
    corrupt: Callable[[bytes], bytes] | None = None


# an ``until`` value: the path is there, whatever its value
PRESENT = "<present>"


@dataclass
class Call:
    api: ApiKey
    version: int
    body: dict
    save: str | None = None
    label: str = ""
    conn: str = "main"
    # resend while any error_code in the response is one of these (a state Kafka leaves on its
    # own, e.g. markers still being written); only the final answer is recorded
    retry_while: tuple = ()
    # poll until every "path" equals its value (a list: any of them); only the final answer is recorded
    until: dict | None = None
    timeout_s: float = 60.0
    # send without waiting for the answer (a JoinGroup or SyncGroup the broker holds until the
    # rebalance moves on); ``collect(save)`` reads and records it later
    defer: bool = False
    # compare this answer's throttle_time_ms (normalize.py drops it elsewhere): a client quota's
    # throttle, where Kafka's formula makes it exact (the first request of a fresh quota sensor)
    throttle: bool = False


@dataclass
class Collect:
    """The answer to the deferred call saved as ``name``, read now (it waits for it)."""
    name: str
    label: str = ""


def collect(name: str, label: str = "") -> Collect:
    return Collect(name, label)


@dataclass
class Subscription:
    """A ConsumerProtocolSubscription v0 (the classic protocol's member metadata) naming
    ``topics``: encoded when the request is built, as its topics are the run's real names."""
    topics: list


@dataclass
class Assignment:
    """A ConsumerProtocolAssignment v0: ``parts`` = [(topic, [partitions]), ...]."""
    parts: list


# Scenarios with these broker settings run with ACLs (StandardAuthorizer) on both brokers, which
# then also serve a SASL_PLAINTEXT listener (PLAIN users alice, bob, carol: SASL_USERS) and
# an SSL listener (server certificate for 127.0.0.1, client certificate requested, principal the
# certificate's CN; certs.py). The plain connection ("main", setup, topic creation) is
# User:ANONYMOUS, a super user; a step with conn="sasl:alice" speaks as User:alice, with
# conn="ssl" as User:ANONYMOUS over TLS without a client certificate (a super user too: what
# ACLs an SSL client without a certificate needs is shown by the scenarios of SECURED_OPEN) and
# with conn="ssl:alice" as User:alice by its client certificate (CN=alice).
SECURED = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
           "super.users": "User:ANONYMOUS", "allow.everyone.if.no.acl.found": "false"}
# The same with no super user one can connect as and allow.everyone.if.no.acl.found=true (so
# that setup, which runs as User:ANONYMOUS, and Kafka's own requests need no ACL): a resource
# with an ACL is then refused to every principal the ACLs do not name, User:ANONYMOUS (the plain
# connection, an SSL client without a certificate) included.
SECURED_OPEN = dict(SECURED, **{"super.users": "User:admin", "allow.everyone.if.no.acl.found": "true"})
# Kafka's default: nobody but User:admin (over SASL PLAIN) may do anything without an ACL. The
# "main" connection (setup, topics, ACLs) is then User:admin over SASL_PLAINTEXT, so the plain
# listener's and an SSL client's User:ANONYMOUS needs ACLs like alice does (runner.open_main).
SECURED_STRICT = dict(SECURED, **{"super.users": "User:admin"})
# Delegation token scenarios (scenarios/delegation_tokens.py): SECURED with a token secret and the
# SCRAM mechanisms a token logs in with on the SASL_PLAINTEXT listener (conn="token:NAME" speaks
# as the owner of the token whose CreateDelegationToken answer was saved as NAME)
_SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
TOKENS_NO_SECRET = dict(SECURED, **{
    "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
    "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": _SCRAM_MODULE,
    "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config": _SCRAM_MODULE})
TOKENS = dict(TOKENS_NO_SECRET, **{"delegation.token.secret.key": "conformance-token-secret"})
SASL_USERS = {"alice": "alice-secret", "bob": "bob-secret", "carol": "carol-secret", "admin": "admin-secret"}
# SSL client certificates: CN=alice is User:alice (the rule), anything else its whole DN
SSL_PRINCIPAL_RULES = "RULE:^CN=([^,]+).*$/$1/,DEFAULT"


# Two log dirs, inside the broker's data dir ({data}: each target's own), for scenarios that move
# partitions between dirs (AlterReplicaLogDirs). Paths normalize to "<log dir dir-a>" etc.
TWO_LOG_DIRS = {"log.dirs": "{data}/dir-a,{data}/dir-b"}


def log_dirs_setting(broker: dict, data_dir) -> str | None:
    """``log.dirs`` of a scenario's broker settings with ``{data}`` made the target's data dir
    (None: the scenario keeps the target's default, one dir)."""
    value = broker.get("log.dirs")
    return None if value is None else value.replace("{data}", str(data_dir))


def sasl_listener_settings(port: int) -> dict:
    """What a secured scenario's broker adds for its SASL_PLAINTEXT listener on ``port``
    (``listeners`` and the protocol map are completed by each target)."""
    users = " ".join(f'user_{u}="{p}"' for u, p in SASL_USERS.items())
    return {"sasl.enabled.mechanisms": "PLAIN",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config":
                f"org.apache.kafka.common.security.plain.PlainLoginModule required {users};"}


def ssl_listener_settings() -> dict:
    """What a secured scenario's broker adds for its SSL listener (PEM files of certs.py)."""
    from .certs import material
    m = material()
    return {"listener.name.ssl.ssl.keystore.type": "PEM",
            "listener.name.ssl.ssl.keystore.location": str(m.server),
            "listener.name.ssl.ssl.truststore.type": "PEM",
            "listener.name.ssl.ssl.truststore.location": str(m.ca),
            "listener.name.ssl.ssl.client.auth": "requested",
            "ssl.principal.mapping.rules": SSL_PRINCIPAL_RULES}


# A named listener (KIP-103): CLIENT, plain text, beside PLAINTEXT, advertised with another host
# (NAMED_HOST). A step with conn="listener:CLIENT" speaks over it; the answers must name CLIENT's
# endpoint there, and PLAINTEXT's on the plain connection.
NAMED_LISTENER = "CLIENT"
NAMED_HOST = "localhost"
NAMED_LISTENERS = {"listener.security.protocol.map":
                   f"PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,{NAMED_LISTENER}:PLAINTEXT"}


def named_listener(broker: dict) -> bool:
    """Whether a scenario's brokers serve the named listener (NAMED_LISTENERS)."""
    return f"{NAMED_LISTENER}:" in broker.get("listener.security.protocol.map", "")


def secured(broker: dict) -> bool:
    return broker.get("authorizer.class.name") == SECURED["authorizer.class.name"]


def admin_only(broker: dict) -> bool:
    """SECURED_STRICT: User:admin is the only super user and nothing is allowed without an ACL."""
    return (secured(broker) and broker.get("super.users") == "User:admin"
            and broker.get("allow.everyone.if.no.acl.found") == "false")


@dataclass
class Repeat:
    """``call`` sent ``times`` times on one connection, pipelined (in chunks, so neither side's
    buffers fill up), each answer read in order; only the last answer is recorded. For long
    runs of one request, such as the InitProducerIds that bring an epoch to exhaustion."""
    call: Call
    times: int
    chunk: int = 500


@dataclass
class TopicId:
    """The topic id of a scenario topic (``"{t}"``), looked up with Metadata when the request
    is built: for the KIP-516 request versions that name topics by id (Produce v13, Fetch v13+)."""
    topic: str


def topic_id(topic: str = "{t}") -> TopicId:
    return TopicId(topic)


@dataclass
class Restart:
    kill: bool = False   # False: clean shutdown (SIGTERM); True: kill -9
    label: str = ""


@dataclass
class Differs:
    """minikafka answers a step differently from Kafka on purpose; ``reason`` is a row of
    DIFFERENCES.md. ``ours`` maps each differing field (the path the failure report prints,
    e.g. ``"responses[0].partition_responses[0].error_code"``) to minikafka's exact answer
    there (a whole subtree if the path is one): the step is still compared field by field. A
    declared answer that is Kafka's own fails too: the difference is gone, delete the declaration."""
    reason: str
    ours: dict


# The finalized features of the cluster a scenario runs on, unless it says otherwise: what
# Kafka finalizes at format time (`kafka-storage.sh format --feature`), minikafka likewise
# (`minikafka format --feature`). transaction.version=1 is the level the first scenarios
# were recorded with; TV2 scenarios declare {"transaction.version": 2}.
DEFAULT_FEATURES = {"transaction.version": 1}
TV2 = {"transaction.version": 2}


@dataclass
class Scenario:
    name: str                      # "area/what/variant": also the golden file's path
    doc: str
    steps: list
    topics: dict = field(default_factory=lambda: {"t": Topic()})
    # broker settings (Kafka's names) for both brokers; scenarios with the same settings share one
    broker: dict = field(default_factory=dict)
    # finalized feature levels at format time (both brokers); part of the sharing key too
    features: dict = field(default_factory=lambda: dict(DEFAULT_FEATURES))
    # a broker (cluster) of its own: for scenarios that change what others would see
    # (finalized features), as a restart does
    alone: bool = False
    # step number -> Differs: where minikafka deliberately answers otherwise (DIFFERENCES.md)
    differs: dict = field(default_factory=dict)

    def __post_init__(self):
        if not re.fullmatch(r"[a-z0-9_]+(/[a-z0-9_]+)+", self.name):
            raise ValueError(f"scenario name {self.name!r}: lower-case words separated by /")

    @property
    def config_key(self) -> tuple:
        """Scenarios with the same key (broker settings and finalized features) share a broker. A scenario that restarts the broker
        gets one of its own: a restart bumps leader and coordinator epochs, which would make
        the answers of the scenarios after it depend on which ran before."""
        key = tuple(sorted(self.broker.items())) + (("<features>", tuple(sorted(self.features.items()))),)
        if self.own_broker:
            key += (("<own broker>", self.name),)
        return key

    @property
    def own_broker(self) -> bool:
        return self.alone or any(isinstance(s, Restart) for s in self.steps)

    @property
    def needs_held(self) -> bool:
        return any(t.held for t in self.topics.values())


# --------------------------------------------------------------------------- requests

def call(api: int, version: int, body: dict, **kw) -> Call:
    return Call(api, version, body, **kw)


def _who(who: str | None, pid, epoch):
    if who is not None:
        return ref(f"{who}.producer_id") if pid is None else pid, ref(f"{who}.producer_epoch") if epoch is None else epoch
    return (-1 if pid is None else pid), (-1 if epoch is None else epoch)


def init_pid(save: str | None = None, txn: str | None = "{tx}", v: int = 4, timeout_ms: int = 60000,
             pid: Any = -1, epoch: Any = -1, **kw) -> Call:
    """InitProducerId; ``txn=None`` for an idempotent producer."""
    return Call(22, v, {"transactional_id": txn, "transaction_timeout_ms": timeout_ms,
                        "producer_id": pid, "producer_epoch": epoch}, save=save, **kw)


def _parts(parts) -> list[tuple[str, int]]:
    """``"{t}"`` -> [("{t}", 0)]; ``[("{t}", 0), ("{u}", 1)]`` as is."""
    if isinstance(parts, str):
        return [(parts, 0)]
    return list(parts)


def _by_topic(parts) -> list[tuple[str, list[int]]]:
    out: dict[str, list[int]] = {}
    for t, p in _parts(parts):
        out.setdefault(t, []).append(p)
    return list(out.items())


def add_partitions(who: str | None, parts="{t}", txn: str = "{tx}", v: int = 3, verify_only: bool = False,
                   pid: Any = None, epoch: Any = None, **kw) -> Call:
    pid, epoch = _who(who, pid, epoch)
    if v <= 3:
        return Call(24, v, {"v3_and_below_transactional_id": txn, "v3_and_below_producer_id": pid,
                            "v3_and_below_producer_epoch": epoch,
                            "v3_and_below_topics": [{"name": t, "partitions": ps} for t, ps in _by_topic(parts)]},
                    **kw)
    return Call(24, v, {"transactions": [{
        "transactional_id": txn, "producer_id": pid, "producer_epoch": epoch, "verify_only": verify_only,
        "topics": [{"name": t, "partitions": ps} for t, ps in _by_topic(parts)]}]}, **kw)


def add_offsets(who: str | None, group: str = "{g}", txn: str = "{tx}", v: int = 3,
                pid: Any = None, epoch: Any = None, **kw) -> Call:
    pid, epoch = _who(who, pid, epoch)
    return Call(25, v, {"transactional_id": txn, "producer_id": pid, "producer_epoch": epoch, "group_id": group}, **kw)


def end_txn(who: str | None, commit: bool = True, txn: str = "{tx}", v: int = 3,
            pid: Any = None, epoch: Any = None, **kw) -> Call:
    pid, epoch = _who(who, pid, epoch)
    return Call(26, v, {"transactional_id": txn, "producer_id": pid, "producer_epoch": epoch, "committed": commit}, **kw)


def txn_offset_commit(who: str | None, offsets: dict, group: str = "{g}", txn: str = "{tx}", v: int = 3,
                      pid: Any = None, epoch: Any = None, generation_id: int = -1, member_id: str = "",
                      **kw) -> Call:
    """``offsets``: {("{t}", 0): 5, ...}"""
    pid, epoch = _who(who, pid, epoch)
    topics: dict[str, list] = {}
    for (t, p), off in offsets.items():
        topics.setdefault(t, []).append({"partition_index": p, "committed_offset": off,
                                         "committed_leader_epoch": -1, "committed_metadata": ""})
    return Call(28, v, {"transactional_id": txn, "group_id": group, "producer_id": pid, "producer_epoch": epoch,
                        "generation_id": generation_id, "member_id": member_id, "group_instance_id": None,
                        "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]}, **kw)


def batch(who: str | None = None, values=("v",), seq: Any = 0, transactional: bool = False,
          pid: Any = None, epoch: Any = None, keys=None, **kw) -> Batch:
    """A batch from the producer whose InitProducerId response was saved as ``who``
    (``who=None``: no producer id, sequence -1 unless given)."""
    if who is None and pid is None:
        seq = -1 if seq == 0 else seq
    pid, epoch = _who(who, pid, epoch)
    if isinstance(values, int):
        values = [f"r{i}" for i in range(values)]
    return Batch(list(values), pid, epoch, seq, transactional, list(keys) if keys is not None else None, **kw)


def produce(records: Batch, topic: str = "{t}", partition: int = 0, txn: str | None = None, acks: int = -1,
            v: int = 9, **kw) -> Call:
    """Produce one batch; v13+ names the topic by id (``topic_id(topic)``, or an id given as ``topic``)."""
    where = {"name": topic} if v < 13 else {"topic_id": topic if not isinstance(topic, str) else topic_id(topic)}
    return Call(0, v, {"transactional_id": txn, "acks": acks, "timeout_ms": 30000,
                       "topic_data": [{**where, "partition_data": [{"index": partition, "records": records}]}]},
                **kw)


def txn_produce(who: str, values=("v",), seq: Any = 0, topic: str = "{t}", partition: int = 0, txn: str = "{tx}",
                v: int = 9, **kw) -> Call:
    return produce(batch(who, values, seq, transactional=True), topic, partition, txn=txn, v=v, **kw)


def fetch(topic: str = "{t}", partition: int = 0, offset: Any = 0, isolation: int = 1, v: int = 12,
          max_bytes: int = 1 << 20, partition_max_bytes: int | None = None, **kw) -> Call:
    """Fetch (read_committed by default) with max_wait 0: answers at once. ``max_bytes`` is
    also the partition's limit unless ``partition_max_bytes`` is given."""
    return fetch_parts([(topic, partition, offset, max_bytes if partition_max_bytes is None else partition_max_bytes)],
                       isolation=isolation, v=v, max_bytes=max_bytes, **kw)


def fetch_parts(parts, isolation: int = 1, v: int = 12, max_bytes: int = 1 << 20, session: Any = 0,
                epoch: Any = -1, forget=(), **kw) -> Call:
    """One Fetch of several partitions, in this order (the order Kafka reads them and spends
    ``max_bytes``): ``parts`` = [(topic, partition, offset, partition_max_bytes), ...], or with
    a fifth item, the current leader epoch; v13+ names topics by id: the topic is then
    ``(name, topic_id)``. Sessionless unless ``session``/``epoch`` say otherwise (KIP-227: epoch 0
    asks for a new session, then the session id with epochs 1, 2, ...); ``forget`` lists
    the session's partitions to drop, as [(topic, partition), ...]."""
    return Call(1, v, {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": max_bytes,
                       "isolation_level": isolation, "session_id": session, "session_epoch": epoch,
                       "topics": _fetch_topics(parts), "forgotten_topics_data": _forgotten(forget),
                       "rack_id": ""}, **kw)


def _fetch_topics(parts) -> list[dict]:
    topics: list[dict] = []
    for topic, partition, offset, pmb, *epoch in parts:
        name, topic_id = topic if isinstance(topic, tuple) else (topic, None)
        if not topics or topics[-1]["topic"] != name or topics[-1].get("topic_id") != topic_id:
            topics.append({"topic": name, "partitions": []} if topic_id is None
                          else {"topic": name, "topic_id": topic_id, "partitions": []})
        topics[-1]["partitions"].append({"partition": partition, "fetch_offset": offset, "partition_max_bytes": pmb,
                                         "current_leader_epoch": epoch[0] if epoch else -1, "log_start_offset": -1})
    return topics


def _forgotten(forget) -> list[dict]:
    out: list[dict] = []
    for topic, partition in forget:
        name, topic_id = topic if isinstance(topic, tuple) else (topic, None)
        if not out or out[-1]["topic"] != name or out[-1].get("topic_id") != topic_id:
            out.append({"topic": name, "partitions": []} if topic_id is None
                       else {"topic": name, "topic_id": topic_id, "partitions": []})
        out[-1]["partitions"].append(partition)
    return out


def list_offsets(topic: str = "{t}", partition: int = 0, timestamp: int = -1, isolation: int = 1, v: int = 7,
                 **kw) -> Call:
    """ListOffsets: timestamp -1 latest, -2 earliest, -3 max timestamp."""
    return Call(2, v, {"replica_id": -1, "isolation_level": isolation,
                       "topics": [{"name": topic, "partitions": [{"partition_index": partition,
                                                                  "timestamp": timestamp,
                                                                  "current_leader_epoch": -1}]}]}, **kw)


def describe_txn(txn: str = "{tx}", **kw) -> Call:
    return Call(65, 0, {"transactional_ids": [txn]}, **kw)


def await_txn(state, txn: str = "{tx}", **kw) -> Call:
    """DescribeTransactions until the state is ``state`` (or one of a list): markers
    are written after EndTxn answers, in Kafka as in minikafka."""
    return describe_txn(txn, until={"transaction_states.0.transaction_state": state}, **kw)


def describe_producers(topic: str = "{t}", partition: int = 0, **kw) -> Call:
    return Call(61, 0, {"topics": [{"name": topic, "partition_indexes": [partition]}]}, **kw)


def write_markers(pid: Any, epoch: Any, commit: bool, coordinator_epoch: int = -1, parts="{t}", v: int = 1,
                  **kw) -> Call:
    return Call(27, v, {"markers": [{"producer_id": pid, "producer_epoch": epoch, "transaction_result": commit,
                                     "topics": [{"name": t, "partition_indexes": ps} for t, ps in _by_topic(parts)],
                                     "coordinator_epoch": coordinator_epoch}]}, **kw)


def delete_records(offset: Any, topic: str = "{t}", partition: int = 0, v: int = 2, **kw) -> Call:
    return Call(21, v, {"topics": [{"name": topic, "partitions": [{"partition_index": partition, "offset": offset}]}],
                        "timeout_ms": 30000}, **kw)


def list_transactions(states=(), pids=(), v: int = 0, **kw) -> Call:
    return Call(66, v, {"state_filters": list(states), "producer_id_filters": list(pids),
                        "duration_filter": -1}, **kw)


def offset_fetch(group: str = "{g}", parts="{t}", require_stable: bool = True, v: int = 7, **kw) -> Call:
    return Call(9, v, {"group_id": group, "require_stable": require_stable,
                       "topics": [{"name": t, "partition_indexes": ps} for t, ps in _by_topic(parts)]}, **kw)


def restart(kill: bool = False, label: str = "") -> Restart:
    return Restart(kill, label)


def repeat(step: Call, times: int) -> Repeat:
    return Repeat(step, times)


# --------------------------------------------------------------------------- partition-side helpers

def idem_produce(who: str | None, values=("v",), seq: Any = 0, topic: str = "{t}", partition: int = 0,
                 v: int = 9, pid: Any = None, epoch: Any = None, keys=None, timestamps=None, **kw) -> Call:
    """Produce one non-transactional batch from the producer saved as ``who`` (idempotent when it has
    a producer id)."""
    return produce(batch(who, values, seq, pid=pid, epoch=epoch, keys=keys, timestamps=timestamps),
                   topic, partition, v=v, **kw)


def produce_parts(entries, txn: str | None = None, acks: int = -1, v: int = 9, **kw) -> Call:
    """One Produce request with several partitions: ``entries`` = [(topic, partition, Batch), ...]."""
    by_topic: dict[str, list] = {}
    for t, p, b in entries:
        by_topic.setdefault(t, []).append({"index": p, "records": b})
    return Call(0, v, {"transactional_id": txn, "acks": acks, "timeout_ms": 30000,
                       "topic_data": [{"name": t, "partition_data": ps} for t, ps in by_topic.items()]}, **kw)


def await_no_producers(topic: str = "{t}", partition: int = 0, **kw) -> Call:
    """DescribeProducers until the partition lists no active producer (producer-id expiry)."""
    return describe_producers(topic, partition, until={"topics.0.partitions.0.active_producers.0": "<absent>"}, **kw)


def await_log_start(offset: int, topic: str = "{t}", partition: int = 0, **kw) -> Call:
    """ListOffsets(earliest) until the log start offset is ``offset`` (retention is periodic)."""
    return list_offsets(topic, partition, timestamp=-2, isolation=0,
                        until={"topics.0.partitions.0.offset": offset}, **kw)


# ------------------------------------------------------------ waits for the coordinator's states

SETTLED_STATES = ["Empty", "Ongoing", "CompleteCommit", "CompleteAbort"]


def await_settled(txn: str = "{tx}", **kw) -> Call:
    """DescribeTransactions until the state is not PrepareCommit/PrepareAbort: whatever the
    last request set off (markers, an epoch fence's abort) has finished. Only for
    transactions without held partitions, whose Prepare* states pass on their own."""
    return await_txn(SETTLED_STATES, txn, **kw)


def await_gone(txn: str = "{tx}", **kw) -> Call:
    """DescribeTransactions until TRANSACTIONAL_ID_NOT_FOUND (105): the coordinator has
    expired the id (Dead, then removed; transactional.id.expiration.ms)."""
    return describe_txn(txn, until={"transaction_states.0.error_code": 105}, **kw)
