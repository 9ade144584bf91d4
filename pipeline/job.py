"""The shop revenue job: invoices (JSON, read_committed) -> revenue per product -> Parquet.

    python -m pipeline --bootstrap 127.0.0.1:9092 --topic invoices \\
        --output /data/revenue --checkpoint /data/revenue-checkpoint [--source python|kafka]

* ``--source python`` (default): the ``minikafka`` Python data source
  (:mod:`pipeline.source`), needs nothing but pyspark.
* ``--source kafka``: Spark's own Kafka source with
  ``kafka.isolation.level=read_committed``; the connector comes from
  ``--packages org.apache.spark:spark-sql-kafka-0-10_2.13:<spark version>``
  (Maven) or ``--jars a.jar,dir,...`` (local files; a directory stands for
  every ``*.jar`` in it).

Without the connector ``--source kafka`` names the missing jars and stops before
Spark starts. Under ``spark-submit`` its ``--master``, ``--jars`` and ``--packages`` apply.

The aggregate is a streaming ``groupBy(product_id)`` in complete mode whose
state lives in the checkpoint; each micro-batch writes the whole table as a
new snapshot directory ``<output>/snapshot-<batch id>`` (see
:mod:`pipeline.results`).  After a crash Spark re-runs the last planned batch
over the same offsets from the same state version, which rewrites the same
snapshot: restarts neither lose nor double-count invoices.

Invoice JSON (written by ``examples/shop``)::

    {"invoice_id": "inv-p-000001", "purchase_id": "p-000001", "user_id": "u-17",
     "product_id": "prod-03", "quantity": 2, "unit_price_cents": 1999,
     "amount_cents": 3998, "currency": "EUR", "purchased_at": 1700000000000}
"""
from __future__ import annotations

import argparse
import logging
import os
import re
import shutil
import signal
import sys
import threading
from pathlib import Path

log = logging.getLogger("pipeline.job")

INVOICE_SCHEMA = ("invoice_id string, purchase_id string, user_id string, product_id string,"
                  " quantity int, unit_price_cents long, amount_cents long, currency string,"
                  " purchased_at long")

KAFKA_PACKAGE = "org.apache.spark:spark-sql-kafka-0-10_2.13"
# What --packages {KAFKA_PACKAGE}:4.0.0 resolves to for pyspark 4.0.0 (the version
# pyproject pins): the jars --jars must supply instead, by artifact name -> file name.
CONNECTOR_JARS = {
    "spark-sql-kafka-0-10_2.13": "spark-sql-kafka-0-10_2.13-4.0.0.jar",
    "spark-token-provider-kafka-0-10_2.13": "spark-token-provider-kafka-0-10_2.13-4.0.0.jar",
    "kafka-clients": "kafka-clients-3.9.0.jar",
    "commons-pool2": "commons-pool2-2.12.0.jar",
}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    env = os.environ.get
    p = argparse.ArgumentParser(prog="python -m pipeline", description=__doc__.split("\n\n")[0])
    p.add_argument("--bootstrap", default=env("KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:9092"),
                   help="broker address(es) (env KAFKA_BOOTSTRAP_SERVERS)")
    p.add_argument("--topic", default=env("INVOICES_TOPIC", "invoices"))
    p.add_argument("--output", default=env("PIPELINE_OUTPUT", "./revenue"),
                   help="Parquet output directory (snapshots)")
    p.add_argument("--checkpoint", default=env("PIPELINE_CHECKPOINT", "./revenue-checkpoint"))
    p.add_argument("--source", choices=("python", "kafka"), default=env("PIPELINE_SOURCE", "python"))
    p.add_argument("--master", default=env("SPARK_MASTER"),
                   help="Spark master (env SPARK_MASTER; default local[2], or spark-submit's --master)")
    p.add_argument("--starting-offsets", default="earliest")
    p.add_argument("--trigger", default="2 seconds", help="processing-time trigger interval")
    p.add_argument("--shuffle-partitions", type=int, default=2,
                   help="state store partitions (fixed for the life of a checkpoint)")
    p.add_argument("--max-offsets-per-trigger", type=int, default=None,
                   help="--source kafka only: rate limit per micro-batch")
    p.add_argument("--jars", default=env("SPARK_KAFKA_JARS"),
                   help="comma-separated local jars or directories of jars (spark.jars),"
                        " e.g. the Kafka connector (env SPARK_KAFKA_JARS)")
    p.add_argument("--packages", default=env("SPARK_JARS_PACKAGES"),
                   help="Maven coordinates (spark.jars.packages)")
    p.add_argument("--keep-snapshots", type=int, default=3)
    p.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                   help="extra Spark configuration; repeatable")
    p.add_argument("--log-level", default="WARN", help="Spark log level")
    return p.parse_args(argv)


