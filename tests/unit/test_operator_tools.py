"""Unit tests of the operator tools' formats (no broker): dump-log's readers and
printers for every file type, and the kafka-transactions.sh table layout."""
from __future__ import annotations

import io
import struct
import subprocess
import sys
from pathlib import Path

from minikafka.broker.tools import dump_log
from minikafka.admin.transactions import pretty_print_table
from minikafka.protocol import records as rec

ROOT = Path(__file__).resolve().parents[2]


def run_dump(*args: str) -> str:
    out = io.StringIO()
    assert dump_log.main(list(args), out=out) == 0
    return out.getvalue()


def snapshot_bytes(entries: list[tuple]) -> bytes:
    body = struct.pack(">i", len(entries)) + b"".join(dump_log.SNAPSHOT_ENTRY.pack(*e) for e in entries)
    return struct.pack(">hI", 1, rec.crc32c(body)) + body


def test_snapshot_dump(tmp_path):
    f = tmp_path / "00000000000000000042.snapshot"
    f.write_bytes(snapshot_bytes([(7, 2, 9, 41, 4, 1700000000000, 3, 37), (8, 0, -1, -1, 0, 1700000000001, -1, -1)]))
    lines = run_dump("--files", str(f)).splitlines()
    assert lines == [
        f"Dumping {f}",
        "producerId: 7 producerEpoch: 2 coordinatorEpoch: 3 currentTxnFirstOffset: OptionalLong[37] "
        "lastTimestamp: 1700000000000 firstSequence: 5 lastSequence: 9 lastOffset: 41 offsetDelta: 4 "
        "timestamp: 1700000000000",
        "producerId: 8 producerEpoch: 0 coordinatorEpoch: -1 currentTxnFirstOffset: OptionalLong.empty "
        "lastTimestamp: 1700000000001 ",
    ]


def test_corrupt_snapshot_is_reported(tmp_path, capsys):
    f = tmp_path / "00000000000000000000.snapshot"
    data = bytearray(snapshot_bytes([(7, 2, 9, 41, 4, 1, 3, 37)]))
    data[-1] ^= 1
    f.write_bytes(bytes(data))
    assert run_dump("--files", str(f)).splitlines() == [f"Dumping {f}"]
    assert "CRC is no longer valid" in capsys.readouterr().err


def test_txnindex_dump(tmp_path):
    f = tmp_path / "00000000000000000000.txnindex"
    f.write_bytes(dump_log.TXN_ENTRY.pack(0, 5, 10, 14, 15) + dump_log.TXN_ENTRY.pack(0, 6, 20, 21, 16))
    assert run_dump("--files", str(f)).splitlines()[1:] == [
        "version: 0 producerId: 5 firstOffset: 10 lastOffset: 14 lastStableOffset: 15",
        "version: 0 producerId: 6 firstOffset: 20 lastOffset: 21 lastStableOffset: 16"]


def test_log_and_indexes(tmp_path):
    a = rec.build_batch([rec.Record(None, 1000, b"k", b"v0", [("h", b"1")]), rec.Record(None, 1001, None, b"v1", ())],
                        base_offset=100, producer_id=9, producer_epoch=1, base_sequence=0, is_transactional=True,
                        partition_leader_epoch=0)
    m = rec.build_control_batch(9, 1, False, 4, 1002, base_offset=102, partition_leader_epoch=0)
    log = tmp_path / "00000000000000000100.log"
    log.write_bytes(a + m)
    (tmp_path / "00000000000000000100.index").write_bytes(struct.pack(">ii", 1, 0) + struct.pack(">ii", 2, len(a)))
    (tmp_path / "00000000000000000100.timeindex").write_bytes(struct.pack(">qi", 1001, 1) + struct.pack(">qi", 1002, 2))
    out = run_dump("--print-data-log", "--files", str(log), str(tmp_path / "00000000000000000100.index"),
                   str(tmp_path / "00000000000000000100.timeindex")).splitlines()
    ha, hm = rec.parse_header(a), rec.parse_header(m)
    assert out == [
        f"Dumping {log}",
        "Log starting offset: 100",
        f"baseOffset: 100 lastOffset: 101 count: 2 baseSequence: 0 lastSequence: 1 producerId: 9 producerEpoch: 1 "
        f"partitionLeaderEpoch: 0 isTransactional: true isControl: false deleteHorizonMs: OptionalLong.empty "
        f"position: 0 CreateTime: 1001 size: {len(a)} magic: 2 compresscodec: none crc: {ha.crc} isvalid: true",
        "| offset: 100 CreateTime: 1000 keySize: 1 valueSize: 2 sequence: 0 headerKeys: [h] key: k payload: v0",
        "| offset: 101 CreateTime: 1001 keySize: -1 valueSize: 2 sequence: 1 headerKeys: [] payload: v1",
        f"baseOffset: 102 lastOffset: 102 count: 1 baseSequence: -1 lastSequence: -1 producerId: 9 producerEpoch: 1 "
        f"partitionLeaderEpoch: 0 isTransactional: true isControl: true deleteHorizonMs: OptionalLong.empty "
        f"position: {len(a)} CreateTime: 1002 size: {len(m)} magic: 2 compresscodec: none crc: {hm.crc} isvalid: true",
        "| offset: 102 CreateTime: 1002 keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] "
        "endTxnMarker: ABORT coordinatorEpoch: 4",
        f"Dumping {tmp_path / '00000000000000000100.index'}",
        "offset: 101 position: 0",
        f"offset: 102 position: {len(a)}",
        f"Dumping {tmp_path / '00000000000000000100.timeindex'}",
        "timestamp: 1001 offset: 101",
        "timestamp: 1002 offset: 102",
    ]


