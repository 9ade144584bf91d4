"""Run a scenario against a broker (the reference Kafka or minikafka) and return its
normalized transcript: one entry per step with the request sent and the answer.

A target is anything with ``bootstrap`` (host:port), ``restart(kill)``, ``held_prefix``
(the topic-name prefix of held topics), ``creates_held_topics_itself`` and ``listeners``
(listener name -> host:port, for every endpoint an answer may name).

Every answer is decoded to its last byte: bytes left after the last field are kept
(``trailing_bytes``) and differ from Kafka's answer, which has none.
"""
from __future__ import annotations

import re
import struct
import time
import uuid

from minikafka.admin.wire import WireClient
from minikafka.coordinator.hashing import partition_for
from minikafka.protocol import records as rec
from minikafka.protocol import schema
from minikafka.protocol.schema import API_NAMES

from .dsl import PRESENT, Assignment, Batch, Call, Collect, Ref, Repeat, Restart, Scenario, Subscription, TopicId
from .normalize import TRAILING, Normalizer, canonical, canonical_add_partitions, group_partitions, own_entries

# Brokers whose plain listener is no super user (dsl.SECURED_STRICT): plain bootstrap -> the
# SASL_PLAINTEXT bootstrap where setup and the "main" connection log in as User:admin
ADMIN_LOGIN: dict[str, str] = {}


def open_main(bootstrap: str, timeout: float = 10.0, client_id: str = "minikafka-tools") -> WireClient:
    """The connection for setup and for steps without conn=: plain (User:ANONYMOUS), or
    User:admin over SASL PLAIN where the plain listener is no super user."""
    sasl = ADMIN_LOGIN.get(bootstrap)
    if sasl is None:
        return WireClient.to(bootstrap, timeout=timeout, client_id=client_id)
    from minikafka.admin.wire import connect
    from .dsl import SASL_USERS
    return connect(sasl, {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                          "sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule required "
                                              f'username="admin" password="{SASL_USERS["admin"]}";'},
                   timeout=timeout, client_id=client_id)


# APIs whose ``until`` conditions look at the answer as it is compared, not as it came
POLLED_COMPARED = {"ApiVersions", "DescribeDelegationToken", "DescribeClientQuotas"}
COORDINATOR_LOADING = {14, 15, 16}  # COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR
# "{t}", or "{t:_}": the real name of {t} with every '.' made '_' (a name that collides with
# it in Kafka's metric names, which Kafka refuses to create beside it)
_PLACEHOLDER = re.compile(r"\{([a-z][a-z0-9_]*)(:_)?\}")


class ScenarioError(AssertionError):
    pass


