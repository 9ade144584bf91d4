"""Client quotas as Kafka enforces them (KIP-13, KIP-55, KIP-124, KIP-612).

Kafka's pieces, under their names:

* `Rate`: the sampled rate of Kafka's metrics (``Rate`` over a ``WindowedSum``):
  ``quota.window.num`` samples of ``quota.window.size.seconds`` each; a value over the
  bound is a violation whose throttle time is the time the rate needs to come back to
  the bound (``QuotaUtils.throttleTime``).
* `ClientQuotaManager`: one per quota type (produce and fetch bytes, request time):
  the quota overrides of user, client-id and (user, client-id) entities with their
  defaults, the most specific one matching a connection's principal and client id
  (Kafka's ``DefaultQuotaCallback``), one rate per matched entity (clients of one user
  under a user quota share it).
* `ClientRequestQuotaManager`: ``request_percentage``, the handler time in percent of one
  thread, its throttle bounded by one quota window.
* `ConnectionQuotas`: ``connection_creation_rate`` per client address (ip entities).

A throttled request is answered at once with ``throttle_time_ms``; then the connection is
muted (nothing more is read from it) for that time, as Kafka's channel muting
(broker/server.py). Until some quota of a type is set, that type records nothing (Kafka's
``quotasEnabled``): the cost without quotas is one attribute check a request.
"""
from __future__ import annotations

import logging
import math
import socket
from time import monotonic, perf_counter

import trio

log = logging.getLogger("minikafka.quotas")

# ClientQuotaEntity types and the quota keys each combination takes (Kafka's QuotaConfig)
USER, CLIENT_ID, IP = "user", "client-id", "ip"
PRODUCER_BYTE_RATE, CONSUMER_BYTE_RATE = "producer_byte_rate", "consumer_byte_rate"
REQUEST_PERCENTAGE, CONTROLLER_MUTATION_RATE = "request_percentage", "controller_mutation_rate"
CONNECTION_CREATION_RATE = "connection_creation_rate"
USER_AND_CLIENT_KEYS = {PRODUCER_BYTE_RATE: "LONG", CONSUMER_BYTE_RATE: "LONG", REQUEST_PERCENTAGE: "DOUBLE",
                        CONTROLLER_MUTATION_RATE: "DOUBLE"}
IP_KEYS = {CONNECTION_CREATION_RATE: "INT"}

DEFAULT = "<default>"  # the default entity of a type (Kafka's ZooKeeperInternals.DEFAULT_STRING)
INACTIVE_SENSOR_EXPIRATION_MS = 3600_000  # Kafka drops a client's rate after an hour unused


def quota_now_ms() -> int:
    """The clock quotas are measured by (monotonic: a wall clock step changes no rate)."""
    return int(monotonic() * 1000)


class Rate:
    """Kafka's Rate over a WindowedSum (SampledStat): ``num`` samples of ``window_ms``; the rate is
    the samples' sum over the time they span, counted as at least ``num - 1`` whole windows."""

    __slots__ = ("num", "window_ms", "samples", "current", "last_used")

    def __init__(self, num: int, window_ms: int):
        self.num, self.window_ms = num, window_ms
        self.samples: list[list] = []   # [value, start_ms, last_event_ms]
        self.current = 0
        self.last_used = 0

    def record(self, value: float, now: int) -> None:
        self.last_used = now
        if not self.samples:
            self.samples.append([0.0, now, now])
        sample = self.samples[self.current]
        if now - sample[1] >= self.window_ms:
            # the current sample is complete: the next one (one more than num, Kafka's
            # placeholder for the sample overlapping the window's start)
            self.current = (self.current + 1) % (self.num + 1)
            if self.current >= len(self.samples):
                sample = [0.0, now, now]
                self.samples.append(sample)
            else:
                sample = self.samples[self.current]
                sample[0], sample[1], sample[2] = 0.0, now, now
        sample[0] += value
        sample[2] = now

    def _purge(self, now: int) -> None:
        expire = self.num * self.window_ms
        for s in self.samples:
            if now - s[2] >= expire:
                s[0], s[1], s[2] = 0.0, now, now

    def window_size(self, now: int) -> int:
        self._purge(now)
        if not self.samples:
            self.samples.append([0.0, now, now])
        elapsed = now - min(s[1] for s in self.samples)
        full = elapsed // self.window_ms
        if full < self.num - 1:
            elapsed += (self.num - 1 - full) * self.window_ms
        return max(elapsed, 1)

    def measure(self, now: int) -> float:
        """Per second."""
        self._purge(now)
        total = sum(s[0] for s in self.samples)
        return total / (self.window_size(now) / 1000.0)

    def throttle_ms(self, bound: float, now: int, max_ms: int | None = None) -> int:
        """0 within the bound, else Kafka's throttle time: (rate - bound) / bound of the window."""
        value = self.measure(now)
        if value <= bound:
            return 0
        ms = round((value - bound) / bound * self.window_size(now))
        return ms if max_ms is None else min(ms, max_ms)


