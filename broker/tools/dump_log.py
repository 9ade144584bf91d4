"""`minikafka dump-log`: print segment files the way Kafka's ``kafka-dump-log.sh``
(``DumpLogSegments``) does.

    minikafka dump-log --files DIR/00000000000000000000.log [--print-data-log]
                       [--deep-iteration] [--transaction-log-decoder | --offsets-decoder]
                       [--key-decoder-class ...] [--value-decoder-class ...]

Reads the files directly (no broker needed): ``.log`` (record batches),
``.index``, ``.timeindex``, ``.txnindex`` (aborted transactions) and
``.snapshot`` (producer state). Output lines match Kafka's, so scripts and
operators' habits carry over:

    baseOffset: 0 lastOffset: 0 count: 1 baseSequence: 0 lastSequence: 0 producerId: 0 ...
    | offset: 1 CreateTime: 1680383688163 keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] endTxnMarker: COMMIT coordinatorEpoch: 0
    version: 0 producerId: 7 firstOffset: 3 lastOffset: 9 lastStableOffset: 10

``--transaction-log-decoder`` prints Kafka 4.1's JSON (key ``{"type":"0","data":...}``,
payload ``{"version":"1","data":...}``); ``--offsets-decoder`` reproduces Kafka 3.x's text
(``offset_commit::...``, ``group_metadata::...``).
"""
from __future__ import annotations

import argparse
import base64
import json
import os
import struct
import sys

from minikafka.protocol import records as rec
from minikafka.protocol import schema
from minikafka.protocol.errors import KafkaError

_COMPRESSION = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
_TXN_STATES = {0: "Empty", 1: "Ongoing", 2: "PrepareCommit", 3: "PrepareAbort", 4: "CompleteCommit",
               5: "CompleteAbort", 6: "Dead", 7: "PrepareEpochFence"}

# .txnindex entry: version int16, producerId int64, firstOffset int64, lastOffset int64, lastStableOffset int64
TXN_ENTRY = struct.Struct(">hqqqq")
assert TXN_ENTRY.size == 34
# .snapshot: version int16, crc uint32 (CRC-32C of everything after it), int32 count, entries
SNAPSHOT_HEADER = struct.Struct(">hI")
SNAPSHOT_ENTRY = struct.Struct(">qhiqiqiq")  # pid, epoch, lastSeq, lastOffset, offsetDelta, ts, coordEpoch, txnFirst
assert SNAPSHOT_ENTRY.size == 46


def _bool(b: bool) -> str:
    return "true" if b else "false"


def _optional_long(v: int | None) -> str:
    """Java's OptionalLong.toString()."""
    return "OptionalLong.empty" if v is None else f"OptionalLong[{v}]"


def _text(b: bytes | None) -> str:
    return b.decode("utf-8", errors="replace") if b is not None else ""


def _base_offset_of(path: str) -> int:
    return int(os.path.basename(path).split(".")[0])


# ---------------------------------------------------------------- message parsers
class DefaultParser:
    """Kafka's default: key and value as UTF-8 strings (StringDecoder)."""

    def parse(self, r: rec.Record) -> tuple[str | None, str | None]:
        key = _text(r.key) if r.key is not None else None
        value = _text(r.value) if r.value is not None else None
        return key, value


def _camel(name: str) -> str:
    """A schema field name as Kafka's generated JSON converters write it (``partition_ids`` ->
    ``partitionIds``)."""
    first, *rest = name.split("_")
    return first + "".join(w.capitalize() for w in rest)


def _in_versions(version: int, versions) -> bool:
    return versions is not None and versions[0] <= version and (versions[1] is None or version <= versions[1])


def message_json(fields: list, body, version: int) -> dict:
    """A parsed data message as Kafka's generated ``*JsonConverter.write`` renders it: the
    fields of ``version`` in schema order, tagged fields only when not at their default,
    null arrays as null."""
    out = {}
    for f in fields:
        if _in_versions(version, f.get("tv")):  # tagged in this version: written when not at its default
            value = body[f["n"]]
            if value == f.get("d"):
                continue
        elif _in_versions(version, f.get("v")):
            value = body[f["n"]]
        else:
            continue
        t = f["t"]
        if value is None:
            pass
        elif t == "[]struct":
            value = [message_json(f["f"], item, version) for item in value]
        elif t == "struct":
            value = message_json(f["f"], value, version)
        elif t.startswith("[]"):
            value = list(value)
        elif t == "bytes":
            value = base64.b64encode(bytes(value)).decode()  # Jackson's binary node
        elif t == "uuid":
            value = base64.urlsafe_b64encode(value.bytes).decode().rstrip("=")  # Kafka's Uuid.toString
        out[_camel(f["n"])] = value
    return out


