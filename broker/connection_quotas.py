"""Kafka's ConnectionQuotas: how many connections the broker, a listener and an address may
have, and how fast new ones are accepted.

* ``max.connections`` (broker-wide) and ``listener.name.<l>.max.connections``: at the limit the
  listener stops accepting: the connection just accepted waits unserved, the next ones in the
  kernel's accept backlog, until one closes (Kafka's Acceptor blocks; AcceptorBlockedPercent).
* ``max.connections.per.ip`` and ``max.connections.per.ip.overrides``: a connection past its
  address's limit is accepted and closed at once, logged as Kafka logs it.
* ``max.connection.creation.rate`` (broker-wide) and ``listener.name.<l>.max.connection.creation.rate``:
  each accepted connection is recorded in a rate over Kafka's quota window (11 samples of 1 s);
  past the limit, it waits unserved (and the listener accepts nothing else) for as long as it
  takes the rate to come back to the limit, at most one window (1 s), as Kafka's
  QuotaUtils.boundedThrottleTime.

A single broker has no inter-broker listener, so no listener is exempt from the broker-wide
limits (Kafka's protected inter-broker listener and its closing of the least recently used
connection elsewhere do not arise).
"""
from __future__ import annotations

import logging
import time
from collections import defaultdict, deque

import trio

from .config import INT_MAX, parse_ip_overrides

log = logging.getLogger("minikafka.server")

QUOTA_WINDOW_SECONDS = 1.0  # Kafka's quota.window.size.seconds default
QUOTA_WINDOW_SAMPLES = 11   # Kafka's quota.window.num default


class RateQuota:
    """Kafka's Rate over a SampledStat (``QUOTA_WINDOW_SAMPLES`` windows of ``QUOTA_WINDOW_SECONDS``)
    with a quota: ``record()`` counts one event and answers how long to wait (seconds) for the
    rate to come back to the quota, 0 if it is within."""

    def __init__(self, limit: int, clock=time.monotonic):
        self.limit = limit
        self.clock = clock
        self.samples: deque = deque()  # [window start, count], oldest first

    def record(self) -> float:
        if self.limit >= INT_MAX:
            return 0.0
        now = self.clock()
        samples = self.samples
        while samples and samples[0][0] <= now - QUOTA_WINDOW_SAMPLES * QUOTA_WINDOW_SECONDS:
            samples.popleft()
        if samples and now < samples[-1][0] + QUOTA_WINDOW_SECONDS:
            samples[-1][1] += 1
        else:
            samples.append([now, 1])
        # Rate.windowSize: the time the samples span, at least samples - 1 full windows
        window = max(now - samples[0][0], (QUOTA_WINDOW_SAMPLES - 1) * QUOTA_WINDOW_SECONDS)
        rate = sum(c for _, c in samples) / window
        if rate <= self.limit:
            return 0.0
        return min((rate - self.limit) / self.limit * window, QUOTA_WINDOW_SECONDS)


class ConnectionQuotas:
    def __init__(self, config, listeners):
        self.max_connections = config["max.connections"]
        self.max_per_ip = config["max.connections.per.ip"]
        self.per_ip_overrides = parse_ip_overrides(config["max.connections.per.ip.overrides"])
        self.broker_rate = RateQuota(config["max.connection.creation.rate"])
        self.listener_max = {lst.name: lst.max_connections for lst in listeners}
        self.listener_rate = {lst.name: RateQuota(lst.max_connection_creation_rate) for lst in listeners}
        self.total = 0
        self.per_listener: dict[str, int] = defaultdict(int)
        self.per_ip: dict[str, int] = defaultdict(int)
        self._freed = trio.lowlevel.ParkingLot()  # acceptors waiting for a connection to close
        # metrics (broker/metrics.py)
        self.created: dict[str, int] = defaultdict(int)        # Kafka's connection-creation-total
        self.rejected_per_ip: dict[str, int] = defaultdict(int)
        self.blocked_seconds: dict[str, float] = defaultdict(float)   # AcceptorBlockedPercent's time
        self.throttled_seconds: dict[str, float] = defaultdict(float)  # connection-accept-throttle-time
        self._warned: set[str] = set()

    def _slot_available(self, listener: str) -> bool:
        return self.per_listener[listener] < self.listener_max[listener] and self.total < self.max_connections

    async def wait_for_slot(self, listener: str) -> None:
        """Kafka's waitForConnectionSlot: a connection just accepted waits out the creation-rate
        throttle, then until the listener and the broker are below their limits."""
        started = time.monotonic()
        throttle = max(self.listener_rate[listener].record(), self.broker_rate.record())
        if throttle > 0:
            self.throttled_seconds[listener] += throttle
            await trio.sleep(throttle)
        elif self._slot_available(listener):
            return
        if not self._slot_available(listener):
            if listener not in self._warned:
                self._warned.add(listener)
                log.warning("Listener %s has reached its connection limit (max.connections=%d, listener limit %d):"
                            " new connections wait until one closes", listener, self.max_connections,
                            self.listener_max[listener])
            while not self._slot_available(listener):
                await self._freed.park()
            self._warned.discard(listener)
        self.blocked_seconds[listener] += time.monotonic() - started

    def inc(self, listener: str, address: str) -> bool:
        """Count an accepted connection; False (and not counted) when its address is at its limit."""
        limit = self.per_ip_overrides.get(address, self.max_per_ip)
        if self.per_ip[address] >= limit:
            self.rejected_per_ip[listener] += 1
            log.info("Rejected connection from /%s, address already has the configured maximum of %d connections.",
                     address, limit)
            return False
        self.per_ip[address] += 1
        self.per_listener[listener] += 1
        self.total += 1
        self.created[listener] += 1
        return True

    def dec(self, listener: str, address: str) -> None:
        self.per_ip[address] -= 1
        if not self.per_ip[address]:
            del self.per_ip[address]
        self.per_listener[listener] -= 1
        self.total -= 1
        self._freed.unpark_all()