def user_name(principal: str) -> str:
    """The name a user entity matches: the principal's name ("User:alice" -> "alice")."""
    return principal.partition(":")[2]


# which levels have quotas (Kafka's QuotaTypes): the metric tags then need no lookups
_CLIENT_ID, _USER, _USER_CLIENT_ID = 1, 2, 4


class ClientQuotaManager:
    """One quota type's overrides and the rates of the clients they hold (Kafka's
    ClientQuotaManager with its DefaultQuotaCallback). Entities are (user, client id), each
    a name, DEFAULT or None (not part of the entity)."""

    def __init__(self, kind: str, num_samples: int, window_s: int):
        self.kind = kind
        self.num_samples, self.window_ms = num_samples, window_s * 1000
        self.overrides: dict[tuple, float] = {}
        self.levels = 0  # bits of the levels ever given a quota (until restart, as Kafka's)
        self.sensors: dict[tuple[str, str], Rate] = {}

    @property
    def enabled(self) -> bool:
        return self.levels != 0

    def update(self, user, client_id, value: float | None) -> None:
        if user is not None:
            self.levels |= _USER_CLIENT_ID if client_id is not None else _USER
        elif client_id is not None:
            self.levels |= _CLIENT_ID
        if value is None:
            self.overrides.pop((user, client_id), None)
        else:
            self.overrides[(user, client_id)] = value

    def tags(self, user: str, client_id: str) -> tuple[str, str]:
        """The (user, client id) a client's usage is counted under: the most specific entity
        with a quota; "" for a level not part of it (Kafka's quotaMetricTags)."""
        levels = self.levels
        if levels in (0, _CLIENT_ID):
            return "", client_id
        if levels == _USER:
            return user, ""
        if levels == _USER_CLIENT_ID:
            return user, client_id
        o = self.overrides
        if (user, client_id) in o or (user, DEFAULT) in o:
            return user, client_id
        if (user, None) in o:
            return user, ""
        if (DEFAULT, client_id) in o or (DEFAULT, DEFAULT) in o:
            return user, client_id
        if (DEFAULT, None) in o:
            return user, ""
        return "", client_id

    def limit(self, tags: tuple[str, str]) -> float | None:
        """The quota of the client counted under ``tags``, None: unlimited."""
        user, client_id = tags
        o = self.overrides
        if user and client_id:
            for key in ((user, client_id), (user, DEFAULT), (DEFAULT, client_id), (DEFAULT, DEFAULT)):
                if key in o:
                    return o[key]
        elif user:
            return o.get((user, None), o.get((DEFAULT, None)))
        elif client_id:
            return o.get((None, client_id), o.get((None, DEFAULT)))
        return None

    def _sensor(self, tags) -> Rate:
        s = self.sensors.get(tags)
        if s is None:
            s = self.sensors[tags] = Rate(self.num_samples, self.window_ms)
        return s

    def _max_throttle_ms(self) -> int | None:
        return None

    def record(self, principal: str, client_id: str, value: float, now: int) -> int:
        """Count ``value`` for the client; the throttle time in ms (0: within its quota)."""
        tags = self.tags(user_name(principal), client_id or "")
        sensor = self._sensor(tags)
        sensor.record(value, now)
        bound = self.limit(tags)
        if bound is None:
            return 0
        return sensor.throttle_ms(bound, now, self._max_throttle_ms())

    def record_no_throttle(self, principal: str, client_id: str, value: float, now: int) -> None:
        self._sensor(self.tags(user_name(principal), client_id or "")).record(value, now)

    def unrecord(self, principal: str, client_id: str, value: float, now: int) -> None:
        """Take back what a throttled fetch recorded (its answer carries no records)."""
        self.record_no_throttle(principal, client_id, -value, now)

    def max_value_in_window(self, principal: str, client_id: str) -> float | None:
        """The most one request may bring without certain throttling (Kafka caps a consumer's
        fetch max_bytes with it); None: no quota."""
        if not self.enabled:
            return None
        bound = self.limit(self.tags(user_name(principal), client_id or ""))
        if bound is None:
            return None
        return bound * (self.num_samples - 1) * self.window_ms / 1000

    def expire(self, now: int) -> None:
        for tags in [t for t, s in self.sensors.items() if now - s.last_used >= INACTIVE_SENSOR_EXPIRATION_MS]:
            del self.sensors[tags]


