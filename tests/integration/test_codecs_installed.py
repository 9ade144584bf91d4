"""Acceptance (issue 32): every codec is served by the broker's own dependencies. The wheel built
from this checkout is installed into an empty venv with nothing but its declared dependencies;
the broker run from there reads (and must read: every record is validated) gzip, snappy, lz4
and zstd batches, on a plain, a compacted and a LogAppendTime topic, and rebuilds one under a
topic's compression.type. The clients here are this test's raw frames, from outside that venv."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from minikafka.protocol import records as rec
from minikafka.testing import BrokerProcess
from rawclient import RawClient
from wheel_kit import build_wheel, clean_env, run, venv_with

pytestmark = pytest.mark.slow

CODECS = {"gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


class AloneBroker(BrokerProcess):
    """The broker of the venv, and nothing of this checkout or of the test venv."""

    def environment(self) -> dict[str, str]:
        return dict(clean_env(), PYTHONUNBUFFERED="1")


@pytest.fixture(scope="module")
def alone_python(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("alone")
    env = clean_env()
    # the wheel and what its metadata declares, nothing else (pip's cache serves them offline)
    return venv_with(tmp, env, build_wheel(tmp, env))


def test_the_broker_alone_has_one_library_per_codec(alone_python, tmp_path):
    r = run([alone_python, "-c", "import importlib.metadata as m; print(sorted(d.metadata['Name'].lower() "
              "for d in m.distributions()))"], tmp_path, dict(os.environ, PYTHONPATH=""))
    installed = eval(r.stdout)  # noqa: S307 - our own subprocess's repr of a list of names
    for codec_library in ("lz4", "zstandard", "cramjam"):
        assert codec_library in installed, installed
    for client_only in ("kafka-python", "python-snappy", "confluent-kafka", "pytest"):
        assert client_only not in installed, installed


def test_every_codec_is_read_by_the_broker_alone(alone_python, tmp_path):
    broker = AloneBroker(tmp_path / "data", python=str(alone_python))
    broker.start()
    try:
        with RawClient("127.0.0.1", broker.port) as c:
            topics = {"plain": {}, "compacted": {"cleanup.policy": "compact"},
                      "appendtime": {"message.timestamp.type": "LogAppendTime"},
                      "gzipped": {"compression.type": "gzip"}}
            for name, configs in topics.items():
                assert c.create_topic(name, configs=configs) == 0
            for codec_name, codec in CODECS.items():
                records = [rec.Record(None, None, b"k%d" % i, f"{codec_name}-{i}".encode(), ()) for i in range(3)]
                good = rec.build_batch(records, compression=codec)
                for topic in topics:
                    p = c.produce(topic, 0, good)
                    assert p.error_code == 0, (codec_name, topic, p)
                # the broker decodes what it is sent: a record count above the records is refused
                # as Kafka refuses it (INVALID_RECORD), which only a broker that inflates can see
                short = bytearray(good)
                short[rec.RECORDS_COUNT_OFFSET:rec.RECORDS_COUNT_OFFSET + 4] = (4).to_bytes(4, "big")
                short[rec.LAST_OFFSET_DELTA_OFFSET:rec.LAST_OFFSET_DELTA_OFFSET + 4] = (3).to_bytes(4, "big")
                short[rec.CRC_OFFSET:rec.CRC_OFFSET + 4] = rec.compute_crc(short, 0, len(short)).to_bytes(4, "big")
                p = c.produce("plain", 0, bytes(short))
                assert p.error_code == 87, (codec_name, p)
            for topic in topics:
                _, batches = c.fetch_all(topic, 0)
                values = [r.value.decode() for _, rs in batches for r in rs]
                assert values == [f"{n}-{i}" for n in CODECS for i in range(3)], (topic, values)
                codecs = [h.compression for h, _ in batches]
                assert codecs == ([1] * 4 if topic == "gzipped" else list(CODECS.values())), (topic, codecs)
                if topic == "appendtime":
                    assert all(h.timestamp_type == rec.TimestampType.LOG_APPEND_TIME for h, _ in batches)
        assert "Traceback" not in broker.log_text(), broker.describe()
    finally:
        broker.stop()