def test_corrupt_batch_is_marked_invalid(tmp_path):
    a = bytearray(rec.build_batch([rec.Record(None, 5, None, b"v", ())]))
    a[-1] ^= 0xFF
    log = tmp_path / "00000000000000000000.log"
    log.write_bytes(bytes(a))
    out = run_dump("--files", str(log))
    assert "isvalid: false" in out and "| offset" not in out


def test_table_layout_matches_kafka():
    out = io.StringIO()
    pretty_print_table(["TransactionalId", "Coordinator", "ProducerId", "TransactionState"],
                       [["a-very-long-transactional-id", "1", "7", "Ongoing"]], out)
    assert out.getvalue().splitlines() == [
        "TransactionalId             \tCoordinator\tProducerId\tTransactionState\t",
        "a-very-long-transactional-id\t1          \t7         \tOngoing         \t"]


# Issue 16: the command line (`minikafka dump-log`, a real subprocess) on a file it cannot
# read, or writing into a pipe its reader closed, says so in one line, never a traceback.
def run_cli(*args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "minikafka", *args], capture_output=True, text=True,
                          timeout=60, cwd=ROOT, **kw)


def test_cli_dump_log_of_a_missing_file_is_one_line(tmp_path):
    missing = tmp_path / "00000000000000000000.log"
    r = run_cli("dump-log", "--files", str(missing))
    assert r.returncode == 1
    assert r.stderr.splitlines() == [f"minikafka dump-log: {missing}: No such file or directory"]
    assert r.stdout == ""  # nothing dumped: not even the "Dumping" header of Kafka's tool


def test_cli_dump_log_of_a_directory_is_one_line(tmp_path):
    r = run_cli("dump-log", "--files", str(tmp_path))
    assert r.returncode == 1 and r.stderr.splitlines() == [f"minikafka dump-log: {tmp_path}: Is a directory"]


def test_cli_dump_log_into_a_closed_pipe_is_one_line(tmp_path):
    # far more output than a pipe buffers (64 KiB), so the writer meets the closed pipe
    log = tmp_path / "00000000000000000000.log"
    log.write_bytes(b"".join(rec.build_batch([rec.Record(None, i, None, b"v" * 100, ())], base_offset=i)
                             for i in range(3000)))
    p = subprocess.Popen([sys.executable, "-m", "minikafka", "dump-log", "--print-data-log", "--files", str(log)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    assert p.stdout.readline() == f"Dumping {log}\n".encode()
    p.stdout.close()  # as `| head -1` does
    err = p.stderr.read().decode()
    assert p.wait(60) == 1
    assert err.splitlines() == ["minikafka dump-log: output closed by the reader (broken pipe)"]


def test_cli_dump_log_of_a_misnamed_segment_is_one_line(tmp_path):
    seg = tmp_path / "segment.log"  # the name must be the base offset
    seg.write_bytes(rec.build_batch([rec.Record(None, 1, None, b"v", ())]))
    r = run_cli("dump-log", "--files", str(seg))
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.splitlines() == [f"minikafka dump-log: {seg}: not a segment file name"
                                     " (expected <base offset, 20 digits>.log)"]
