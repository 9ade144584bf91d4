"""Prometheus metrics endpoint (``metrics.listener=host:port``): ``GET /metrics``.

Kafka's JMX names mapped to Prometheus style (``domain_type_name``, lower case,
JMX keys become labels); every value is read from the broker at scrape time,
except the request histograms, which the server feeds as requests complete.

=====================================================================  =========================================================
metric                                                                 Kafka JMX / meaning
=====================================================================  =========================================================
kafka_server_replicamanager_partitionswithlatetransactionscount        ReplicaManager PartitionsWithLateTransactionsCount (KIP-664):
                                                                       partitions with a transaction open longer than
                                                                       transaction.max.timeout.ms
kafka_server_replicamanager_partitioncount                             ReplicaManager PartitionCount
kafka_log_log_maxactivetransactionduration{topic,partition}            MaxActiveTransactionDuration (KIP-664), ms; 0 if none open
kafka_log_log_laststableoffsetlag{topic,partition}                     LastStableOffsetLag: log end offset - last stable offset
kafka_log_log_logendoffset / _logstartoffset / _size / _numlogsegments Log LogEndOffset, LogStartOffset, Size, NumLogSegments
kafka_network_requestmetrics_requests_total{request,version}           RequestMetrics RequestsPerSec (count), per API and
                                                                       API version (Kafka's tags request, version)
kafka_network_requestmetrics_totaltime_seconds{request}                RequestMetrics TotalTimeMs as a histogram (seconds)
kafka_coordinator_transaction_transactionalids{state}                  transactional ids known to the coordinator, per state
kafka_server_socketservermetrics_connection_count                      open client connections
kafka_server_socketservermetrics_failed_authentication_total           failed-authentication-total: failed TLS handshakes and SASL authentications
kafka_server_socketservermetrics_connection_creation_total{listener}   connection-creation-total: connections accepted
kafka_server_socketservermetrics_connection_accept_throttle_seconds_total{listener}
                                                                       connection-accept-throttle-time, summed: time accepting
                                                                       waited for max.connection.creation.rate
kafka_network_acceptor_acceptorblocked_seconds_total{listener}         AcceptorBlockedPercent as time: accepting waited for a
                                                                       connection slot or the creation rate
minikafka_connections_rejected_per_ip_total{listener}                  connections closed at once for max.connections.per.ip
kafka_network_socketserver_memorypoolused                              MemoryPoolUsed: bytes of requests being read or waiting
kafka_network_socketserver_memorypoolavailable                         MemoryPoolAvailable: queued.max.request.bytes left
kafka_server_socketservermetrics_memory_pool_depleted_seconds_total    memory-pool-depleted-time-total: time the pool was used up
kafka_server_fetchsessioncache_numincrementalfetchsessions             FetchSessionCache NumIncrementalFetchSessions (KIP-227)
kafka_server_fetchsessioncache_numincrementalfetchpartitionscached     FetchSessionCache NumIncrementalFetchPartitionsCached
kafka_server_fetchsessioncache_incrementalfetchsessionevictions_total  FetchSessionCache IncrementalFetchSessionEvictionsPerSec (count)
kafka_log_logflushstats_logflushes_total                               LogFlushStats LogFlushRateAndTimeMs (count): fsync passes
kafka_log_logflushstats_logflushtime_seconds_total                     LogFlushStats LogFlushRateAndTimeMs (time spent)
=====================================================================  =========================================================

The age of an open transaction on a partition runs from the earlier of the
coordinator's transaction start (while the coordinator still counts the
partition in that producer's transaction) and the timestamp of the
transaction's first batch in the log (all there is for a hanging transaction:
its coordinator has moved on). Unlike Kafka, "late" adds no 5 minute buffer to
``transaction.max.timeout.ms``.
"""
from __future__ import annotations

import logging
import time

import trio
from prometheus_client import CollectorRegistry, Histogram, disable_created_metrics
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest

from minikafka.protocol import records as rec
from minikafka.protocol.schema import API_NAMES
from minikafka.storage.log import FLUSH_STATS
from .config import parse_metrics_listener
from . import handlers

log = logging.getLogger("minikafka.metrics")

