from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import pytest

from broker.config import DEFS, BrokerConfig, ConfigError

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
    r = subprocess.run([sys.executable, "-m", "broker", "--override", "log.segment.bytes=abc",
                        "--override", f"log.dirs={tmp_path}"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 2
    assert "log.segment.bytes" in r.stderr


def test_cli_reports_a_port_in_use_in_one_line(tmp_path):
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        r = subprocess.run([sys.executable, "-m", "broker", "--override", f"listeners=PLAINTEXT://127.0.0.1:{port}",
                            "--override", f"log.dirs={tmp_path}"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 1
    assert "cannot start" in r.stderr and "Traceback" not in r.stderr
