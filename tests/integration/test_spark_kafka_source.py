"""Spark's built-in Kafka source against the broker: offsets, options, schema.

One Spark application (a subprocess, ``local[2]``) over a topic with
committed, aborted and open transactions (so offsets have gaps from control
records and aborted batches), with ``kafka.isolation.level=read_committed``
and ``failOnDataLoss=true`` throughout:

* batch ``startingOffsets=earliest``/``endingOffsets=latest``: exactly the
  committed records, nothing of the open transaction;
* batch from a JSON ``startingOffsets`` (a mid-log offset, ``-2``);
* streaming with ``maxOffsetsPerTrigger`` and ``Trigger.AvailableNow``: several
  micro-batches, every committed record exactly once;
* streaming from ``startingOffsets=latest``: only what is committed after the
  query started;
* the source's schema is the one ``minikafka.pipeline.source`` reproduces.

Needs the connector jars (see ``test_spark_pipeline.py``); skipped otherwise.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from harness import REPO_ROOT, spark_env, tail, wait_transaction_done

pytest.importorskip("pyspark", reason="pyspark not installed (pip install -e '.[spark]')")

from test_spark_pipeline import (CONNECTOR_JARS, JARS_ENV, KAFKA_CLIENTS,  # noqa: E402
                                 SPARK_VERSION, java_missing, kafka_connector_jars)

from minikafka.pipeline.source import KAFKA_SCHEMA  # noqa: E402

pytestmark = pytest.mark.slow

PROBE = r'''
import json, sys, time
from kafka import KafkaProducer
from pyspark.sql import SparkSession

bootstrap, topic, jars, ckpt = sys.argv[1:5]
spark = (SparkSession.builder.master("local[2]").appName("kafka-source-probe")
         .config("spark.jars", jars).config("spark.ui.enabled", "false")
         .config("spark.ui.showConsoleProgress", "false")
         .config("spark.sql.shuffle.partitions", "2").config("spark.driver.memory", "512m")
         .getOrCreate())
spark.sparkContext.setLogLevel("WARN")

def src(reader):
    return (reader.format("kafka").option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", topic).option("kafka.isolation.level", "read_committed")
            .option("failOnDataLoss", "true").option("includeHeaders", "true"))

out = {}
df = src(spark.read).option("startingOffsets", "earliest").option("endingOffsets", "latest").load()
out["schema"] = df.schema.simpleString()
rows = df.select("value", "partition", "offset").collect()
out["batch_all"] = sorted(r.value.decode() for r in rows)
p1 = sorted(r.offset for r in rows if r.partition == 1)
mid = p1[len(p1) // 2]
out["json_from"] = mid
js = json.dumps({topic: {"0": -2, "1": mid}})
rows = src(spark.read).option("startingOffsets", js).option("endingOffsets", "latest").load() \
    .select("value", "partition", "offset").collect()
out["batch_json"] = sorted(r.value.decode() for r in rows)

q = (src(spark.readStream).option("startingOffsets", "earliest").option("maxOffsetsPerTrigger", "7")
     .load().selectExpr("CAST(value AS STRING) AS v").writeStream.format("memory")
     .queryName("capped").option("checkpointLocation", ckpt + "/capped")
     .trigger(availableNow=True).start())
q.awaitTermination(120)
out["capped"] = sorted(r.v for r in spark.sql("SELECT v FROM capped").collect())
out["capped_batches"] = sum(1 for p in q.recentProgress if p["numInputRows"] > 0)

q = (src(spark.readStream).option("startingOffsets", "latest").load()
     .selectExpr("CAST(value AS STRING) AS v").writeStream.format("memory")
     .queryName("latest").option("checkpointLocation", ckpt + "/latest")
     .trigger(processingTime="500 milliseconds").start())
deadline = time.time() + 60
while not q.recentProgress and time.time() < deadline:   # offsets resolved
    time.sleep(0.1)
p = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=topic + "-late")
p.init_transactions()
for commit, tag in ((True, "late-committed"), (False, "late-aborted")):
    p.begin_transaction()
    for i in range(3):
        p.send(topic, value=f"{tag}-{i}".encode(), partition=1)  # p0 is held by an open txn
    p.commit_transaction() if commit else p.abort_transaction()
p.close()
while time.time() < deadline:
    got = sorted(r.v for r in spark.sql("SELECT v FROM latest").collect())
    if len(got) >= 3:
        break
    time.sleep(0.2)
out["latest"] = got
q.stop()
spark.stop()
print("PROBE " + json.dumps(out), flush=True)
'''


def test_spark_kafka_source_offsets_and_options(broker, unique_topic, tmp_path):
    reason = java_missing()
    if reason:
        pytest.skip(reason)
    jars = kafka_connector_jars()
    if jars is None:
        pytest.skip(f"Spark's Kafka connector jars not supplied: set {JARS_ENV} to"
                    f" {', '.join(CONNECTOR_JARS)} and {KAFKA_CLIENTS}.jar (pyspark {SPARK_VERSION})")
    from kafka import KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic
    topic = unique_topic("kafka-src")
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    admin.create_topics([NewTopic(topic, 2, 1)])
    admin.close()

    committed = []
    p = KafkaProducer(bootstrap_servers=broker.bootstrap, transactional_id=f"{topic}-a")
    p.init_transactions()
    opener = KafkaProducer(bootstrap_servers=broker.bootstrap, transactional_id=f"{topic}-b")
    opener.init_transactions()
    try:
        n = 0
        for t in range(9):  # every third aborted
            p.begin_transaction()
            vals = []
            for _ in range(6):
                v = f"v{n:03d}"
                n += 1
                p.send(topic, value=v.encode(), partition=n % 2)
                vals.append(v)
            if t % 3 == 2:
                p.abort_transaction()
            else:
                p.commit_transaction()
                committed.extend(vals)
        wait_transaction_done(broker.bootstrap, f"{topic}-a")  # the markers follow the EndTxn answer
        # an open transaction at the very end of partition 0 (holds its LSO only)
        opener.begin_transaction()
        opener.send(topic, value=b"open-0", partition=0)
        opener.flush()

        proc = subprocess.run([sys.executable, "-c", PROBE, broker.bootstrap, topic, jars,
                               str(tmp_path / "ckpt")], cwd=REPO_ROOT, capture_output=True,
                              text=True, timeout=240, env=dict(os.environ, **spark_env(tmp_path), PYTHONUNBUFFERED="1"))
        lines = [l for l in proc.stdout.splitlines() if l.startswith("PROBE ")]
        assert proc.returncode == 0 and lines, (
            f"probe failed ({proc.returncode})\nstdout:\n{tail(proc.stdout, 30)}\nstderr:\n"
            + tail("\n".join(l for l in proc.stderr.splitlines()
                             if not l.lstrip().startswith("at ")), 60) + broker.describe())
        out = json.loads(lines[-1][len("PROBE "):])

        assert out["schema"] == KAFKA_SCHEMA.simpleString(), \
            "the minikafka Python source must have the Kafka source's schema"
        assert out["batch_all"] == sorted(committed)
        # JSON start: all of partition 0, partition 1 from a mid-log offset
        assert set(out["batch_json"]) <= set(committed)
        assert {v for v in committed if int(v[1:]) % 2 == 1} <= set(out["batch_json"]), \
            "partition 0 (-2 = earliest) must be complete"
        assert len(out["batch_json"]) < len(committed)
        assert out["capped"] == sorted(committed), "maxOffsetsPerTrigger run lost or repeated records"
        assert out["capped_batches"] >= 3, f"maxOffsetsPerTrigger=7 gave {out['capped_batches']} batches"
        assert out["latest"] == [f"late-committed-{i}" for i in range(3)]
    finally:
        opener.close()
        p.close()