# Always exported (zero until used), as in the issue: the transaction path end to end.
KEY_APIS = (10, 22, 24, 0, 26, 1, 27, 25, 28, 61, 65, 66)
LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
TXN_STATES = ("Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead",
              "PrepareEpochFence")
OPEN_COORDINATOR_STATES = {"Ongoing", "PrepareCommit", "PrepareAbort", "PrepareEpochFence"}


def _now_ms() -> int:
    return int(time.time() * 1000)


class BrokerCollector:
    """A prometheus_client collector over the live broker state."""

    def __init__(self, broker):
        self.broker = broker
        self._first_batch_ts: dict[tuple[str, int, int, int], int] = {}

    def describe(self):
        return []  # no collect() at registration time

    # ------------------------------------------------------------- transactions
    def _coordinator_starts(self) -> dict[tuple[int, str, int], int]:
        """{(producer id, topic, partition): txn start ms} for transactions the coordinator
        still considers open on that partition."""
        coord = self.broker.ctx.txn_coordinator
        out = {}
        if coord is None:
            return out
        for md in list(coord.txns.values()):
            if md.state.display in OPEN_COORDINATOR_STATES and md.txn_start_ms >= 0:
                for topic, part in md.partitions:
                    out[(md.producer_id, topic, part)] = md.txn_start_ms
        return out

    def _first_batch_timestamp(self, lg, producer_id: int, first_offset: int) -> int | None:
        key = (lg.topic, lg.partition, producer_id, first_offset)
        ts = self._first_batch_ts.get(key)
        if ts is None:
            try:
                data = lg.read(first_offset, 1, max_offset=lg.log_end_offset).records
                if len(data) >= rec.HEADER_SIZE:
                    h = rec.parse_header(data, 0)
                    ts = h.max_timestamp if h.attributes & rec.TIMESTAMP_TYPE_MASK else h.base_timestamp
            except Exception:
                ts = None
            if ts is None or ts < 0:
                return None
            self._first_batch_ts[key] = ts
        return ts

    def open_transaction_ages(self, lg, now: int, starts: dict) -> list[int]:
        """Age in ms of each open transaction on `lg` (from its producer state)."""
        ages = []
        for e in lg.active_producers():
            first = getattr(e, "current_txn_first_offset", -1)
            if first is None or first < 0:
                continue
            # the earliest of: the coordinator's start (if it still has this partition in the
            # producer's transaction) and the transaction's first batch in the log (which
            # predates a coordinator transaction when an older one was left hanging)
            found = [t for t in (starts.get((e.producer_id, lg.topic, lg.partition)),
                                 self._first_batch_timestamp(lg, e.producer_id, first)) if t is not None and t >= 0]
            if not found and e.last_timestamp is not None and e.last_timestamp >= 0:
                found = [e.last_timestamp]
            ages.append(max(0, now - min(found)) if found else 0)
        return ages

    # ------------------------------------------------------------------ collect
    def collect(self):
        broker = self.broker
        now = _now_ms()
        max_timeout = broker.config["transaction.max.timeout.ms"]
        labels = ["topic", "partition"]
        lso_lag = GaugeMetricFamily("kafka_log_log_laststableoffsetlag",
                                    "Log end offset minus last stable offset", labels=labels)
        max_dur = GaugeMetricFamily("kafka_log_log_maxactivetransactionduration",
                                    "Age in ms of the oldest open transaction on the partition (0: none)",
                                    labels=labels)
        leo = GaugeMetricFamily("kafka_log_log_logendoffset", "Log end offset", labels=labels)
        lso_start = GaugeMetricFamily("kafka_log_log_logstartoffset", "Log start offset", labels=labels)
        size = GaugeMetricFamily("kafka_log_log_size", "Bytes in the partition's segments", labels=labels)
        segs = GaugeMetricFamily("kafka_log_log_numlogsegments", "Segments of the partition", labels=labels)
        late = 0
        count = 0
        starts = self._coordinator_starts()
        seen = set()
        for lg in list(broker.logs.logs()):
            count += 1
            lv = [lg.topic, str(lg.partition)]
            end = lg.log_end_offset
            lso_lag.add_metric(lv, max(0, end - lg.last_stable_offset))
            ages = self.open_transaction_ages(lg, now, starts)
            oldest = max(ages) if ages else 0
            max_dur.add_metric(lv, oldest)
            if oldest > max_timeout:
                late += 1
            leo.add_metric(lv, end)
            lso_start.add_metric(lv, lg.log_start_offset)
            size.add_metric(lv, lg.size)
            segs.add_metric(lv, lg.num_segments())
            seen.add((lg.topic, lg.partition))
        # forget first-batch timestamps of transactions on partitions that went away
        for key in [k for k in self._first_batch_ts if (k[0], k[1]) not in seen]:
            del self._first_batch_ts[key]
        if len(self._first_batch_ts) > 100_000:
            self._first_batch_ts.clear()

        g = GaugeMetricFamily("kafka_server_replicamanager_partitionswithlatetransactionscount",
                              "Partitions with a transaction open longer than transaction.max.timeout.ms")
        g.add_metric([], late)
        yield g
        g = GaugeMetricFamily("kafka_server_replicamanager_partitioncount", "Partitions on this broker")
        g.add_metric([], count)
        yield g
        yield from (max_dur, lso_lag, leo, lso_start, size, segs)

        counts = CounterMetricFamily("kafka_network_requestmetrics_requests",
                                     "Requests handled, per API and API version", labels=["request", "version"])
        done = dict(broker.ctx.metrics.request_count)
        # the transaction path's APIs are there from the start, each version it serves at 0
        for key in KEY_APIS:
            api = handlers.APIS.get(key)
            if api is not None:
                lo, hi = handlers.advertised_range(api, broker.ctx)
                for v in range(lo, hi + 1):
                    done.setdefault((key, v), 0)
        for key, v in sorted(done):
            counts.add_metric([API_NAMES.get(key, str(key)), str(v)], done[(key, v)])
        yield counts

        coord = broker.ctx.txn_coordinator
        states = GaugeMetricFamily("kafka_coordinator_transaction_transactionalids",
                                   "Transactional ids known to the transaction coordinator, per state",
                                   labels=["state"])
        by_state = dict.fromkeys(TXN_STATES, 0)
        if coord is not None:
            for md in list(coord.txns.values()):
                by_state[md.state.display] = by_state.get(md.state.display, 0) + 1
        for s, n in by_state.items():
            states.add_metric([s], n)
        yield states

        g = GaugeMetricFamily("kafka_server_socketservermetrics_connection_count", "Open client connections")
        g.add_metric([], broker.ctx.metrics.connections)
        yield g
        c = CounterMetricFamily("kafka_server_socketservermetrics_failed_authentication",
                                "Failed TLS handshakes and SASL authentications")
        c.add_metric([], broker.ctx.metrics.failed_authentications)
        yield c
        yield from self._connection_quotas(broker)

        cache = broker.ctx.fetch_manager.cache
        g = GaugeMetricFamily("kafka_server_fetchsessioncache_numincrementalfetchsessions",
                              "Incremental fetch sessions (KIP-227) in the cache")
        g.add_metric([], cache.num_sessions)
        yield g
        g = GaugeMetricFamily("kafka_server_fetchsessioncache_numincrementalfetchpartitionscached",
                              "Partitions held by those sessions")
        g.add_metric([], cache.num_partitions)
        yield g
        c = CounterMetricFamily("kafka_server_fetchsessioncache_incrementalfetchsessionevictions",
                                "Sessions evicted to make room for new ones")
        c.add_metric([], cache.evictions)
        yield c

        flushes = CounterMetricFamily("kafka_log_logflushstats_logflushes", "fsync passes over a log's unflushed data")
        flushes.add_metric([], FLUSH_STATS.count)
        yield flushes
        spent = CounterMetricFamily("kafka_log_logflushstats_logflushtime_seconds", "Time spent in those fsyncs")
        spent.add_metric([], FLUSH_STATS.seconds)
        yield spent


    @staticmethod
    def _connection_quotas(broker):
        quotas, pool = broker.ctx.connection_quotas, broker.ctx.memory_pool
        names = [lst.name for lst in broker.config.listeners]
        for family, values in (
                (CounterMetricFamily("kafka_server_socketservermetrics_connection_creation",
                                     "Connections accepted", labels=["listener"]), quotas.created),
                (CounterMetricFamily("kafka_server_socketservermetrics_connection_accept_throttle_seconds",
                                     "Time accepting waited for max.connection.creation.rate", labels=["listener"]),
                 quotas.throttled_seconds),
                (CounterMetricFamily("kafka_network_acceptor_acceptorblocked_seconds",
                                     "Time accepting waited for a connection slot or the creation rate",
                                     labels=["listener"]), quotas.blocked_seconds),
                (CounterMetricFamily("minikafka_connections_rejected_per_ip",
                                     "Connections closed at once for max.connections.per.ip", labels=["listener"]),
                 quotas.rejected_per_ip)):
            for name in names:
                family.add_metric([name], values.get(name, 0))
            yield family
        g = GaugeMetricFamily("kafka_network_socketserver_memorypoolused",
                              "Bytes of requests being read or waiting (queued.max.request.bytes)")
        g.add_metric([], pool.used)
        yield g
        g = GaugeMetricFamily("kafka_network_socketserver_memorypoolavailable",
                              "queued.max.request.bytes not in use")
        g.add_metric([], pool.available if pool.capacity > 0 else float("inf"))
        yield g
        c = CounterMetricFamily("kafka_server_socketservermetrics_memory_pool_depleted_seconds",
                                "Time the memory pool was used up (requests waited to be read)")
        c.add_metric([], pool.depleted_seconds)
        yield c