def _json(obj) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


class TransactionLogParser:
    """Kafka 4.1's ``DumpLogSegments.TransactionLogMessageParser``: key and value as JSON
    (``{"type":"0","data":{"transactionalId":...}}``, ``{"version":"1","data":{...}}``, the
    TV2 fields ``previousProducerId``, ``nextProducerId`` and ``clientTransactionVersion``
    when set), ``<DELETE>`` for a tombstone."""

    def parse(self, r: rec.Record) -> tuple[str | None, str | None]:
        if r.key is None:
            raise ValueError(f"Failed to decode message at offset {r.offset} using the specified decoder "
                             f"(message had a missing key)")
        (version,) = struct.unpack_from(">h", r.key, 0)
        if version != 0:
            return f"Unknown record type {version} at offset {r.offset}, skipping.", None
        kmsg = schema.data_message("TransactionLogKey", 0)
        k, _ = schema.parse(kmsg, r.key[2:])
        key = _json({"type": str(version), "data": message_json(_fields("TransactionLogKey"), k, 0)})
        if r.value is None:
            return key, "<DELETE>"
        (vversion,) = struct.unpack_from(">h", r.value, 0)
        if not 0 <= vversion <= 1:
            raise ValueError(f"Unknown version {vversion} of TransactionLogValue")
        v, _ = schema.parse(schema.data_message("TransactionLogValue", vversion), r.value[2:])
        return key, _json({"version": str(vversion), "data": message_json(_fields("TransactionLogValue"), v, vversion)})


def _fields(name: str) -> list:
    return schema.data_spec(name)["fields"]


class OffsetsParser:
    """Kafka 4.1's ``DumpLogSegments.OffsetsMessageParser`` for ``__consumer_offsets``: every
    group coordinator record as JSON, the key ``{"type":"<record type>","data":{...}}`` and the
    value ``{"version":"<version>","data":{...}}`` (``<DELETE>`` for a tombstone); a classic
    consumer group's member subscription and assignment bytes decoded as
    ConsumerProtocolSubscription / ConsumerProtocolAssignment (kept as base64 when they do not
    decode); a record type it does not know, or a record that does not decode, is reported
    and skipped."""

    # record type (the key's version) -> key message: the group coordinator's records (the
    # share coordinator's ShareSnapshot/ShareUpdate live in __share_group_state)
    KEYS = {t: name for name in schema.DATA_NAMES
            if name.endswith("Key") and name not in ("TransactionLogKey", "ShareSnapshotKey", "ShareUpdateKey")
            for lo, hi in [schema.data_versions(name)] for t in range(lo, hi + 1)}

    def parse(self, r: rec.Record) -> tuple[str | None, str | None]:
        if r.key is None:
            raise ValueError(f"Failed to decode message at offset {r.offset} using the specified decoder "
                             f"(message had a missing key)")
        try:
            (rtype,) = struct.unpack_from(">h", r.key, 0)
            key_name = self.KEYS.get(rtype)
            if key_name is None:
                return f"Unknown record type {rtype} at offset {r.offset}, skipping.", None
            k, _ = schema.parse(schema.data_message(key_name, rtype), r.key[2:])
            key = _json({"type": str(rtype), "data": message_json(_fields(key_name), k, rtype)})
            if r.value is None:
                return key, "<DELETE>"
            value_name = key_name[:-len("Key")] + "Value"
            (version,) = struct.unpack_from(">h", r.value, 0)
            lo, hi = schema.data_versions(value_name)
            if not lo <= version <= hi:
                raise ValueError(f"Unknown version {version} of {value_name}")
            v, _ = schema.parse(schema.data_message(value_name, version), r.value[2:])
            data = message_json(_fields(value_name), v, version)
            if value_name == "GroupMetadataValue" and data.get("protocolType") == "consumer":
                for member, parsed in zip(data.get("members") or [], v.members or []):
                    _decode_member_bytes(member, "subscription", parsed.subscription, "ConsumerProtocolSubscription")
                    _decode_member_bytes(member, "assignment", parsed.assignment, "ConsumerProtocolAssignment")
            return key, _json({"version": str(version), "data": data})
        except Exception as e:  # noqa: BLE001 (Kafka reports the record and goes on)
            return f"Error at offset {r.offset}, skipping. {e}", None


