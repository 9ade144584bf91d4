from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from minikafka.broker.config import DEFS, BrokerConfig, ConfigError

ROOT = Path(__file__).resolve().parents[2]


def test_defaults_are_kafkas_embedded_ones():
    c = BrokerConfig.load()
    assert c["listeners"] == ["PLAINTEXT://127.0.0.1:9092"]
    assert c.log_dir == "./data"
    assert c["num.partitions"] == 1 and c["transaction.state.log.num.partitions"] == 50
    assert c["advertised.listeners"] == c["listeners"]


def test_file_then_overrides(tmp_path):
    f = tmp_path / "b.properties"
    f.write_text("num.partitions=3\nlog.retention.hours=2\n# comment\nlog.dirs = /x\n")
    c = BrokerConfig.load(str(f), ["num.partitions=5"])
    assert c["num.partitions"] == 5
    assert c["log.retention.ms"] == 2 * 3600 * 1000
    assert c.log_dir == "/x"


@pytest.mark.parametrize("item,key", [
    ("num.partitions=zero", "num.partitions"),
    ("num.partitions=0", "num.partitions"),
    ("auto.create.topics.enable=maybe", "auto.create.topics.enable"),
    ("default.replication.factor=3", "default.replication.factor"),
    ("listeners=localhost:9092", "listeners"),
])
def test_invalid_values_name_the_key(item, key):
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        BrokerConfig.load(overrides=[item])


def test_unknown_key_is_warned(caplog):
    with caplog.at_level(logging.WARNING):
        BrokerConfig.load(overrides=["no.such.key=1"])
    assert "no.such.key" in caplog.text


def test_conf_file_documents_every_key():
    text = (ROOT / "conf" / "broker.properties").read_text()
    missing = [k for k in DEFS if f"#{k}=" not in text and f"\n{k}=" not in text]
    assert not missing


def test_cli_refuses_invalid_value_at_start(tmp_path):
    r = subprocess.run([sys.executable, "-m", "minikafka", "--override", "log.segment.bytes=abc",
                        "--override", f"log.dirs={tmp_path}"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 2
    assert "log.segment.bytes" in r.stderr


def test_cli_reports_a_port_in_use_in_one_line(tmp_path):
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        r = subprocess.run([sys.executable, "-m", "minikafka", "--override", f"listeners=PLAINTEXT://127.0.0.1:{port}",
                            "--override", f"log.dirs={tmp_path}"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 1
    assert "cannot start" in r.stderr and "Traceback" not in r.stderr


# Issue 16: a newcomer's bad value is one line on stderr naming the key and what is
# allowed (Kafka's ConfigException text), exit code 2, never a traceback. The broker
# is started for real; each of these fails before it binds or touches log.dirs.
@pytest.mark.parametrize("args,line", [
    (["--override", "log.retention.ms=-5"],
     "Invalid value -5 for configuration log.retention.ms: Value must be at least -1"),
    (["--override", "log.retention.hours=-5"],
     "Invalid value -5 for configuration log.retention.hours: Value must be at least -1"),
    (["--override", "log.cleanup.policy=banana"],
     "Invalid value banana for configuration log.cleanup.policy: String must be one of: compact, delete"),
    (["--override", "log.cleanup.policy=compact,banana"],
     "Invalid value banana for configuration log.cleanup.policy: String must be one of: compact, delete"),
    (["--override", "compression.type=banana"],
     "Invalid value banana for configuration compression.type: String must be one of:"
     " uncompressed, zstd, lz4, snappy, gzip, producer"),
    (["--override", "log.message.timestamp.type=banana"],
     "Invalid value banana for configuration log.message.timestamp.type: String must be one of:"
     " CreateTime, LogAppendTime"),
    (["--override", "num.partitions=0"],
     "Invalid value 0 for configuration num.partitions: Value must be at least 1"),
    (["--override", "metrics.listener=nonsense"],
     "Invalid value nonsense for configuration metrics.listener: Expected host:port (port 0-65535),"
     " or nothing to disable the endpoint"),
    (["--log-level", "BANANA"],
     "Invalid value BANANA for --log-level: String must be one of: TRACE, DEBUG, INFO, WARN, ERROR, FATAL"),
])
def test_cli_invalid_value_is_one_line_naming_key_and_allowed_values(tmp_path, args, line):
    data = tmp_path / "data"
    r = subprocess.run([sys.executable, "-m", "minikafka", "--override", "listeners=PLAINTEXT://127.0.0.1:0",
                        "--override", f"log.dirs={data}", *args],
                       capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert r.returncode == 2, r.stderr
    assert r.stderr.splitlines() == [f"minikafka: configuration error: {line}"
                                     if "--log-level" not in args else f"minikafka: {line}"]
    assert r.stdout == "" and not data.exists()


@pytest.mark.parametrize("env,args,line", [
    ({"MINIKAFKA_LOG_LEVEL": "loud"}, [],
     "minikafka: Invalid value loud for MINIKAFKA_LOG_LEVEL: String must be one of:"
     " TRACE, DEBUG, INFO, WARN, ERROR, FATAL"),
    ({}, ["--log-config", "no-such-logging.ini"],
     "minikafka: cannot read --log-config no-such-logging.ini: no such file"),
])
def test_cli_bad_logging_setting_is_one_line(tmp_path, env, args, line):
    r = subprocess.run([sys.executable, "-m", "minikafka", "--override", f"log.dirs={tmp_path / 'data'}", *args],
                       capture_output=True, text=True, timeout=60, cwd=ROOT,
                       env={**os.environ, **env})
    assert r.returncode == 2 and r.stderr.splitlines() == [line]


def test_log_levels_are_log4js_with_pythons_names_too():
    from minikafka.broker.cli import parse_log_level
    assert [parse_log_level(n) for n in ("trace", "DEBUG", " info ", "WARN", "error", "FATAL")] == \
        [5, logging.DEBUG, logging.INFO, logging.WARNING, logging.ERROR, logging.CRITICAL]
    assert parse_log_level("warning") == logging.WARNING and parse_log_level("CRITICAL") == logging.CRITICAL
    with pytest.raises(ValueError, match="Invalid value BANANA for --log-level"):
        parse_log_level("BANANA")


@pytest.mark.parametrize("overrides, words", [
    ({"group.consumer.session.timeout.ms": "1000"},
     "group.consumer.session.timeout.ms must be greater than or equal to group.consumer.min.session.timeout.ms"),
    ({"group.consumer.heartbeat.interval.ms": "20000"},
     "group.consumer.heartbeat.interval.ms must be less than or equal to group.consumer.max.heartbeat.interval.ms"),
    ({"group.consumer.min.session.timeout.ms": "1000", "group.consumer.session.timeout.ms": "4000",
      "group.consumer.heartbeat.interval.ms": "5000"},
     "group.consumer.heartbeat.interval.ms must be less than group.consumer.session.timeout.ms"),
    ({"group.consumer.assignors": "uniform,sticky"}, "group.consumer.assignors"),
    ({"group.coordinator.rebalance.protocols": "consumer"}, "group.coordinator.rebalance.protocols"),
])
def test_kip848_settings_are_checked_together(overrides, words):
    with pytest.raises(ConfigError, match=words):
        BrokerConfig.from_dict(overrides)