def expand_jars(spec: str | None) -> str | None:
    """``--jars`` -> ``spark.jars``: a directory stands for its ``*.jar`` (sorted)."""
    out = []
    for item in (spec or "").split(","):
        item = item.strip()
        if item and Path(item).is_dir():
            out += sorted(str(j) for j in Path(item).glob("*.jar"))
        elif item:
            out.append(item)
    return ",".join(out) or None


def build_spark(args: argparse.Namespace):
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession
    b = SparkSession.builder
    if args.master or not launched_by_spark_submit():
        # a master set here would override spark-submit's --master
        b = b.master(args.master or "local[2]")
    b = (b.appName(f"minikafka-shop-revenue-{args.source}")
         .config("spark.sql.shuffle.partitions", str(args.shuffle_partitions))
         .config("spark.ui.enabled", "false")
         .config("spark.ui.showConsoleProgress", "false")
         .config("spark.sql.session.timeZone", "UTC")
         .config("spark.sql.streaming.minBatchesToRetain", "10"))
    jars = expand_jars(args.jars)
    if jars:
        b = b.config("spark.jars", jars)
    if args.packages:
        b = b.config("spark.jars.packages", args.packages)
    for kv in args.conf:
        k, _, v = kv.partition("=")
        b = b.config(k, v)
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel(args.log_level)
    return spark


def launched_by_spark_submit() -> bool:
    # spark-submit starts the JVM first and hands its gateway to the Python driver
    return "PYSPARK_GATEWAY_PORT" in os.environ


def missing_connector(args: argparse.Namespace) -> str | None:
    """For ``--source kafka``: why Spark's Kafka source cannot load, or None.

    Only what ``--jars`` names is checked; ``--packages``, a ``spark.jars*`` ``--conf``
    or spark-submit (its own --jars/--packages) bring the connector some other way."""
    if (args.source != "kafka" or args.packages or launched_by_spark_submit()
            or any(kv.startswith("spark.jars") for kv in args.conf)):
        return None
    given = [j for j in (expand_jars(args.jars) or "").split(",") if j]
    absent = [j for j in given if not Path(j).is_file()]
    # Maven's file names, or Ivy's (spark.jars.packages, as docker/Dockerfile.spark bakes
    # them): "<group>_<artifact>-<version>.jar", e.g. org.apache.kafka_kafka-clients-3.9.0.jar
    names = [re.sub(r"^[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+_", "", Path(j).name) for j in given]
    missing = [jar for artifact, jar in CONNECTOR_JARS.items()
               if not any(n.startswith(artifact + "-") and n[len(artifact) + 1:][:1].isdigit()
                          for n in names)]
    if not (missing or absent):
        return None
    why = "; ".join(filter(None, [
        f"missing {', '.join(missing)}" if missing else "",
        f"not found: {', '.join(absent)}" if absent else ""]))
    return (f"--source kafka needs Spark's Kafka connector, which pyspark does not ship: {why}."
            f" Put the jars in a directory and pass --jars DIR (or SPARK_KAFKA_JARS=DIR),"
            f" or let Spark fetch them from Maven: --packages {KAFKA_PACKAGE}:4.0.0")