def make_registry(broker) -> CollectorRegistry:
    """The registry for one broker; hooks the request histograms into broker.metrics."""
    disable_created_metrics()  # no *_created series: Kafka has no such thing and they double the output
    registry = CollectorRegistry(auto_describe=False)
    registry.register(BrokerCollector(broker))
    hist = Histogram("kafka_network_requestmetrics_totaltime_seconds",
                     "Request handling time (Kafka's TotalTimeMs), per API", ["request"],
                     registry=registry, buckets=LATENCY_BUCKETS)
    children = {}
    for key in KEY_APIS:
        children[key] = hist.labels(request=API_NAMES.get(key, str(key)))

    def observe(api_key: int, seconds: float) -> None:
        child = children.get(api_key)
        if child is None:
            child = children[api_key] = hist.labels(request=API_NAMES.get(api_key, str(api_key)))
        child.observe(seconds)

    broker.ctx.metrics.observers.append(observe)
    return registry


async def _handle_http(stream: trio.SocketStream, registry: CollectorRegistry) -> None:
    try:
        buf = b""
        with trio.move_on_after(10):
            while b"\r\n\r\n" not in buf and len(buf) < 16384:
                chunk = await stream.receive_some(4096)
                if not chunk:
                    return
                buf += chunk
        line = buf.split(b"\r\n", 1)[0].decode("latin-1")
        parts = line.split()
        if len(parts) < 2:
            status, ctype, body = "400 Bad Request", "text/plain", b"bad request\n"
            method = "GET"
        else:
            method, path = parts[0], parts[1].split("?", 1)[0]
            if method not in ("GET", "HEAD"):
                status, ctype, body = "405 Method Not Allowed", "text/plain", b"method not allowed\n"
            elif path in ("/metrics", "/"):
                status, ctype, body = "200 OK", CONTENT_TYPE_LATEST, generate_latest(registry)
            else:
                status, ctype, body = "404 Not Found", "text/plain", b"not found: try /metrics\n"
        head = (f"HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {len(body)}\r\n"
                f"Connection: close\r\n\r\n").encode()
        await stream.send_all(head + (b"" if method == "HEAD" else body))
    except (trio.BrokenResourceError, trio.ClosedResourceError, ConnectionError):
        pass
    except Exception:
        log.exception("metrics request failed")
    finally:
        with trio.CancelScope(shield=True):
            await trio.aclose_forcefully(stream)


async def serve_metrics(broker, task_status=trio.TASK_STATUS_IGNORED) -> None:
    """Serve ``GET /metrics`` on ``metrics.listener`` until cancelled."""
    host, port = parse_metrics_listener(broker.config["metrics.listener"])  # validated at start
    registry = make_registry(broker)
    listeners = await trio.open_tcp_listeners(port, host=None if host in ("", "0.0.0.0") else host)
    bound = listeners[0].socket.getsockname()
    log.info("metrics endpoint on http://%s:%d/metrics", host, bound[1])

    async def on_connect(stream):
        await _handle_http(stream, registry)

    await trio.serve_listeners(on_connect, listeners, task_status=task_status)