def error_codes(obj):
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k.endswith("error_code") and isinstance(v, int):
                yield v
            else:
                yield from error_codes(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from error_codes(v)


def lookup(obj, path: str):
    parts = path.split(".")
    while parts:
        p = parts.pop(0)
        if isinstance(obj, list):
            obj = obj[int(p)]
            continue
        # a key with dots in it (a feature's name in an ApiVersions answer: "transaction.version")
        while p not in obj and parts:
            p += "." + parts.pop(0)
        obj = obj[p]
    return obj


def decode_exact(api_key: int, version: int, frame: bytes):
    """A response frame decoded; bytes after its last field are kept in the answer under
    ``trailing_bytes`` (a broker that appends them, or encodes another version, differs)."""
    _, body, end = schema.decode_response_end(api_key, version, frame)
    if end < len(frame):
        body[TRAILING] = bytes(frame[end:])
    return body


def exchange(conn: WireClient, api_key: int, version: int, body: dict):
    return receive(conn, api_key, version, conn.send(api_key, version, body))


def receive(conn: WireClient, api_key: int, version: int, corr: int):
    frame = conn.recv_frame()
    if frame is None:
        raise ConnectionError("broker closed the connection")
    got = struct.unpack_from(">i", frame, 0)[0]
    if got != corr:
        raise ScenarioError(f"correlation id {got} in the answer to request {corr}")
    return decode_exact(api_key, version, frame)


def _poll(fn, what: str, timeout: float = 120, interval: float = 0.1):
    deadline = time.monotonic() + timeout
    while True:
        value = fn()
        if value:
            return value
        if time.monotonic() > deadline:
            raise ScenarioError(f"{what}: not reached within {timeout:.0f} s")
        time.sleep(interval)


# ------------------------------------------------------------------ broker readiness

def _metadata(c: WireClient, topics):
    return c.request(3, 9, {"topics": None if topics is None else [{"name": t} for t in topics],
                            "allow_auto_topic_creation": False, "include_topic_authorized_operations": False})


def warm_up(bootstrap: str, timeout: float = 180) -> None:
    """Wait until both coordinators answer for every partition of their internal topics
    (Kafka creates and loads them on the first FindCoordinator; after a restart it
    reloads them). Creates no transactional or group state."""
    with open_main(bootstrap) as c:
        for key_type in (0, 1):
            _poll(lambda: c.request(10, 4, {"key_type": key_type, "coordinator_keys": ["warm-up"]})
                  .coordinators[0].error_code == 0, f"FindCoordinator(key_type={key_type})", timeout)
        txn_ids = _one_key_per_partition("warm-up-txn", 50)
        _poll(lambda: all(s.error_code not in COORDINATOR_LOADING for s in
                          c.request(65, 0, {"transactional_ids": txn_ids}).transaction_states),
              "transaction coordinator loaded", timeout)
        # Kafka may still answer COORDINATOR_LOAD_IN_PROGRESS to a first InitProducerId when
        # DescribeTransactions already answers: wait until every state partition takes one
        _poll(lambda: all(c.request(22, 4, {"transactional_id": t, "transaction_timeout_ms": 60000,
                                            "producer_id": -1, "producer_epoch": -1}).error_code == 0
                          for t in txn_ids), "transaction coordinator serves InitProducerId", timeout)
        groups = _one_key_per_partition("warm-up-group", 50)
        _poll(lambda: all(g.error_code not in COORDINATOR_LOADING for g in
                          c.request(15, 5, {"groups": groups, "include_authorized_operations": False}).groups),
              "group coordinator loaded", timeout)


def _one_key_per_partition(prefix: str, n: int) -> list[str]:
    keys: dict[int, str] = {}
    i = 0
    while len(keys) < n:
        k = f"{prefix}-{i}"
        keys.setdefault(partition_for(k, n), k)
        i += 1
    return [keys[p] for p in range(n)]


def create_topic(bootstrap: str, name: str, partitions: int, configs: dict, broker_ids: list[int] | None = None,
                 leader_bootstrap: str | None = None):
    body = {"topics": [{"name": name, "num_partitions": partitions, "replication_factor": 1, "assignments": [],
                        "configs": [{"name": k, "value": str(v)} for k, v in configs.items()]}],
            "timeout_ms": 30000, "validate_only": False}
    if broker_ids:
        body["topics"][0].update(num_partitions=-1, replication_factor=-1, assignments=[
            {"partition_index": p, "broker_ids": broker_ids} for p in range(partitions)])
    with open_main(bootstrap) as c:
        t = c.request(19, 5, body).topics[0]
        if t.error_code != 0:
            raise ScenarioError(f"CreateTopics {name}: error {t.error_code} {t.error_message}")

        def ready():
            # Kafka lists a leader before the partition serves requests: ask the partition itself
            m = _metadata(c, [name]).topics[0]
            if m.error_code != 0 or len(m.partitions) != partitions or any(p.leader_id < 0 for p in m.partitions):
                return False
            with open_main(leader_bootstrap or bootstrap) as leader:
                lo = leader.request(2, 7, {"replica_id": -1, "isolation_level": 0, "topics": [{"name": name, "partitions": [
                    {"partition_index": p, "timestamp": -1, "current_leader_epoch": -1}
                    for p in range(partitions)]}]})
            return all(p.error_code == 0 for p in lo.topics[0].partitions)
        _poll(ready, f"topic {name} is served")


# ------------------------------------------------------------------ running a scenario

def real_names(scenario: Scenario, token: str, held_prefix: str) -> dict[str, str]:
    """placeholder -> real name, for every ``{word}`` (and ``{word:_}``) the scenario uses."""
    words = set(scenario.topics)
    _collect(scenario.steps, words)
    underscored = {w[:-2] for w in words if w.endswith(":_")}
    words = {w for w in words if not w.endswith(":_")} | underscored
    slug = scenario.name.replace("/", ".").replace("_", "-")
    names = {}
    for w in sorted(words):
        real = f"{slug}.{w.replace('_', '-')}.{token}"
        if w in scenario.topics and scenario.topics[w].held:
            real = held_prefix + real
        names["{" + w + "}"] = real
        if w in underscored:
            names["{" + w + ":_}"] = real.replace(".", "_")
    return names


def _collect(obj, words: set) -> None:
    if isinstance(obj, str):
        words.update(w + suffix for w, suffix in _PLACEHOLDER.findall(obj))
    elif isinstance(obj, dict):
        for v in obj.values():
            _collect(v, words)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            _collect(v, words)
    elif isinstance(obj, (Call, Batch, Repeat, TopicId, Subscription, Assignment)):
        _collect(vars(obj), words)


def _uses_api(steps, api: int) -> bool:
    return any(isinstance(c, Call) and c.api == api for step in steps for c in (step, getattr(step, "call", None)))


def await_group_coordinator(bootstrap: str, topics: dict[str, int], timeout: float = 120) -> None:
    """Wait until Kafka's group coordinator assigns every partition of ``topics``. It learns of a
    new topic from the metadata image after the partitions serve requests (under load, seconds
    later), and a KIP-848 member joining before then is assigned nothing: a probe group's member
    (not the scenario's group) heartbeats until it owns them all, then leaves."""
    group, member = f"conformance-probe-{uuid.uuid4().hex[:8]}", uuid.uuid4().hex[:22]
    want = sum(topics.values())
    body = {"group_id": group, "member_id": member, "member_epoch": 0, "instance_id": None, "rack_id": None,
            "rebalance_timeout_ms": 30000, "subscribed_topic_names": sorted(topics), "subscribed_topic_regex": None,
            "server_assignor": None, "topic_partitions": []}
    deadline = time.monotonic() + timeout
    with open_main(bootstrap) as c:
        while True:
            r = exchange(c, 68, 1, body)
            if r.error_code not in (0, 14, 15, 16):
                return  # KIP-848 groups off (UNSUPPORTED_VERSION), not allowed, ...: nothing to wait for
            if r.error_code == 0:
                owned = r.assignment.topic_partitions if r.assignment is not None else None
                if owned is not None:
                    body["topic_partitions"] = [{"topic_id": t.topic_id, "partitions": list(t.partitions)}
                                                for t in owned]
                body["member_epoch"] = r.member_epoch
                if sum(len(t["partitions"]) for t in body["topic_partitions"]) == want:
                    exchange(c, 68, 1, dict(body, member_epoch=-1))
                    return
            if time.monotonic() > deadline:
                raise ScenarioError(f"Kafka's group coordinator did not assign {sorted(topics)} within {timeout:.0f} s")
            time.sleep(0.1)


class Run:
    def __init__(self, scenario: Scenario, target, token: str | None = None):
        self.scenario = scenario
        self.target = target
        self.names = real_names(scenario, token or uuid.uuid4().hex[:8], target.held_prefix)
        self.norm = Normalizer(self.names, getattr(target, "listeners", None))
        self.saved: dict = {}
        self.conns: dict[str, WireClient] = {}
        self.transcript: list[dict] = []   # so far (for a report when a step fails)
        self.deferred: dict[str, tuple] = {}  # save name -> (call, request, correlation id)

    def real(self, placeholder_word: str) -> str:
        return self.names["{" + placeholder_word + "}"]

    # -- value resolution --
    def resolve(self, obj):
        if isinstance(obj, Ref):
            return obj.resolve(self.saved)
        if isinstance(obj, str):
            return _PLACEHOLDER.sub(lambda m: self.names[m.group(0)], obj)
        if isinstance(obj, Batch):
            return self.build_batch(obj)
        if isinstance(obj, TopicId):
            return self.topic_id(self.resolve(obj.topic))
        if isinstance(obj, Subscription):
            return _subscription(self.resolve(obj.topics))
        if isinstance(obj, Assignment):
            return _assignment(self.resolve(obj.parts))
        if isinstance(obj, dict):
            return {k: self.resolve(v) for k, v in obj.items()}
        if isinstance(obj, (list, tuple)):
            return [self.resolve(v) for v in obj]
        return obj

    def build_batch(self, b: Batch) -> bytes:
        pid, epoch, seq = self.resolve(b.pid), self.resolve(b.epoch), self.resolve(b.seq)
        now = int(time.time() * 1000) if b.base_time is None else b.base_time
        if b.control:
            return rec.build_control_batch(pid, epoch, b.control == "COMMIT", b.coordinator_epoch, now)
        stamps = [now + d for d in b.timestamps] if b.timestamps is not None else [now] * len(b.values)
        records = [rec.Record(i, stamps[i], None if b.keys is None or b.keys[i] is None else self.resolve(b.keys[i]).encode(),
                              None if v is None else self.resolve(v).encode(), ())
                   for i, v in enumerate(b.values)]
        built = rec.build_batch(records, producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                                is_transactional=b.transactional, compression=b.compression)
        return built if b.corrupt is None else b.corrupt(built)

    def topic_id(self, name: str):
        with open_main(self.target.bootstrap) as c:   # Metadata v10+ carries topic ids
            t = c.request(3, 12, {"topics": [{"name": name}], "allow_auto_topic_creation": False,
                                  "include_topic_authorized_operations": False}).topics[0]
        if t.error_code != 0:
            raise ScenarioError(f"topic id of {name}: Metadata error {t.error_code}")
        if t.topic_id.int == 0:
            raise ScenarioError(f"topic id of {name}: Metadata answered no id")
        self.norm.topic_names[t.topic_id] = name
        return t.topic_id

    # -- connections --
    def conn(self, name: str) -> WireClient:
        c = self.conns.get(name)
        if c is None:
            if name.startswith("sasl:"):  # a principal of a secured scenario (dsl.SECURED)
                from minikafka.admin.wire import connect
                from .dsl import SASL_USERS
                user = name[len("sasl:"):]
                c = self.conns[name] = connect(self.target.sasl_bootstrap, {
                    "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                    "sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule required "
                                        f'username="{user}" password="{SASL_USERS[user]}";'},
                    timeout=60, client_id="conformance")
            elif name.startswith(("token:", "token-sha512:")):
                # SCRAM with a delegation token (tokenauth=true): the token saved as NAME
                kind, _, saved = name.partition(":")
                c = self.conns[name] = self.token_login(self.saved[saved], "SCRAM-SHA-512" if kind == "token-sha512"
                                                        else "SCRAM-SHA-256")
            elif name.startswith("sasl-raw"):   # the SASL listener, not logged in: a step sends the SASL requests itself
                c = self.conns[name] = WireClient.to(self.target.sasl_bootstrap, timeout=60, client_id="conformance")
            elif name.startswith("listener:"):   # a named listener's (dsl.NAMED_LISTENERS), plain text
                address = (getattr(self.target, "listeners", None) or {}).get(name[len("listener:"):])
                if not address:
                    raise ScenarioError(f"connection {name!r}: the broker has no such listener")
                c = self.conns[name] = WireClient.to(address, timeout=60, client_id="conformance")
            elif name.startswith("client:"):   # the plain listener with client id NAME (a quota's entity)
                c = self.conns[name] = WireClient.to(self.target.bootstrap, timeout=60,
                                                     client_id=self.resolve(name[len("client:"):]))
            elif name == "plain":   # the plain listener whatever "main" is: User:ANONYMOUS
                c = self.conns[name] = WireClient.to(self.target.bootstrap, timeout=60, client_id="conformance")
            elif name == "ssl" or name.startswith("ssl:"):
                # TLS, without a client certificate ("ssl": User:ANONYMOUS) or with one ("ssl:alice",
                # subject CN=alice: User:alice); certs.py
                from minikafka.admin.wire import connect
                from .certs import material
                props = {"security.protocol": "SSL", "ssl.truststore.location": str(material().ca)}
                if name.startswith("ssl:"):
                    user = name[len("ssl:"):]
                    if user != "alice":
                        raise ScenarioError(f"connection {name!r}: certs.py makes a client certificate for alice only")
                    props["ssl.keystore.location"] = str(material().alice)
                c = self.conns[name] = connect(self.target.ssl_bootstrap, props, timeout=60, client_id="conformance")
            else:
                c = self.conns[name] = open_main(self.target.bootstrap, timeout=60, client_id="conformance")
        return c

    def token_login(self, token, mechanism: str, timeout: float = 30) -> WireClient:
        """A connection logged in with a delegation token. Kafka's brokers learn of a new token
        from the metadata log a moment after CreateDelegationToken answers: retried until then."""
        import base64
        from minikafka.admin.wire import connect
        props = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": mechanism,
                 "sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule required "
                                     f'username="{token.token_id}" password="{base64.b64encode(token.hmac).decode()}" '
                                     'tokenauth="true";'}
        deadline = time.monotonic() + timeout
        while True:
            try:
                return connect(self.target.sasl_bootstrap, props, timeout=60, client_id="conformance")
            except ConnectionError as e:
                if time.monotonic() > deadline:
                    raise ScenarioError(f"token login with {token.token_id}: {e}") from None
                time.sleep(0.1)

    def close(self) -> None:
        for c in self.conns.values():
            c.close()
        self.conns.clear()

    # -- the scenario --
    def setup(self) -> None:
        for word, t in self.scenario.topics.items():
            if t.held and self.target.creates_held_topics_itself:
                continue
            create_topic(self.target.bootstrap, self.real(word), t.partitions, t.configs)
        if getattr(self.target, "group_coordinator_lags", False) and _uses_api(self.scenario.steps, 68):
            served = {self.real(w): t.partitions for w, t in self.scenario.topics.items() if not t.held}
            if served:
                await_group_coordinator(self.target.bootstrap, served)

    def run(self) -> list[dict]:
        transcript = self.transcript = []
        try:
            self.setup()
            for i, step in enumerate(self.scenario.steps, 1):
                if isinstance(step, Restart):
                    self.close()
                    self.target.restart(step.kill)
                    warm_up(self.target.bootstrap)
                    transcript.append({"step": i, "restart": "kill -9" if step.kill else "clean"})
                    continue
                if isinstance(step, Repeat):
                    transcript.append(self.repeat(i, step))
                    continue
                if isinstance(step, Collect):
                    transcript.append(self.collect(i, step))
                    continue
                transcript.append(self.call(i, step))
        finally:
            self.close()
        return transcript

    def call(self, i: int, step: Call) -> dict:
        body = self.resolve(step.body)
        request = {"api": API_NAMES[step.api], "version": step.version, "body": self.norm(body)}
        if step.defer:
            if not step.save:
                raise ScenarioError(f"step {i}: a deferred call needs save= (the name collect() reads)")
            self.deferred[step.save] = (step, request, self.conn(step.conn).send(step.api, step.version, body))
            entry = {"step": i, "request": request, "response": {"deferred": True}}
            if step.label:
                entry["label"] = step.label
            return entry
        deadline = time.monotonic() + step.timeout_s
        while True:
            try:
                conn = self.conn(step.conn)
                # a Call with exchange(conn, body) sends what no schema can encode (a scenario module's)
                resp = (step.exchange(conn, body) if hasattr(step, "exchange")
                        else exchange(conn, step.api, step.version, body))
            except ConnectionError:
                self.conns.pop(step.conn).close()
                resp = None
            if resp is None:
                answer = {"connection_closed": True}
                break
            codes = set(error_codes(resp))
            # Kafka answers these while a coordinator partition loads or a producer id block is
            # fetched from the controller; minikafka never does (a step that gets one from
            # minikafka fails at its deadline)
            waiting = bool(codes & (set(step.retry_while) | COORDINATOR_LOADING))
            if step.until is not None and not waiting:
                seen = resp
                if request["api"] in POLLED_COMPARED:
                    # polled in the compared form: ApiVersions' served features only; this scenario's
                    # own entries of a broker-wide listing, in a fixed order (names as placeholders)
                    own_entries(request["api"], resp, set(self.names.values()), request, set(self.norm.tokens))
                    seen = canonical(request["api"], self.norm(resp))
                waiting = not all(_matches(_safe_lookup(seen, p), want) for p, want in step.until.items())
            if not waiting:
                answer = resp
                break
            if time.monotonic() > deadline:
                raise ScenarioError(f"step {i} ({step.label or request['api']}): condition "
                                    f"{step.until or step.retry_while} not reached within {step.timeout_s:.0f} s; "
                                    f"last answer {self.norm(resp)}")
            time.sleep(0.05)
        if step.save and resp is not None:
            self.saved[step.save] = resp
        if resp is not None:
            own_entries(request["api"], answer, set(self.names.values()), request, set(self.norm.tokens))
        normalized = self.norm.response(request["api"], body, answer, i)
        response = canonical_add_partitions(request["api"], canonical(request["api"], normalized))
        entry = {"step": i, "request": request, "response": group_partitions(request["api"], response, self.names)}
        if step.throttle and isinstance(answer, dict) and "throttle_time_ms" in answer:
            entry["response"]["throttle_time_ms"] = answer["throttle_time_ms"]
        if step.label:
            entry["label"] = step.label
        return entry


    def collect(self, i: int, step: Collect) -> dict:
        """Read the answer to a deferred call; recorded as this step's answer."""
        call, sent, corr = self.deferred.pop(step.name)
        resp = receive(self.conn(call.conn), call.api, call.version, corr)
        self.saved[step.name] = resp
        request = {"api": sent["api"], "version": sent["version"], "collect": step.name}
        entry = {"step": i, "request": request, "response": canonical(request["api"], self.norm(resp))}
        if step.label:
            entry["label"] = step.label
        return entry

    def repeat(self, i: int, step: Repeat) -> dict:
        """Send the call ``times`` times, pipelined; record the last answer (and, in the request,
        how many times it was sent). Every answer must carry the same error code as the first:
        a run of requests is meant to be uniform."""
        call = step.call
        body = self.resolve(call.body)
        conn = self.conn(call.conn)
        last = None
        codes: set = set()
        left = step.times
        while left:
            n = min(step.chunk, left)
            corrs = [conn.send(call.api, call.version, body) for _ in range(n)]
            for corr in corrs:
                last = receive(conn, call.api, call.version, corr)
                codes.add(tuple(error_codes(last)))
            left -= n
        if len(codes) > 1:
            raise ScenarioError(f"step {i}: the repeated {API_NAMES[call.api]} got different answers: {sorted(codes)}")
        if call.save:
            self.saved[call.save] = last
        request = {"api": API_NAMES[call.api], "version": call.version, "body": self.norm(body), "times": step.times}
        entry = {"step": i, "request": request,
                 "response": canonical(request["api"], self.norm.response(request["api"], body, last, i))}
        if call.label:
            entry["label"] = call.label
        return entry


def _string(s: str) -> bytes:
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def _subscription(topics) -> bytes:
    """ConsumerProtocolSubscription v0: version, topics, user data (null)."""
    return (struct.pack(">hi", 0, len(topics)) + b"".join(_string(t) for t in topics) + struct.pack(">i", -1))


def _assignment(parts) -> bytes:
    """ConsumerProtocolAssignment v0: version, [topic, partitions], user data (null)."""
    out = struct.pack(">hi", 0, len(parts))
    for topic, partitions in parts:
        out += _string(topic) + struct.pack(f">i{len(partitions)}i", len(partitions), *partitions)
    return out + struct.pack(">i", -1)


def _safe_lookup(obj, path):
    try:
        return lookup(obj, path)
    except (KeyError, IndexError, TypeError, ValueError):
        return "<absent>"


def _matches(value, want) -> bool:
    if want == PRESENT:
        return value != "<absent>"
    return value in want if isinstance(want, list) else value == want