def read_invoices_stream(spark, args: argparse.Namespace):
    """The raw Kafka-shaped stream (key, value, topic, partition, offset, ...)."""
    if args.source == "kafka":
        r = (spark.readStream.format("kafka")
             .option("kafka.bootstrap.servers", args.bootstrap)
             .option("subscribe", args.topic)
             .option("kafka.isolation.level", "read_committed")
             .option("startingOffsets", args.starting_offsets)
             .option("failOnDataLoss", "true")
             .option("includeHeaders", "true"))
        if args.max_offsets_per_trigger:
            r = r.option("maxOffsetsPerTrigger", str(args.max_offsets_per_trigger))
        return r.load()
    from .source import MiniKafkaDataSource
    spark.dataSource.register(MiniKafkaDataSource)
    return (spark.readStream.format(MiniKafkaDataSource.name())
            .option("kafka.bootstrap.servers", args.bootstrap)
            .option("subscribe", args.topic)
            .option("kafka.isolation.level", "read_committed")
            .option("startingOffsets", args.starting_offsets)
            .option("failOnDataLoss", "true")
            .load())


def revenue_per_product(raw):
    """invoices JSON -> (product_id, orders, quantity, revenue_cents); a streaming aggregate."""
    from pyspark.sql import functions as F
    inv = (raw.select(F.from_json(F.col("value").cast("string"), INVOICE_SCHEMA).alias("i"))
           .select("i.*")
           .where(F.col("product_id").isNotNull()))
    return (inv.groupBy("product_id")
            .agg(F.count(F.lit(1)).alias("orders"),
                 F.sum("quantity").cast("long").alias("quantity"),
                 F.sum("amount_cents").cast("long").alias("revenue_cents")))


def snapshot_writer(output: str, keep: int):
    """foreachBatch function: write the complete table as ``snapshot-<batch id>``."""
    from .results import complete_snapshots, snapshot_name
    local = "://" not in output or output.startswith("file://")
    local_dir = Path(output.removeprefix("file://"))

    def write(batch_df, batch_id: int) -> None:
        path = f"{output.rstrip('/')}/{snapshot_name(batch_id)}"
        # overwrite: a batch re-run after a crash replaces its own snapshot
        batch_df.coalesce(1).write.mode("overwrite").parquet(path)
        print(f"pipeline: batch {batch_id} -> {path}", flush=True)
        if local and keep > 0:
            for _, old in complete_snapshots(local_dir)[:-keep]:
                shutil.rmtree(old, ignore_errors=True)

    return write


def start_query(spark, args: argparse.Namespace):
    agg = revenue_per_product(read_invoices_stream(spark, args))
    return (agg.writeStream.outputMode("complete")
            .foreachBatch(snapshot_writer(args.output, args.keep_snapshots))
            .option("checkpointLocation", args.checkpoint)
            .trigger(processingTime=args.trigger)
            .queryName(f"shop_revenue_{args.source}")
            .start())


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="[%(asctime)s] %(levelname)s %(message)s")
    problem = missing_connector(args)
    if problem:
        print(f"pipeline: {problem}", file=sys.stderr, flush=True)
        return 2
    spark = build_spark(args)
    try:
        query = start_query(spark, args)
    except Exception as exc:
        if "Failed to find data source: kafka" not in str(exc):
            raise
        # the connector was expected from spark-submit, --packages or --conf and is not there
        print(f"pipeline: Spark has no Kafka source: give spark-submit --packages {KAFKA_PACKAGE}:4.0.0"
              f" or --jars with {', '.join(CONNECTOR_JARS.values())}", file=sys.stderr, flush=True)
        spark.stop()
        return 2
    print(f"pipeline: started query {query.id} (source={args.source}, topic={args.topic},"
          f" master={spark.sparkContext.master}, output={args.output},"
          f" checkpoint={args.checkpoint})", flush=True)

    stopping = threading.Event()

    def on_signal(signum, frame):  # graceful stop: finish the batch in flight
        stopping.set()
        threading.Thread(target=query.stop, daemon=True).start()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        query.awaitTermination()
    except Exception as exc:  # StreamingQueryException: report and fail
        if not stopping.is_set():
            print(f"pipeline: query failed: {exc}", file=sys.stderr, flush=True)
            return 1
    finally:
        spark.stop()
    return 0
