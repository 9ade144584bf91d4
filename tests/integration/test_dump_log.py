"""Issue 8, acceptance 3: ``minikafka dump-log`` reads our segment files as
``kafka-dump-log.sh`` does: batches and records with the transaction markers,
the aborted-transaction index, producer snapshots, offset/time indexes, and the
decoded ``__transaction_state`` (Ongoing -> PrepareCommit -> CompleteCommit, as
in seed 003) and ``__consumer_offsets`` records."""
from __future__ import annotations

import json
import re
import subprocess
import sys

from minikafka.coordinator.hashing import partition_for
from harness import REPO_ROOT, wait_transaction_done
from rawclient import RawClient

BATCH_RE = re.compile(
    r"^baseOffset: (-?\d+) lastOffset: (-?\d+) count: (\d+) baseSequence: (-?\d+) lastSequence: (-?\d+) "
    r"producerId: (-?\d+) producerEpoch: (-?\d+) partitionLeaderEpoch: (-?\d+) isTransactional: (true|false) "
    r"isControl: (true|false) deleteHorizonMs: OptionalLong.empty position: (\d+) CreateTime: (-?\d+) size: (\d+) "
    r"magic: 2 compresscodec: none crc: (\d+) isvalid: true$")
RECORD_RE = re.compile(r"^\| offset: (\d+) CreateTime: (\d+) keySize: (-?\d+) valueSize: (-?\d+) sequence: (-?\d+) "
                       r"headerKeys: \[([^\]]*)\](.*)$")
TXN_RECORD_RE = re.compile(r" key: (\{.*\}) payload: (\{.*\})$")   # Kafka 4.1: JSON key and value
STATES = ["Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort"]


def state_records(out: str) -> list[tuple[dict, dict]]:
    """(key, value) JSON of every __transaction_state record dumped with the decoder."""
    return [(json.loads(m.group(1)), json.loads(m.group(2))) for m in map(TXN_RECORD_RE.search, out.splitlines()) if m]


