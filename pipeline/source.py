"""A PySpark 4 Python streaming data source that reads Kafka topics read_committed.

It exists so the pipeline runs where Spark's own Kafka connector (a separate
jar) cannot be had.  Usage::

    from minikafka.pipeline.source import MiniKafkaDataSource
    spark.dataSource.register(MiniKafkaDataSource)
    df = (spark.readStream.format("minikafka")
          .option("kafka.bootstrap.servers", "127.0.0.1:9092")
          .option("subscribe", "invoices")
          .option("startingOffsets", "earliest")
          .load())

Output schema: the same columns and types as Spark's Kafka source with
``includeHeaders=true``: key binary, value binary, topic string, partition int,
offset long, timestamp timestamp, timestampType int,
headers array<struct<key:string,value:binary>> (``includeHeaders=false`` drops
the headers column, as Spark's source does).

Offsets: the streaming offset is Spark's Kafka source JSON,
``{"topic": {"0": 42, "1": 17}}``: per partition, the next offset to read.  A
micro-batch covers ``[start, end)`` per partition, where ``end`` is the
partition's last stable offset (ListOffsets with isolation level
READ_COMMITTED), so an open transaction holds the batch boundary and nothing
undecided is ever planned.  Executors read each range with a read_committed
kafka-python consumer (assign + seek), which drops aborted records and
control records; gaps those leave in the offsets are expected, not data loss.

Options (names as Spark's Kafka source where one exists):

=========================  ==================================================
``kafka.bootstrap.servers``  required (``bootstrap.servers`` also accepted)
``subscribe``                comma-separated topics (required)
``startingOffsets``          ``earliest`` (default), ``latest`` or JSON as
                             Spark's (-2 earliest, -1 latest per partition)
``failOnDataLoss``           ``true`` (default): fail when a planned range was
                             deleted (retention) or a topic/partition vanished
``includeHeaders``           ``true`` (default) / ``false``
``kafka.isolation.level``    ``read_committed`` (default) / ``read_uncommitted``
``pollTimeoutMs``            how long an executor waits for a range (120000)
``kafka.client.id``          client id prefix
=========================  ==================================================

Not supported (unlike Spark's source): ``assign``/``subscribePattern``,
``maxOffsetsPerTrigger`` (PySpark 4.0's Python streaming API has no
admission control), ``endingOffsets``.
"""
from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Iterator, Sequence

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.types import (ArrayType, BinaryType, IntegerType, LongType, StringType,
                               StructField, StructType, TimestampType)

log = logging.getLogger("pipeline.source")

HEADERS_TYPE = ArrayType(StructType([StructField("key", StringType()),
                                     StructField("value", BinaryType())]))

#: The Kafka source schema (Spark's ``KafkaRecordToRowConverter`` with headers).
KAFKA_SCHEMA = StructType([
    StructField("key", BinaryType()),
    StructField("value", BinaryType()),
    StructField("topic", StringType()),
    StructField("partition", IntegerType()),
    StructField("offset", LongType()),
    StructField("timestamp", TimestampType()),
    StructField("timestampType", IntegerType()),
    StructField("headers", HEADERS_TYPE),
])

EARLIEST, LATEST = -2, -1


class DataLossError(RuntimeError):
    """A planned offset range is no longer in the log (failOnDataLoss=true)."""


@dataclass(frozen=True)
class Range:
    """One Spark input partition: offsets ``[start, end)`` of one topic-partition."""
    topic: str
    partition: int
    start: int
    end: int


class RangePartition(InputPartition):
    def __init__(self, rng: Range):
        super().__init__(rng)
        self.rng = rng

    def __repr__(self) -> str:
        r = self.rng
        return f"RangePartition({r.topic}-{r.partition} [{r.start}, {r.end}))"


def _bool(v: Any, default: bool) -> bool:
    if v is None:
        return default
    return str(v).strip().lower() in ("1", "true", "yes", "on")