class ClientRequestQuotaManager(ClientQuotaManager):
    """``request_percentage``: the time the broker spends on a client's requests, in percent of
    one thread (Kafka's ClientRequestQuotaManager); a throttle is at most one quota window."""

    NANOS_TO_PERCENT = 100.0 / 1e9

    def _max_throttle_ms(self) -> int:
        return self.window_ms


class ConnectionQuotas:
    """``connection_creation_rate`` of ip entities (Kafka's ConnectionQuotas): a new connection
    from an address over its rate is not served, and closed once the throttle time is over."""

    def __init__(self, num_samples: int, window_s: int):
        self.num_samples, self.window_ms = num_samples, window_s * 1000
        self.default: float | None = None
        self.overrides: dict[str, float] = {}   # normalized address -> rate
        self.sensors: dict[str, Rate] = {}

    def update(self, address: str | None, value: float | None) -> None:
        """The rate of an address (normalized_address), None: the default of every address."""
        if address is None:
            self.default = value
        elif value is None:
            self.overrides.pop(address, None)
        else:
            self.overrides[address] = value

    def throttle_ms(self, host: str, now: int) -> int:
        """Count a new connection from ``host``; the time to hold it before closing it (0: serve it)."""
        if self.default is None and not self.overrides:
            return 0
        address = normalized_address(host) or host
        rate = self.overrides.get(address, self.default)
        if rate is None:
            return 0
        sensor = self.sensors.get(address)
        if sensor is None:
            sensor = self.sensors[address] = Rate(self.num_samples, self.window_ms)
        sensor.record(1.0, now)
        ms = sensor.throttle_ms(rate, now, self.window_ms)
        if ms:
            sensor.record(-1.0, now)  # a connection not accepted is not counted (Kafka unrecords it)
        return ms

    def expire(self, now: int) -> None:
        for a in [a for a, s in self.sensors.items() if now - s.last_used >= INACTIVE_SENSOR_EXPIRATION_MS]:
            del self.sensors[a]


def normalized_address(text: str) -> str | None:
    """An address or host name as the address it names (Kafka's InetAddress.getByName: a host name
    is looked up), None when it names none. A name lookup may block: callers on the event loop pass
    literal addresses only (connections), or run it in a worker thread (AlterClientQuotas)."""
    literal = ip_literal(text)
    if literal is not None:
        return literal
    import ipaddress
    try:
        infos = socket.getaddrinfo(text, None, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError, ValueError):
        return None
    return str(ipaddress.ip_address(infos[0][4][0])) if infos else None


def ip_literal(text: str) -> str | None:
    """A literal address in the forms Java's InetAddress takes (IPv6, dotted IPv4 and its shorter
    forms "1", "1.2", "1.2.3"), normalized; None if it is no literal."""
    import ipaddress  # (here: only ip quotas need it, and a start need not import it)
    try:
        return str(ipaddress.ip_address(text.strip("[]") if text.startswith("[") else text))
    except ValueError:
        pass
    parts = text.split(".")
    if not 1 <= len(parts) <= 4 or not all(p.isdigit() and p.isascii() for p in parts):
        return None
    nums = [int(p) for p in parts]
    # the last part fills the remaining bytes (inet_aton's rule, as Java's textToNumericFormatV4)
    rest = 4 - len(nums) + 1
    if any(n > 255 for n in nums[:-1]) or nums[-1] >= 256 ** rest:
        return None
    value = 0
    for n in nums[:-1]:
        value = value << 8 | n
    value = value << (8 * rest) | nums[-1]
    return str(ipaddress.IPv4Address(value))