def _decode_member_bytes(member: dict, field: str, data: bytes | None, message: str) -> None:
    """A classic consumer member's subscription or assignment bytes as their message's JSON at
    the version they start with; left as they are (base64) when they do not decode."""
    if not data or len(data) < 2:
        return
    try:
        (version,) = struct.unpack_from(">h", data, 0)
        lo, hi = schema.data_versions(message)
        if not lo <= version <= hi:
            return
        parsed, _ = schema.parse(schema.data_message(message, version), data[2:])
    except Exception:  # noqa: BLE001
        return
    member[field] = message_json(_fields(message), parsed, version)


# ---------------------------------------------------------------- file dumpers
def dump_log(path: str, out, print_data: bool, deep: bool, parser, max_bytes: int, errors: dict) -> None:
    print(f"Log starting offset: {_base_offset_of(path)}", file=out)
    with open(path, "rb") as f:
        data = f.read(max_bytes if max_bytes >= 0 else -1)
    valid = 0
    last_offset = -1
    nonconsecutive = []
    for pos, h in rec.iter_batch_headers(data):
        chunk = data[pos:pos + h.size]
        try:
            is_valid = h.magic == rec.MAGIC and rec.compute_crc(chunk, 0, h.size) == h.crc
        except Exception:
            is_valid = False
        ts_type = "LogAppendTime" if h.attributes & rec.TIMESTAMP_TYPE_MASK else "CreateTime"
        delete_horizon = h.base_timestamp if h.has_delete_horizon else None
        print(f"baseOffset: {h.base_offset} lastOffset: {h.last_offset} count: {h.records_count} "
              f"baseSequence: {h.base_sequence} lastSequence: {h.last_sequence} producerId: {h.producer_id} "
              f"producerEpoch: {h.producer_epoch} partitionLeaderEpoch: {h.partition_leader_epoch} "
              f"isTransactional: {_bool(h.is_transactional)} isControl: {_bool(h.is_control)} "
              f"deleteHorizonMs: {_optional_long(delete_horizon)} position: {valid} {ts_type}: {h.max_timestamp} "
              f"size: {h.size} magic: {h.magic} compresscodec: {_COMPRESSION.get(h.compression, h.compression)} "
              f"crc: {h.crc} isvalid: {_bool(is_valid)}", file=out)
        if deep:
            try:
                _, records = rec.decode_batch(chunk)
            except KafkaError as e:
                print(f"| failed to decode records of the batch at position {valid}: {e}", file=out)
                records = []
            for i, r in enumerate(records):
                if last_offset != -1 and r.offset != last_offset + 1:
                    nonconsecutive.append((last_offset, r.offset))
                last_offset = r.offset
                seq = h.base_sequence + i if h.base_sequence >= 0 else -1
                if seq > 0x7FFFFFFF:
                    seq -= 0x80000000
                line = (f"| offset: {r.offset} {ts_type}: {r.timestamp} "
                        f"keySize: {len(r.key) if r.key is not None else -1} "
                        f"valueSize: {len(r.value) if r.value is not None else -1} "
                        f"sequence: {seq} headerKeys: [{','.join(k for k, _ in r.headers)}]")
                if h.is_control:
                    try:
                        ctype, cepoch = rec.parse_control_record(r)
                    except KafkaError as e:
                        ctype, cepoch = None, None
                        line += f" invalid control record: {e}"
                    if ctype in (rec.ControlRecordType.ABORT, rec.ControlRecordType.COMMIT):
                        line += f" endTxnMarker: {ctype.name} coordinatorEpoch: {cepoch}"
                    elif ctype is not None:
                        tid = struct.unpack_from(">h", r.key, 2)[0]
                        line += f" controlType: {ctype.name}({tid})"
                if print_data and not h.is_control:
                    try:
                        key, payload = parser.parse(r)
                    except Exception as e:  # a record the decoder cannot read: say so, go on
                        key, payload = f"Error at offset {r.offset}, skipping. {e}", None
                    if key is not None:
                        line += f" key: {key}"
                    if payload is not None:
                        line += f" payload: {payload}"
                print(line, file=out)
        valid += h.size
    trailing = len(data) - valid
    if trailing > 0 and max_bytes < 0:
        print(f"Found {trailing} invalid bytes at the end of {os.path.basename(path)}", file=out)
    if nonconsecutive:
        errors.setdefault("nonconsecutive", {})[os.path.abspath(path)] = nonconsecutive