class Options:
    """Validated options (case-insensitive keys, as Spark passes them)."""

    def __init__(self, raw: dict[str, str]):
        opts = {str(k).lower(): v for k, v in dict(raw).items()}
        self.bootstrap = opts.get("kafka.bootstrap.servers") or opts.get("bootstrap.servers")
        if not self.bootstrap:
            raise ValueError("minikafka source: option 'kafka.bootstrap.servers' is required")
        topics = [t.strip() for t in (opts.get("subscribe") or "").split(",") if t.strip()]
        if not topics:
            raise ValueError("minikafka source: option 'subscribe' (comma-separated topics)"
                             " is required")
        for unsupported in ("assign", "subscribepattern", "maxoffsetspertrigger",
                            "endingoffsets"):
            if unsupported in opts:
                raise ValueError(f"minikafka source: option {unsupported!r} is not supported")
        self.topics = topics
        self.starting = (opts.get("startingoffsets") or "earliest").strip()
        self.fail_on_data_loss = _bool(opts.get("failondataloss"), True)
        self.include_headers = _bool(opts.get("includeheaders"), True)
        self.isolation_level = opts.get("kafka.isolation.level") or "read_committed"
        if self.isolation_level not in ("read_committed", "read_uncommitted"):
            raise ValueError(f"minikafka source: bad kafka.isolation.level {self.isolation_level!r}")
        self.poll_timeout_ms = int(opts.get("polltimeoutms") or 120_000)
        self.client_id = opts.get("kafka.client.id") or "minikafka-spark"
        self.request_timeout_ms = int(opts.get("kafka.request.timeout.ms") or 30_000)

    def consumer_config(self, role: str) -> dict:
        return dict(bootstrap_servers=self.bootstrap.split(","), group_id=None,
                    enable_auto_commit=False, isolation_level=self.isolation_level,
                    client_id=f"{self.client_id}-{role}", auto_offset_reset="none",
                    request_timeout_ms=self.request_timeout_ms,
                    max_partition_fetch_bytes=4 * 1024 * 1024)


def schema_for(include_headers: bool) -> StructType:
    if include_headers:
        return KAFKA_SCHEMA
    return StructType([f for f in KAFKA_SCHEMA.fields if f.name != "headers"])


class MiniKafkaDataSource(DataSource):
    """``spark.readStream.format("minikafka")``."""

    @classmethod
    def name(cls) -> str:
        return "minikafka"

    def schema(self) -> StructType:
        return schema_for(_bool(_ci(self.options, "includeHeaders"), True))

    def streamReader(self, schema: StructType) -> "MiniKafkaStreamReader":
        return MiniKafkaStreamReader(Options(self.options), schema)


def _ci(options: Any, key: str) -> Any:
    for k, v in dict(options).items():
        if str(k).lower() == key.lower():
            return v
    return None


# ---------------------------------------------------------------------------
# offsets JSON (Spark's Kafka source format)
# ---------------------------------------------------------------------------

def parse_offsets(text_or_dict: str | dict) -> dict[str, dict[int, int]]:
    d = json.loads(text_or_dict) if isinstance(text_or_dict, str) else text_or_dict
    return {t: {int(p): int(o) for p, o in parts.items()} for t, parts in d.items()}


def format_offsets(offsets: dict[str, dict[int, int]]) -> dict:
    return {t: {str(p): int(o) for p, o in sorted(parts.items())}
            for t, parts in sorted(offsets.items())}


# ---------------------------------------------------------------------------
# the reader
# ---------------------------------------------------------------------------

