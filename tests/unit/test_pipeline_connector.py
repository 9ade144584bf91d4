"""`python -m pipeline --source kafka` without Spark's Kafka connector names the missing
jars and where to put them, in one line, before starting Spark (issue 16). No pyspark
needed: the check runs first."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from pipeline.job import CONNECTOR_JARS, KAFKA_PACKAGE, missing_connector, parse_args

ROOT = Path(__file__).resolve().parents[2]


def run_pipeline(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pipeline", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=60, env={"PATH": "/usr/bin:/bin"})


def test_kafka_source_without_jars_names_them_and_where_they_go():
    r = run_pipeline("--source", "kafka", "--topic", "invoices")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    [line] = r.stderr.splitlines()
    assert line.startswith("pipeline: --source kafka needs Spark's Kafka connector")
    for jar in CONNECTOR_JARS.values():
        assert jar in line
    assert "--jars DIR" in line and "SPARK_KAFKA_JARS" in line and f"--packages {KAFKA_PACKAGE}:4.0.0" in line


def test_kafka_source_with_some_jars_names_the_rest(tmp_path):
    jars = tmp_path / "jars"
    jars.mkdir()
    for jar in list(CONNECTOR_JARS.values())[:-1]:
        (jars / jar).write_bytes(b"PK")
    r = run_pipeline("--source", "kafka", "--jars", f"{jars},{tmp_path / 'gone.jar'}")
    assert r.returncode == 2
    [line] = r.stderr.splitlines()
    last = list(CONNECTOR_JARS.values())[-1]
    assert f"missing {last}; not found: {tmp_path / 'gone.jar'}." in line


def test_connector_check_leaves_other_ways_alone(tmp_path, monkeypatch):
    def problem(*args: str):
        return missing_connector(parse_args(list(args)))

    monkeypatch.delenv("SPARK_KAFKA_JARS", raising=False)
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    assert problem("--source", "kafka") is not None
    assert problem("--source", "python") is None
    assert problem("--source", "kafka", "--packages", f"{KAFKA_PACKAGE}:4.0.0") is None
    assert problem("--source", "kafka", "--conf", f"spark.jars.packages={KAFKA_PACKAGE}:4.0.0") is None
    jars = tmp_path / "jars"  # other versions of kafka-clients and commons-pool2 are fine
    jars.mkdir()
    for name in ("spark-sql-kafka-0-10_2.13-4.0.0.jar", "spark-token-provider-kafka-0-10_2.13-4.0.0.jar",
                 "kafka-clients-3.9.1.jar", "commons-pool2-2.12.1.jar"):
        (jars / name).write_bytes(b"PK")
    assert problem("--source", "kafka", "--jars", str(jars)) is None
    ivy = tmp_path / "ivy"  # as Spark's Ivy names them (docker/Dockerfile.spark bakes those)
    ivy.mkdir()
    for name in ("org.apache.spark_spark-sql-kafka-0-10_2.13-4.0.0.jar",
                 "org.apache.spark_spark-token-provider-kafka-0-10_2.13-4.0.0.jar",
                 "org.apache.kafka_kafka-clients-3.9.0.jar", "org.apache.commons_commons-pool2-2.12.0.jar",
                 "org.lz4_lz4-java-1.8.0.jar"):
        (ivy / name).write_bytes(b"PK")
    assert problem("--source", "kafka", "--jars", str(ivy)) is None
    (ivy / "org.apache.kafka_kafka-clients-3.9.0.jar").unlink()
    assert "missing kafka-clients-3.9.0.jar." in problem("--source", "kafka", "--jars", str(ivy))
    monkeypatch.setenv("SPARK_KAFKA_JARS", str(jars))
    assert problem("--source", "kafka") is None
    monkeypatch.delenv("SPARK_KAFKA_JARS")
    monkeypatch.setenv("PYSPARK_GATEWAY_PORT", "1")  # spark-submit brings its own --jars/--packages
    assert problem("--source", "kafka") is None