def dump_index(path: str, out, errors: dict) -> None:
    base = _base_offset_of(path)
    with open(path, "rb") as f:
        data = f.read()
    n = len(data) // 8
    if n == 0:
        print(f"{path} is empty.", file=out)
        return
    log_path = os.path.join(os.path.dirname(path), f"{base:020d}.log")
    try:
        with open(log_path, "rb") as f:
            log_data = f.read()
    except OSError:
        log_data = None
    mismatches = []
    for i in range(n):
        rel, position = struct.unpack_from(">ii", data, i * 8)
        offset = base + rel
        if offset == base and i > 0:
            break  # zero-filled tail (preallocated index after a crash)
        if log_data is not None and position + rec.HEADER_SIZE <= len(log_data):
            h = rec.parse_header(log_data, position)
            if h.last_offset != offset:
                mismatches.append((offset, h.last_offset))
        print(f"offset: {offset} position: {position}", file=out)
    if mismatches:
        errors.setdefault("index", {})[os.path.abspath(path)] = mismatches


def dump_time_index(path: str, out) -> None:
    base = _base_offset_of(path)
    with open(path, "rb") as f:
        data = f.read()
    for i in range(len(data) // 12):
        ts, rel = struct.unpack_from(">qi", data, i * 12)
        if rel == 0 and i > 0:
            break
        print(f"timestamp: {ts} offset: {base + rel}", file=out)


def read_txn_index(path: str) -> list[tuple[int, int, int, int, int]]:
    with open(path, "rb") as f:
        data = f.read()
    return [TXN_ENTRY.unpack_from(data, i * TXN_ENTRY.size) for i in range(len(data) // TXN_ENTRY.size)]


def dump_txn_index(path: str, out) -> None:
    for version, pid, first, last, lso in read_txn_index(path):
        print(f"version: {version} producerId: {pid} firstOffset: {first} lastOffset: {last} "
              f"lastStableOffset: {lso}", file=out)


class CorruptSnapshot(Exception):
    pass


def read_snapshot(path: str) -> list[dict]:
    """Kafka's producer state snapshot (``ProducerStateManager.readSnapshot``)."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < SNAPSHOT_HEADER.size + 4:
        raise CorruptSnapshot(f"Snapshot file {path} is too short ({len(data)} bytes)")
    version, crc = SNAPSHOT_HEADER.unpack_from(data, 0)
    if version not in (0, 1):
        raise CorruptSnapshot(f"Snapshot contained an unknown file version {version}")
    computed = rec.crc32c(data[SNAPSHOT_HEADER.size:])
    if computed != crc:
        raise CorruptSnapshot(f"Snapshot is corrupt (CRC is no longer valid). Stored crc: {crc}. "
                              f"Computed crc: {computed}")
    (count,) = struct.unpack_from(">i", data, SNAPSHOT_HEADER.size)
    pos = SNAPSHOT_HEADER.size + 4
    entries = []
    for _ in range(count):
        if pos + SNAPSHOT_ENTRY.size > len(data):
            raise CorruptSnapshot(f"Snapshot {path} is truncated")
        pid, epoch, last_seq, last_off, delta, ts, cepoch, txn_first = SNAPSHOT_ENTRY.unpack_from(data, pos)
        pos += SNAPSHOT_ENTRY.size
        entries.append(dict(producer_id=pid, producer_epoch=epoch, last_sequence=last_seq, last_offset=last_off,
                            offset_delta=delta, timestamp=ts, coordinator_epoch=cepoch,
                            current_txn_first_offset=txn_first))
    return entries


def dump_snapshot(path: str, out) -> None:
    try:
        entries = read_snapshot(path)
    except CorruptSnapshot as e:
        print(str(e), file=sys.stderr)
        return
    for e in entries:
        first_seq = e["last_sequence"] - e["offset_delta"] if e["last_sequence"] >= 0 else -1
        if first_seq < 0 <= e["last_sequence"]:
            first_seq += 0x80000000  # sequences wrap at int32 max
        txn_first = e["current_txn_first_offset"]
        line = (f"producerId: {e['producer_id']} producerEpoch: {e['producer_epoch']} "
                f"coordinatorEpoch: {e['coordinator_epoch']} "
                f"currentTxnFirstOffset: {_optional_long(txn_first if txn_first >= 0 else None)} "
                f"lastTimestamp: {e['timestamp']} ")
        if e["last_offset"] >= 0:  # the entry keeps batch metadata (Kafka prints its head)
            line += (f"firstSequence: {first_seq} lastSequence: {e['last_sequence']} lastOffset: {e['last_offset']} "
                     f"offsetDelta: {e['offset_delta']} timestamp: {e['timestamp']}")
        print(line, file=out)


# ---------------------------------------------------------------- command line
def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="minikafka dump-log",
        description="Parse log segments and index files and dump their contents (as kafka-dump-log.sh).")
    p.add_argument("--files", nargs="+", action="extend", required=True, metavar="FILE",
                   help=".log, .index, .timeindex, .txnindex or .snapshot files to dump "
                        "(space or comma separated, as kafka-dump-log.sh)")
    p.add_argument("more_files", nargs="*", metavar="FILE", help=argparse.SUPPRESS)
    p.add_argument("--print-data-log", action="store_true", help="print the records' keys and values")
    p.add_argument("--deep-iteration", action="store_true", help="print every record, not only batches")
    p.add_argument("--transaction-log-decoder", action="store_true",
                   help="decode __transaction_state records (implies --print-data-log)")
    p.add_argument("--offsets-decoder", action="store_true",
                   help="decode __consumer_offsets records (implies --print-data-log)")
    p.add_argument("--max-bytes", type=int, default=-1,
                   help="limit the bytes read from each .log file (default: all)")
    p.add_argument("--verify-index-only", action="store_true",
                   help="only check .index files against the log, print mismatches")
    return p


def main(argv: list[str], out=None) -> int:
    args = build_parser().parse_args(argv)
    out = out or sys.stdout
    if args.transaction_log_decoder and args.offsets_decoder:
        print("--transaction-log-decoder and --offsets-decoder are mutually exclusive", file=sys.stderr)
        return 2
    print_data = args.print_data_log or args.transaction_log_decoder or args.offsets_decoder
    deep = args.deep_iteration or print_data
    parser = (TransactionLogParser() if args.transaction_log_decoder
              else OffsetsParser() if args.offsets_decoder else DefaultParser())
    errors: dict = {}
    rc = 0
    files = [f for arg in args.files + args.more_files for f in arg.split(",") if f]
    # a file that cannot be read is one line on stderr, before anything is dumped
    unreadable = 0
    for path in files:
        try:
            with open(path, "rb"):
                pass
        except OSError as e:
            print(f"minikafka dump-log: {path}: {e.strerror}", file=sys.stderr)
            unreadable += 1
            continue
        stem, suffix = os.path.splitext(os.path.basename(path))
        if suffix in (".log", ".index", ".timeindex") and not stem.isdigit():
            # the name is the base offset, as Kafka names them
            print(f"minikafka dump-log: {path}: not a segment file name (expected"
                  f" <base offset, 20 digits>{suffix})", file=sys.stderr)
            unreadable += 1
    if unreadable:
        return 1
    for path in files:
        print(f"Dumping {path}", file=out)
        suffix = os.path.splitext(path)[1]
        try:
            if suffix == ".log":
                dump_log(path, out, print_data, deep, parser, args.max_bytes, errors)
            elif suffix == ".index":
                if args.verify_index_only:
                    dump_index(path, open(os.devnull, "w"), errors)
                else:
                    dump_index(path, out, errors)
            elif suffix == ".timeindex":
                dump_time_index(path, out)
            elif suffix == ".txnindex":
                dump_txn_index(path, out)
            elif suffix == ".snapshot":
                dump_snapshot(path, out)
            else:
                print(f"Ignoring unknown file {path}", file=sys.stderr)
        except BrokenPipeError:
            raise  # the reader of stdout left: minikafka's CLI says so once
        except OSError as e:  # removed or unreadable since the check above
            print(f"minikafka dump-log: {path}: {e.strerror}", file=sys.stderr)
            rc = 1
    for fname, pairs in errors.get("index", {}).items():
        print(f"Mismatches in :{fname}", file=sys.stderr)
        for index_offset, log_offset in pairs:
            print(f"  Index offset: {index_offset}, log offset: {log_offset}", file=sys.stderr)
    for fname, pairs in errors.get("nonconsecutive", {}).items():
        print(f"Non-consecutive offsets in {fname}", file=sys.stderr)
        for a, b in pairs:
            print(f"  {a} is followed by {b}", file=sys.stderr)
    out.flush()
    return rc