def dump(*args: str) -> str:
    r = subprocess.run([sys.executable, "-m", "minikafka", "dump-log", *args], cwd=REPO_ROOT, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "Non-consecutive" not in r.stderr and "Mismatches" not in r.stderr, r.stderr
    return r.stdout


def records_of(out: str) -> list[tuple[int, str]]:
    return [(int(m.group(1)), m.group(7)) for m in map(RECORD_RE.match, out.splitlines()) if m]


def test_dump_transactional_partition_and_state_log(broker_factory, unique_topic):
    b = broker_factory(overrides={"log.index.interval.bytes": 1})  # an index entry for every batch
    topic = unique_topic("dump")
    with RawClient.to(b.bootstrap) as c:
        assert c.create_topic(topic, 1) == 0
    from confluent_kafka import Producer
    tid = f"{topic}-tid"
    p = Producer({"bootstrap.servers": b.bootstrap, "transactional.id": tid, "linger.ms": 2})
    p.init_transactions(30)
    for name, commit in (("c1", True), ("a1", False), ("c2", True)):
        p.begin_transaction()
        for i in range(3):
            p.produce(topic, key=f"k{i}", value=f"{name}-{i}", partition=0, headers=[("h1", b"x"), ("h2", b"y")])
        p.flush(30)
        p.commit_transaction(30) if commit else p.abort_transaction(30)
    del p
    wait_transaction_done(b.bootstrap, tid)  # the last markers follow the EndTxn answer
    # consumer group offsets, for the offsets decoder
    from kafka import KafkaConsumer, TopicPartition
    from kafka.structs import OffsetAndMetadata
    group = f"{topic}-group"
    consumer = KafkaConsumer(bootstrap_servers=b.bootstrap, group_id=group, enable_auto_commit=False)
    try:
        consumer.commit({TopicPartition(topic, 0): OffsetAndMetadata(5, "meta", -1)})
    finally:
        consumer.close()
    b.stop()  # clean shutdown: producer snapshots written, nothing in flight

    pdir = b.partition_dir(topic, 0)
    seg = pdir / "00000000000000000000.log"
    out = dump("--files", str(seg), "--print-data-log")
    lines = out.splitlines()
    assert lines[0] == f"Dumping {seg}" and lines[1] == "Log starting offset: 0"
    batches = [m for m in map(BATCH_RE.match, lines) if m]
    assert batches and len(batches) == sum(1 for ln in lines if ln.startswith("baseOffset:")), out
    positions = [int(m.group(11)) for m in batches]
    sizes = [int(m.group(13)) for m in batches]
    assert positions == [sum(sizes[:i]) for i in range(len(sizes))]
    assert seg.stat().st_size == sum(sizes)
    assert all(m.group(9) == "true" for m in batches)  # every batch is transactional
    pid = int(batches[0].group(6))
    controls = [m for m in batches if m.group(10) == "true"]
    assert [(int(m.group(4)), int(m.group(3))) for m in controls] == [(-1, 1)] * 3  # markers: no sequence, 1 record

    recs = records_of(out)
    assert [o for o, _ in recs] == list(range(len(recs)))  # every offset, in order
    markers = [(o, rest) for o, rest in recs if "endTxnMarker" in rest]
    assert [rest.strip() for _, rest in markers] == [
        "endTxnMarker: COMMIT coordinatorEpoch: 0", "endTxnMarker: ABORT coordinatorEpoch: 0",
        "endTxnMarker: COMMIT coordinatorEpoch: 0"]
    data = [(o, rest) for o, rest in recs if "payload" in rest]
    assert [rest for _, rest in data] == [f" key: k{i} payload: {n}-{i}" for n in ("c1", "a1", "c2") for i in range(3)]
    assert all("headerKeys: [h1,h2]" in ln for ln in lines if ln.startswith("| ") and "payload" in ln)
    aborted_first = min(o for o, rest in data if "a1-" in rest)
    abort_marker = markers[1][0]

    # the aborted transaction is in the segment's transaction index
    out = dump("--files", str(pdir / "00000000000000000000.txnindex"))
    assert out.splitlines()[1:] == [f"version: 0 producerId: {pid} firstOffset: {aborted_first} "
                                    f"lastOffset: {abort_marker} lastStableOffset: {abort_marker + 1}"]

    # producer snapshot at the log end offset (written on the clean shutdown)
    leo = recs[-1][0] + 1
    snap = pdir / f"{leo:020d}.snapshot"
    assert snap.exists(), sorted(x.name for x in pdir.iterdir())
    out = dump("--files", str(snap))
    (entry,) = out.splitlines()[1:]
    assert entry.startswith(f"producerId: {pid} producerEpoch: 0 coordinatorEpoch: 0 "
                            f"currentTxnFirstOffset: OptionalLong.empty lastTimestamp: ")
    assert re.search(r"firstSequence: 6 lastSequence: 8 lastOffset: \d+ offsetDelta: 2 timestamp: \d+$", entry), entry

    # offset and time indexes point at batch boundaries (index.interval.bytes=1)
    out = dump("--files", str(pdir / "00000000000000000000.index"), str(pdir / "00000000000000000000.timeindex"))
    idx = [tuple(map(int, m.groups())) for m in re.finditer(r"^offset: (\d+) position: (\d+)$", out, re.M)]
    by_last = {int(m.group(2)): int(m.group(11)) for m in batches}
    assert idx and all(by_last.get(o) == pos for o, pos in idx), (idx, by_last)
    ts = [tuple(map(int, m.groups())) for m in re.finditer(r"^timestamp: (\d+) offset: (\d+)$", out, re.M)]
    assert ts and [t for t, _ in ts] == sorted(t for t, _ in ts)

    # __transaction_state with the decoder: seed 003's sequence, for every transaction
    state_part = partition_for(tid, 50)
    out = dump("--transaction-log-decoder", "--files",
               str(b.partition_dir("__transaction_state", state_part) / "00000000000000000000.log"))
    rows = state_records(out)
    assert rows and all(k == {"type": "0", "data": {"transactionalId": tid}} for k, _ in rows), out
    assert all(v["version"] == "1" and v["data"]["producerId"] == pid for _, v in rows), out
    states = [STATES[v["data"]["transactionStatus"]] for _, v in rows]
    collapsed = [s for i, s in enumerate(states) if i == 0 or states[i - 1] != s]
    assert collapsed == ["Empty", "Ongoing", "PrepareCommit", "CompleteCommit", "Ongoing", "PrepareAbort",
                         "CompleteAbort", "Ongoing", "PrepareCommit", "CompleteCommit"], states
    ongoing = [v["data"] for _, v in rows if STATES[v["data"]["transactionStatus"]] == "Ongoing"]
    assert all(d["transactionPartitions"] == [{"topic": topic, "partitionIds": [0]}] for d in ongoing)
    first = rows[0][1]["data"]
    assert first["transactionPartitions"] is None and first["transactionTimeoutMs"] > 0
    assert not any("clientTransactionVersion" in v["data"] for _, v in rows)   # a V1 client: 0, not written

    # __consumer_offsets with the offsets decoder
    out = dump("--offsets-decoder", "--files",
               str(b.partition_dir("__consumer_offsets", partition_for(group, 50)) / "00000000000000000000.log"))
    # (Kafka 4.1's JSON, as kafka-dump-log.sh 4.1 prints the same segment)
    commits = [(json.loads(k), json.loads(v)) for k, v in
               re.findall(r" key: (\{.*?\}\}) payload: (\{.*\}\})$", out, re.M)]
    assert ({"type": "1", "data": {"group": group, "topic": topic, "partition": 0}}, "meta", 5) in [
        (k, v["data"].get("metadata"), v["data"].get("offset")) for k, v in commits], out


def test_dump_log_reports_trailing_bytes_and_unknown_files(tmp_path):
    from minikafka.protocol import records as rec
    batch = rec.build_batch([rec.Record(0, 1000, None, b"v", ())], base_offset=0)
    seg = tmp_path / "00000000000000000000.log"
    seg.write_bytes(batch + batch[:20])
    other = tmp_path / "notes.txt"
    other.write_text("x")
    r = subprocess.run([sys.executable, "-m", "minikafka", "dump-log", "--files", f"{seg},{other}", "--deep-iteration"],
                       cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0
    assert "| offset: 0 CreateTime: 1000 keySize: -1 valueSize: 1 sequence: -1 headerKeys: []" in r.stdout
    assert "payload" not in r.stdout  # --deep-iteration alone prints no data
    assert f"Found 20 invalid bytes at the end of {seg.name}" in r.stdout
    assert f"Ignoring unknown file {other}" in r.stderr


def test_dump_state_log_of_a_v2_transaction(broker_factory):
    """Transactions V2 in the decoder's JSON, as Kafka 4.1's kafka-dump-log.sh prints it
    (checked against it on a segment of this shape): clientTransactionVersion 2 from the
    first Ongoing record, the epoch bumped in PrepareCommit."""
    from minikafka.coordinator.hashing import partition_for
    from rawclient import make_batch
    b = broker_factory()
    tid = "dump-v2"
    with RawClient.to(b.bootstrap) as c:
        assert c.create_topic("t", 1) == 0
        c.request(10, 3, {"key": tid, "key_type": 1})
        r = c.request(22, 5, {"transactional_id": tid, "transaction_timeout_ms": 60000, "producer_id": -1,
                              "producer_epoch": -1})
        pid, epoch = r.producer_id, r.producer_epoch
        assert c.produce("t", 0, make_batch([b"x"], pid, epoch, 0, True), version=12, transactional_id=tid).error_code == 0
        assert c.request(26, 5, {"transactional_id": tid, "producer_id": pid, "producer_epoch": epoch,
                                 "committed": True}).error_code == 0
    wait_transaction_done(b.bootstrap, tid)
    b.stop()
    out = dump("--transaction-log-decoder", "--files",
               str(b.partition_dir("__transaction_state", partition_for(tid, 50)) / "00000000000000000000.log"))
    assert f' key: {{"type":"0","data":{{"transactionalId":"{tid}"}}}} payload: {{"version":"1","data":' \
           f'{{"producerId":{pid},"producerEpoch":{epoch},"transactionTimeoutMs":60000,"transactionStatus":0,' \
           f'"transactionPartitions":null,"transactionLastUpdateTimestampMs":' in out, out
    rows = [v["data"] for _, v in state_records(out)]
    assert [(STATES[d["transactionStatus"]], d["producerEpoch"], d.get("clientTransactionVersion")) for d in rows] == [
        ("Empty", epoch, None), ("Ongoing", epoch, 2), ("PrepareCommit", epoch + 1, 2), ("CompleteCommit", epoch + 1, 2)]
    assert list(rows[1]) == ["producerId", "producerEpoch", "transactionTimeoutMs", "transactionStatus",
                             "transactionPartitions", "transactionLastUpdateTimestampMs",
                             "transactionStartTimestampMs", "clientTransactionVersion"]