class QuotaManagers:
    """The broker's quota managers (Kafka's QuotaManagers), fed from the stored client quotas."""

    def __init__(self, num_samples: int, window_s: int):
        self.produce = ClientQuotaManager("Produce", num_samples, window_s)
        self.fetch = ClientQuotaManager("Fetch", num_samples, window_s)
        self.request = ClientRequestQuotaManager("Request", num_samples, window_s)
        self.connections = ConnectionQuotas(num_samples, window_s)
        self.by_key = {PRODUCER_BYTE_RATE: self.produce, CONSUMER_BYTE_RATE: self.fetch,
                       REQUEST_PERCENTAGE: self.request}

    clock: "TaskClock | None" = None

    def watch_time(self) -> "TaskClock":
        """The task clock request_percentage is measured with, installed on first use."""
        if self.clock is None:
            self.clock = TaskClock()
            trio.lowlevel.add_instrument(self.clock)
        return self.clock

    @property
    def any_client_quota(self) -> bool:
        return self.produce.enabled or self.fetch.enabled or self.request.enabled

    def apply(self, entity: dict, old: dict[str, float], new: dict[str, float], resolve=None) -> None:
        """An entity's quotas changed from ``old`` to ``new`` (key -> value). ``resolve(name)``: the
        address an ip entity names (default: normalized_address, which may look a name up)."""
        if IP in entity:
            if old.get(CONNECTION_CREATION_RATE) != new.get(CONNECTION_CREATION_RATE):
                name = entity[IP]
                address = None if name is None else (resolve or normalized_address)(name)
                if name is not None and address is None:
                    log.warning("ip quota entity %s names no address: not applied", name)
                    return
                self.connections.update(address, new.get(CONNECTION_CREATION_RATE))
            return
        user = None if USER not in entity else DEFAULT if entity[USER] is None else entity[USER]
        client = None if CLIENT_ID not in entity else DEFAULT if entity[CLIENT_ID] is None else entity[CLIENT_ID]
        for key, manager in self.by_key.items():
            if key in old or key in new:
                manager.update(user, client, new.get(key))

    def expire(self, now: int) -> None:
        for m in (self.produce, self.fetch, self.request):
            m.expire(now)
        self.connections.expire(now)


# --------------------------------------------------------------- AlterClientQuotas, DescribeClientQuotas
INVALID_REQUEST = 42
UNSUPPORTED_VERSION = 35
_LONG_MAX = float(2**63 - 1)
_INT_MAX = float(2**31 - 1)
_SHORT_MAX = float(2**15 - 1)


def _entity_text(entity: dict) -> str:
    """Kafka's ClientQuotaEntity.toString (the message of a duplicate)."""
    return "ClientQuotaEntity(entries={" + ", ".join(f"{k}={v}" for k, v in entity.items()) + "})"


def _validate_entity(entity: dict) -> str | None:
    """Kafka's ClientQuotaControlManager.validateEntity and configKeysForEntityType, the ip's
    resolution aside: why the entity is refused, or None."""
    if not entity:
        return "Invalid empty client quota entity"
    for kind, name in entity.items():
        if kind not in (USER, CLIENT_ID, IP):
            return f"Unhandled client quota entity type: {kind}"
        if name is not None and not name:
            return f"Empty {kind} not supported"
    if IP in entity and (USER in entity or CLIENT_ID in entity):
        return "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId"
    return None


def _validate_value(keys: dict, key: str, value: float) -> str | None:
    """Kafka's validateQuotaKeyValue."""
    kind = keys.get(key)
    if kind is None:
        return f"Invalid configuration key {key}"
    if value <= 0.0:
        return f"Quota {key} must be greater than 0"
    if kind == "DOUBLE":
        return None
    too_large = {"SHORT": (_SHORT_MAX, "a SHORT"), "INT": (_INT_MAX, "an INT"), "LONG": (_LONG_MAX, "a LONG")}[kind]
    if value > too_large[0]:
        return f"Proposed value for {key} is too large for {too_large[1]}."
    if abs(math.fmod(value, 1.0)) > 1e-6:
        return f"{key} cannot be a fractional value."
    return None


