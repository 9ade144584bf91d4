"""The Java consumer (kafka-clients 4.1, classic group protocol) subscribes with a
group, reads everything, commits; a second run of the same group resumes after it."""
from __future__ import annotations

import json
import subprocess
import uuid

from rawclient import RawClient, make_batch


def run_group(java_client, bootstrap, topic, group, expected):
    r = subprocess.run(["java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp",
                        java_client.classpath, "TxnTool", "group-consume", "--bootstrap", bootstrap, "--topics", topic,
                        "--group", group, "--expected", str(expected), "--timeout-ms", "30000"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    lines = [json.loads(x) for x in r.stdout.splitlines() if x.startswith("{")]
    return [d for d in lines if d["type"] == "record"], lines[-1]


def test_java_consumer_group_commits_and_resumes(broker, java_client):
    topic, group = f"jgroup-{uuid.uuid4().hex[:6]}", f"jg-{uuid.uuid4().hex[:6]}"
    with RawClient.to(broker.bootstrap) as c:
        assert c.create_topic(topic, 3) == 0
        for p in range(3):
            assert c.produce(topic, p, make_batch([b"a%d-%d" % (p, i) for i in range(10)])).error_code == 0
    records, summary = run_group(java_client, broker.bootstrap, topic, group, 30)
    assert summary["assignment"] == 3 and len(records) == 30
    assert {r["value"] for r in records} == {f"a{p}-{i}" for p in range(3) for i in range(10)}
    with RawClient.to(broker.bootstrap) as c:
        for p in range(3):
            assert c.produce(topic, p, make_batch([b"b%d" % p])).error_code == 0
    records, _ = run_group(java_client, broker.bootstrap, topic, group, 3)
    assert sorted(r["value"] for r in records) == ["b0", "b1", "b2"]  # resumed from the committed offsets
