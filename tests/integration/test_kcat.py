"""kcat (Debian's librdkafka CLI) against the broker: metadata, keyed produce with
headers, consume, and a read_committed consume that hides an aborted transaction."""
from __future__ import annotations

import json
import shutil
import subprocess
import uuid

import pytest

from harness import wait_transaction_done
from rawclient import RawClient

pytestmark = pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is not installed (apt-get install kcat)")


def kcat(bootstrap, *args, input_text=None, timeout=60):
    r = subprocess.run(["kcat", "-b", bootstrap, *args], input=input_text, capture_output=True, text=True,
                       timeout=timeout)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_metadata_listing(broker):
    topic = f"kcat-meta-{uuid.uuid4().hex[:6]}"
    with RawClient.to(broker.bootstrap) as c:
        assert c.create_topic(topic, 3) == 0
    meta = json.loads(kcat(broker.bootstrap, "-L", "-J", "-t", topic))
    (t,) = [t for t in meta["topics"] if t["topic"] == topic]
    assert len(t["partitions"]) == 3 and meta["brokers"][0]["id"] == 1


def test_produce_and_consume_with_keys_and_headers(broker):
    topic = f"kcat-rt-{uuid.uuid4().hex[:6]}"
    with RawClient.to(broker.bootstrap) as c:
        assert c.create_topic(topic, 1) == 0
    lines = "".join(f"k{i}:v{i}\n" for i in range(200))
    kcat(broker.bootstrap, "-P", "-t", topic, "-p", "0", "-K", ":", "-H", "h=x", "-z", "lz4", input_text=lines)
    out = kcat(broker.bootstrap, "-C", "-t", topic, "-p", "0", "-o", "beginning", "-e", "-J")
    msgs = [json.loads(line) for line in out.splitlines() if line.strip()]
    assert [(m["key"], m["payload"], m["offset"]) for m in msgs] == [(f"k{i}", f"v{i}", i) for i in range(200)]
    assert msgs[0]["headers"] == ["h", "x"]


def test_read_committed_hides_aborted_records(broker):
    from confluent_kafka import Producer
    topic = f"kcat-rc-{uuid.uuid4().hex[:6]}"
    with RawClient.to(broker.bootstrap) as c:
        assert c.create_topic(topic, 1) == 0
    tid = f"kcat-{uuid.uuid4().hex[:6]}"
    p = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": tid})
    p.init_transactions(10)
    for n, commit in enumerate((True, False, True)):
        p.begin_transaction()
        for i in range(5):
            p.produce(topic, value=f"t{n}-{i}", partition=0)
        p.flush(10)
        p.commit_transaction(10) if commit else p.abort_transaction(10)
    wait_transaction_done(broker.bootstrap, tid)  # kcat -e stops at the LSO: wait for the last markers
    committed = kcat(broker.bootstrap, "-C", "-t", topic, "-p", "0", "-o", "beginning", "-e",
                     "-X", "isolation.level=read_committed", "-f", "%s\n").split()
    assert committed == [f"t{n}-{i}" for n in (0, 2) for i in range(5)]
    everything = kcat(broker.bootstrap, "-C", "-t", topic, "-p", "0", "-o", "beginning", "-e",
                      "-X", "isolation.level=read_uncommitted", "-f", "%s\n").split()
    assert everything == [f"t{n}-{i}" for n in range(3) for i in range(5)]
