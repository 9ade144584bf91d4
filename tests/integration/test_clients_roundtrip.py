"""Acceptance: every real client round-trips keyed records with headers.

For each client (kafka-python, confluent-kafka, aiokafka, Java kafka-clients
4.1.0) and each compression codec: create a 6-partition topic with that
client's admin API, produce 10,000 keyed records with headers (acks=all),
read them back with assign + seek-to-beginning, and check every key, value,
header and timestamp byte for byte, per-partition order, contiguous offsets,
that acknowledged (partition, offset) pairs are where the records are, and
that ListOffsets(latest) agrees.

One broker serves the whole module.  The ``none`` codec cases are the quick
smoke set; the compressed ones are marked slow.
"""
from __future__ import annotations

import pytest

from harness import (CLIENTS, COMPRESSIONS, consume, create_topic, end_offsets,
                     make_record, now_ms, produce, verify_records)

COUNT = 10_000
PARTITIONS = 6

# Timestamps slightly in the past (well inside retention), fixed per module.
TS_BASE = now_ms() - 60_000

CASES = [
    pytest.param(client, comp, id=f"{client}-{comp}",
                 marks=[pytest.mark.slow] if comp != "none" else [])
    for client in CLIENTS for comp in COMPRESSIONS
]


@pytest.mark.parametrize("client,compression", CASES)
def test_roundtrip(broker, unique_topic, request, client, compression):
    java = request.getfixturevalue("java_client") if client == "java" else None
    topic = unique_topic(f"rt-{client}-{compression}")
    tag = f"{client}/{compression}"

    create_topic(client, broker.bootstrap, topic, PARTITIONS, java=java, broker=broker)

    sent = produce(client, broker.bootstrap, topic, tag, COUNT, TS_BASE,
                   compression=compression, acks="all", linger_ms=20, java=java, broker=broker)
    sent.check(COUNT, broker.describe())

    records = consume(client, broker.bootstrap, topic, PARTITIONS, COUNT, timeout=60,
                      java=java, broker=broker)
    per_part = verify_records(records, tag, COUNT, TS_BASE, partitions=PARTITIONS,
                              context=broker.describe())
    assert sorted(per_part) == list(range(PARTITIONS)), (
        f"records landed in partitions {sorted(per_part)}, expected all of 0..{PARTITIONS - 1}")

    # Offsets: contiguous from 0 in every partition (no transactions here), and
    # the produce acks named exactly the positions we read the records from.
    by_part: dict[int, list[int]] = {}
    position: dict[int, tuple[int, int]] = {}
    for rec in records:
        by_part.setdefault(rec[0], []).append(rec[1])
        position[int(rec[4][0][1])] = (rec[0], rec[1])  # header idx = i
    for p, offs in by_part.items():
        assert offs == list(range(len(offs))), (
            f"partition {p}: offsets not contiguous from 0: first {offs[:5]}, "
            f"{len(offs)} records, last {offs[-1]}")
    wrong = [(i, sent.acks[i], position.get(i)) for i in sorted(sent.acks)
             if sent.acks[i] != position.get(i)]
    assert not wrong, (f"{len(wrong)} records not at their acknowledged (partition, offset);"
                       f" first (i, acked, read): {wrong[:5]}" + broker.describe())

    latest = end_offsets(broker.bootstrap, topic, PARTITIONS)
    expected = {p: len(offs) for p, offs in by_part.items()}
    assert latest == expected, f"ListOffsets latest {latest} != records per partition {expected}"


def test_java_records_match_python(java_client):
    """ClientTool generates exactly the records harness.make_record describes
    (no broker involved), so Java- and Python-produced data verify alike."""
    res = java_client.run("generate", "--bootstrap", "unused", "--tag", "gen/x",
                          "--count", 300, "--start", 9700, "--ts-base", TS_BASE)
    import base64
    got = [(base64.b64decode(o["k"]), base64.b64decode(o["v"]),
            [(k, base64.b64decode(v)) for k, v in o["h"]], o["ts"])
           for o in res.json_lines() if o.get("type") == "record"]
    want = [tuple(make_record("gen/x", i, TS_BASE)) for i in range(9700, 10000)]
    assert got == want


@pytest.mark.parametrize("acks", ["1", "0"])
@pytest.mark.parametrize("client", ["kafka-python", "confluent-kafka"])
def test_weaker_acks(broker, unique_topic, client, acks):
    """acks=1 behaves like acks=all on one node; acks=0 gets no response from
    the broker (a stray response would desynchronise the client) yet every
    record lands."""
    topic = unique_topic(f"acks{acks}-{client}")
    n = 2000
    tag = f"acks{acks}"
    create_topic("kafka-python", broker.bootstrap, topic, PARTITIONS, broker=broker)
    sent = produce(client, broker.bootstrap, topic, tag, n, TS_BASE, compression="lz4",
                   acks=acks, broker=broker)
    sent.check(n, broker.describe())
    records = consume(client, broker.bootstrap, topic, PARTITIONS, n, timeout=30, broker=broker)
    verify_records(records, tag, n, TS_BASE, PARTITIONS, context=broker.describe())
    if acks == "1":
        where = {int(r[4][0][1]): (r[0], r[1]) for r in records}
        assert all(where[i] == pos for i, pos in sent.acks.items()), "acked positions differ"
    # The connection state survived: a second batch through a fresh producer.
    again = produce(client, broker.bootstrap, topic, tag, 10, TS_BASE, start=n, acks="all",
                    broker=broker)
    again.check(10, broker.describe())


@pytest.mark.slow
def test_cross_client_mixed_codecs(broker, unique_topic, request):
    """Four producers with four codecs into one topic; every client reads all
    of it (batches written by one client's codec decoded by every other)."""
    try:
        java = request.getfixturevalue("java_client")
    except pytest.skip.Exception:
        java = None
    producers = {"kafka-python": "gzip", "confluent-kafka": "zstd", "aiokafka": "lz4",
                 "java": "snappy"}
    if java is None:
        del producers["java"]
    n = 2500
    topic = unique_topic("mixed")
    create_topic("confluent-kafka", broker.bootstrap, topic, PARTITIONS, broker=broker)
    for client, codec in producers.items():
        produce(client, broker.bootstrap, topic, f"x-{client}", n, TS_BASE, compression=codec,
                java=java, broker=broker).check(n, broker.describe())
    total = n * len(producers)
    for reader in producers:
        records = consume(reader, broker.bootstrap, topic, PARTITIONS, total, timeout=60,
                          java=java, broker=broker)
        assert len(records) == total, f"{reader} read {len(records)} of {total}"
        for client in producers:
            tag = f"x-{client}"
            mine = [r for r in records if r[3].startswith(tag.encode() + b":")]
            verify_records(mine, tag, n, TS_BASE, PARTITIONS,
                           context=f"\n(written by {client}, read by {reader})" + broker.describe())