def alter_client_quotas(current: dict[tuple, dict[str, float]], entries, ip_valid) -> tuple[list, dict]:
    """Kafka's ClientQuotaControlManager.alterClientQuotas over ``current`` (entity key -> quotas):
    ([(entity, error code, message)], the changed entities' new quotas). ``entries`` are
    (entity dict, [(key, value or None to remove)]); ``ip_valid(name)`` says whether an ip
    entity's name is an address or a host name that resolves.

    As Kafka's: one entity's result per entity; a key twice in an entity's ops, or an entity
    twice in a request, is INVALID_REQUEST "Ignoring duplicate entity" (the first entry of a
    repeated entity is still applied); an entity is applied whole or not at all."""
    from minikafka.storage.dynamic_config import entity_key
    results: dict[tuple, tuple[dict, int, str | None]] = {}
    changed: dict[tuple, dict[str, float]] = {}
    for entity, ops in entries:
        key = entity_key(entity)
        alterations: dict[str, float | None] = {}
        for k, v in ops:
            if k in alterations:
                results[key] = (entity, INVALID_REQUEST, f"Duplicate quota key {k} not updating quota for this "
                                                         f"entity {_entity_text(entity)}")
            else:
                alterations[k] = v
        if key in results:
            results[key] = (entity, INVALID_REQUEST, f"Ignoring duplicate entity {_entity_text(entity)}")
            continue
        why = _validate_entity(entity)
        if why is None and IP in entity and entity[IP] is not None and not ip_valid(entity[IP]):
            why = f"{entity[IP]} is not a valid IP or resolvable host."
        if why is not None:
            results[key] = (entity, INVALID_REQUEST, why)
            continue
        keys = IP_KEYS if IP in entity else USER_AND_CLIENT_KEYS
        quotas = dict(changed.get(key, current.get(key, {})))
        for k, v in alterations.items():
            if v is None:
                quotas.pop(k, None)
                continue
            why = _validate_value(keys, k, v)
            if why is not None:
                break
            quotas[k] = v
        if why is not None:
            results[key] = (entity, INVALID_REQUEST, why)
            continue
        changed[key] = quotas
        results[key] = (entity, 0, None)
    return list(results.values()), changed


class DescribeError(Exception):
    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code, self.message = code, message


MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2


def describe_client_quotas(current: dict[tuple, dict[str, float]], components, strict: bool) -> list:
    """Kafka's ClientQuotasImage.describe: [(entity dict, quotas)] matching the filter
    ``components`` [(entity type, match type, match)]; DescribeError for a bad filter."""
    exact: dict[str, str | None] = {}
    specified: set[str] = set()
    for kind, match_type, match in components:
        if not kind:
            raise DescribeError(INVALID_REQUEST, "Invalid empty entity type.")
        if kind in exact or kind in specified:
            raise DescribeError(INVALID_REQUEST, f"Entity type {kind} cannot appear more than once in the filter.")
        if kind not in (IP, USER, CLIENT_ID):
            raise DescribeError(UNSUPPORTED_VERSION, f"Unsupported entity type {kind}")
        if match_type == MATCH_EXACT:
            if match is None:
                raise DescribeError(INVALID_REQUEST, "Request specified MATCH_TYPE_EXACT, but set match string to null.")
            exact[kind] = match
        elif match_type == MATCH_DEFAULT:
            if match is not None:
                raise DescribeError(INVALID_REQUEST, "Request specified MATCH_TYPE_DEFAULT, but also specified a match string.")
            exact[kind] = None
        elif match_type == MATCH_SPECIFIED:
            if match is not None:
                raise DescribeError(INVALID_REQUEST, "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.")
            specified.add(kind)
        else:
            raise DescribeError(INVALID_REQUEST, f"Unknown match type {match_type}")
    if (IP in exact or IP in specified) and (USER in exact or USER in specified
                                             or CLIENT_ID in exact or CLIENT_ID in specified):
        raise DescribeError(INVALID_REQUEST, "Invalid entity filter component combination. IP filter component "
                                             "should not be used with user or clientId filter component.")
    out = []
    for key, quotas in current.items():
        entity = dict(key)
        if strict and len(entity) != len(exact) + len(specified):
            continue
        if any(kind not in entity or entity[kind] != name for kind, name in exact.items()):
            continue
        if any(kind not in entity for kind in specified):
            continue
        out.append((entity, quotas))
    return out


# --------------------------------------------------------------- request time
class TaskClock(trio.abc.Instrument):
    """A trio instrument adding up the time each task it watches spends running: the time a
    connection's requests cost the broker, waits excluded (a Fetch long-poll, a flush), as
    Kafka's request handler thread time. Installed once a request_percentage quota exists."""

    def __init__(self):
        self.spent: dict = {}   # task -> seconds run
        self.task = None
        self.step_start = 0.0

    def before_task_step(self, task) -> None:
        self.task, self.step_start = task, perf_counter()

    def after_task_step(self, task) -> None:
        spent = self.spent.get(task)
        if spent is not None:
            self.spent[task] = spent + perf_counter() - self.step_start
        self.task = None

    def now(self, task) -> float:
        """The task's running time so far (it is the running task): watched from now on."""
        spent = self.spent.setdefault(task, 0.0)
        return spent + (perf_counter() - self.step_start if self.task is task else 0.0)

    def forget(self, task) -> None:
        self.spent.pop(task, None)