class MiniKafkaStreamReader(DataSourceStreamReader):
    def __init__(self, options: Options, schema: StructType):
        self.opts = options
        self.schema = schema
        self.include_headers = any(f.name == "headers" for f in schema.fields)
        self._consumer = None  # driver-side metadata/offsets consumer (not pickled)

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_consumer"] = None
        return state

    # -- driver side ---------------------------------------------------------
    def _driver(self):
        if self._consumer is None:
            from kafka import KafkaConsumer
            # Short metadata age: new partitions show up within seconds.
            self._consumer = KafkaConsumer(**self.opts.consumer_config("driver"),
                                           metadata_max_age_ms=5000)
        return self._consumer

    def _topic_partitions(self, wait_s: float = 30.0) -> list:
        """All partitions of the subscribed topics (fresh metadata)."""
        from kafka import TopicPartition
        c = self._driver()
        deadline = time.monotonic() + wait_s
        while True:
            missing, tps = [], []
            for t in self.opts.topics:
                parts = c.partitions_for_topic(t)
                if not parts:
                    missing.append(t)
                else:
                    tps.extend(TopicPartition(t, p) for p in sorted(parts))
            if not missing:
                return tps
            if time.monotonic() >= deadline:
                raise RuntimeError(f"minikafka source: topics {missing} not found"
                                   f" on {self.opts.bootstrap}")
            time.sleep(0.2)

    def _ends(self, tps) -> dict:
        # end_offsets honours the consumer's isolation level: read_committed
        # asks for the last stable offset.
        return self._driver().end_offsets(tps)

    def _starts(self, tps) -> dict:
        return self._driver().beginning_offsets(tps)

    def initialOffset(self) -> dict:
        tps = self._topic_partitions()
        s = self.opts.starting
        if s == "earliest":
            got = self._starts(tps)
        elif s == "latest":
            got = self._ends(tps)
        else:
            wanted = parse_offsets(s)
            starts, ends = self._starts(tps), self._ends(tps)
            got = {}
            for tp in tps:
                o = wanted.get(tp.topic, {}).get(tp.partition)
                if o is None:
                    raise ValueError(f"startingOffsets has no offset for {tp.topic}-{tp.partition}")
                got[tp] = starts[tp] if o == EARLIEST else ends[tp] if o == LATEST else o
        out: dict[str, dict[int, int]] = {}
        for tp, o in got.items():
            out.setdefault(tp.topic, {})[tp.partition] = o
        return format_offsets(out)

    def latestOffset(self) -> dict:
        tps = self._topic_partitions()
        out: dict[str, dict[int, int]] = {}
        for tp, o in self._ends(tps).items():
            out.setdefault(tp.topic, {})[tp.partition] = o
        return format_offsets(out)

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        s, e = parse_offsets(start), parse_offsets(end)
        ranges = []
        for topic, parts in sorted(e.items()):
            for p, end_off in sorted(parts.items()):
                # A partition that appeared after the start offset was taken
                # is read from its beginning (as Spark's source does).
                start_off = s.get(topic, {}).get(p)
                if start_off is None:
                    start_off = self._starts([_tp(topic, p)])[_tp(topic, p)]
                if end_off < start_off:
                    if self.opts.fail_on_data_loss:
                        raise DataLossError(f"{topic}-{p}: end offset {end_off} is before the"
                                            f" start offset {start_off} (log truncated?)")
                    continue
                if end_off > start_off:
                    ranges.append(RangePartition(Range(topic, p, start_off, end_off)))
        for topic, parts in s.items():
            for p in parts:
                if p not in e.get(topic, {}) and self.opts.fail_on_data_loss:
                    raise DataLossError(f"{topic}-{p} disappeared")
        return ranges

    def commit(self, end: dict) -> None:
        pass  # offsets live in Spark's checkpoint; nothing to do on the broker

    def stop(self) -> None:
        if self._consumer is not None:
            try:
                self._consumer.close()
            finally:
                self._consumer = None

    # -- executor side ---------------------------------------------------------
    def read(self, partition: InputPartition) -> Iterator[tuple]:
        rng: Range = partition.value if isinstance(partition.value, Range) else partition.rng
        yield from read_range(self.opts, rng, self.include_headers)


def _tp(topic: str, p: int):
    from kafka import TopicPartition
    return TopicPartition(topic, p)


def read_range(opts: Options, rng: Range, include_headers: bool = True) -> Iterator[tuple]:
    """Rows of ``rng`` (offsets ``[start, end)``) in offset order, read_committed.

    Stops when the consumer's position reaches ``end``: the position moves past
    aborted batches and control records too, so gaps never stall the read.
    """
    from kafka import KafkaConsumer
    from kafka.errors import OffsetOutOfRangeError

    tp = _tp(rng.topic, rng.partition)
    c = KafkaConsumer(**opts.consumer_config(f"executor-{rng.topic}-{rng.partition}"),
                      max_poll_records=5000)
    try:
        c.assign([tp])
        c.seek(tp, rng.start)
        deadline = time.monotonic() + opts.poll_timeout_ms / 1000
        pos = rng.start
        while pos < rng.end:
            try:
                got = c.poll(timeout_ms=500)
            except OffsetOutOfRangeError as exc:
                if opts.fail_on_data_loss:
                    raise DataLossError(f"{rng.topic}-{rng.partition}: offsets"
                                        f" [{rng.start}, {rng.end}) no longer in the log: {exc}"
                                        ) from exc
                earliest = c.beginning_offsets([tp])[tp]
                log.warning("%s-%d: data lost, skipping to %d", rng.topic, rng.partition, earliest)
                c.seek(tp, max(earliest, pos))
                continue
            for rec in got.get(tp, ()):
                if rec.offset >= rng.end:
                    break
                if rec.offset < rng.start:
                    continue
                ts = datetime.fromtimestamp(rec.timestamp / 1000, tz=timezone.utc) \
                    if rec.timestamp is not None and rec.timestamp >= 0 else None
                row = (rec.key, rec.value, rec.topic, rec.partition, rec.offset, ts,
                       rec.timestamp_type)
                if include_headers:
                    row += ([(k, v) for k, v in (rec.headers or [])],)
                yield row
            pos = c.position(tp)
            if pos >= rng.end:
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"{rng.topic}-{rng.partition}: read of [{rng.start},"
                                   f" {rng.end}) stuck at offset {pos} for"
                                   f" {opts.poll_timeout_ms} ms")
    finally:
        c.close()
