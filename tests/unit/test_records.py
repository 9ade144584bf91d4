"""protocol/records.py: batch header, CRC, validation, patching, encode/decode, control records."""
from __future__ import annotations

import struct

import pytest

from minikafka.protocol import records as rec
from minikafka.protocol.errors import ErrorCode, KafkaError
from minikafka.protocol.records import Compression, ControlRecordType, Record


def _records(n=5, ts=1_700_000_000_000, value_size=20):
    return [Record(None, ts + i, b"key-%d" % i, bytes([i % 256]) * value_size, [("h1", b"v1"), ("h2", None)])
            for i in range(n)]


def test_crc32c_check_value():
    assert rec.crc32c(b"123456789") == 0xE3069283


def test_header_layout_and_properties():
    data = rec.build_batch(_records(3), base_offset=100, producer_id=7, producer_epoch=2, base_sequence=11,
                           is_transactional=True, partition_leader_epoch=4)
    h = rec.parse_header(data)
    assert rec.HEADER_SIZE == 61
    assert h.base_offset == 100 and h.magic == 2 and h.partition_leader_epoch == 4
    assert h.batch_length == len(data) - 12 and h.size == len(data)
    assert h.last_offset_delta == 2 and h.last_offset == 102 and h.next_offset == 103
    assert h.records_count == 3
    assert h.producer_id == 7 and h.producer_epoch == 2 and h.base_sequence == 11 and h.last_sequence == 13
    assert h.is_transactional and not h.is_control
    assert h.compression == 0 and h.timestamp_type == 0
    assert h.base_timestamp == 1_700_000_000_000 and h.max_timestamp == 1_700_000_000_002
    # raw struct positions as in RECORD-BATCH.md
    assert struct.unpack_from(">q", data, 0)[0] == 100
    assert data[16] == 2
    assert struct.unpack_from(">I", data, 17)[0] == rec.crc32c(data[21:])
    assert struct.unpack_from(">i", data, 57)[0] == 3


def test_sequence_wraps():
    data = rec.build_batch(_records(3), base_sequence=2147483647 - 1)
    assert rec.parse_header(data).last_sequence == 0  # ..., 2147483646, 2147483647, 0


@pytest.mark.parametrize("codec", [Compression.NONE, Compression.GZIP, Compression.SNAPPY, Compression.LZ4,
                                   Compression.ZSTD])
def test_round_trip_each_compression(codec):
    records = _records(50, value_size=200)
    data = rec.build_batch(records, base_offset=10, compression=codec)
    h = rec.validate_batch(data)
    assert h.compression == codec
    header, decoded = rec.decode_batch(data, verify_crc=True)
    assert header == h
    assert [r.offset for r in decoded] == [10 + i for i in range(50)]
    for a, b in zip(records, decoded):
        assert (a.timestamp, a.key, a.value) == (b.timestamp, b.key, b.value)
        assert list(b.headers) == [("h1", b"v1"), ("h2", None)]
    if codec:
        assert len(data) < rec.HEADER_SIZE + 50 * 200  # actually compressed


def test_snappy_xerial_framing_and_raw_block():
    payload = b"hello snappy " * 5000
    framed = rec.compress(Compression.SNAPPY, payload)
    assert framed.startswith(b"\x82SNAPPY\x00") and struct.unpack_from(">ii", framed, 8) == (1, 1)
    assert rec.decompress(Compression.SNAPPY, framed) == payload
    import cramjam
    raw = bytes(cramjam.snappy.compress_raw(payload))
    assert rec.decompress(Compression.SNAPPY, raw) == payload


def test_lz4_frame_is_independent_blocks():
    import lz4.frame
    data = rec.compress(Compression.LZ4, b"x" * 200_000)
    assert data[:4] == b"\x04\x22\x4d\x18"
    info = lz4.frame.get_frame_info(data)
    assert info["block_linked"] is False and info["content_checksum"] is False


def test_null_key_value_and_empty_headers():
    data = rec.build_batch([Record(0, 5, None, None, ())])
    _, [r] = rec.decode_batch(data)
    assert r == Record(0, 5, None, None, ())


def test_offsets_default_and_timestamps_negative_delta():
    recs = [Record(None, 1000, b"a", b"1"), Record(None, 900, b"b", b"2"), Record(None, 1100, b"c", b"3")]
    data = rec.build_batch(recs, base_offset=5)
    h, out = rec.decode_batch(data)
    assert [r.offset for r in out] == [5, 6, 7]
    assert [r.timestamp for r in out] == [1000, 900, 1100]
    assert h.base_timestamp == 1000 and h.max_timestamp == 1100


def test_varints_zigzag():
    for v in (0, -1, 1, 63, -64, 64, 300, -300, 2**31 - 1, -2**31):
        enc = rec.encode_varint(v)
        assert rec.decode_varint(enc) == (v, len(enc))
    for v in (0, -1, 2**63 - 1, -2**63, 1_700_000_000_000):
        enc = rec.encode_varlong(v)
        assert rec.decode_varlong(enc) == (v, len(enc))
    assert rec.encode_varint(-1) == b"\x01" and rec.encode_varint(1) == b"\x02" and rec.encode_varint(64) == b"\x80\x01"


def test_corrupt_crc_detected():
    data = bytearray(rec.build_batch(_records(2)))
    data[-1] ^= 0x01
    with pytest.raises(KafkaError) as e:
        rec.validate_batch(data)
    assert e.value.code == ErrorCode.CORRUPT_MESSAGE


def test_base_offset_and_leader_epoch_outside_crc():
    data = bytearray(rec.build_batch(_records(2)))
    rec.patch_base_offset(data, 0, 123456)
    rec.patch_partition_leader_epoch(data, 0, 9)
    h = rec.validate_batch(data)  # CRC still valid
    assert h.base_offset == 123456 and h.partition_leader_epoch == 9


def test_set_log_append_time_recomputes_crc():
    data = bytearray(rec.build_batch(_records(3)))
    rec.set_log_append_time(data, 0, 42)
    h = rec.validate_batch(data)
    assert h.timestamp_type == 1 and h.max_timestamp == 42
    _, out = rec.decode_batch(data)
    assert all(r.timestamp == 42 for r in out)


def test_truncated_and_malformed_input():
    data = rec.build_batch(_records(3))
    for cut in (0, 5, 16, 40, 61, len(data) - 1):
        if cut == 0:
            assert rec.validate_batches(data[:0]) == []
            continue
        with pytest.raises(KafkaError) as e:
            rec.validate_batches(data[:cut])
        assert e.value.code == ErrorCode.CORRUPT_MESSAGE
    # iter_batch_headers stops cleanly at a trailing partial batch
    two = data + data
    assert [p for p, _ in rec.iter_batch_headers(two[:-10])] == [0]
    assert [p for p, _ in rec.iter_batch_headers(two)] == [0, len(data)]
    assert list(rec.iter_batch_headers(data[:17])) == []
    with pytest.raises(KafkaError):
        rec.parse_header(data[:60])


def test_magic_and_length_errors():
    data = bytearray(rec.build_batch(_records(1)))
    for magic, code in ((1, ErrorCode.INVALID_RECORD), (0, ErrorCode.INVALID_RECORD), (3, ErrorCode.CORRUPT_MESSAGE)):
        bad = bytearray(data)
        bad[16] = magic
        with pytest.raises(KafkaError) as e:
            rec.validate_batch(bad)
        assert e.value.code == code
    bad = bytearray(data)
    struct.pack_into(">i", bad, 8, 10)
    with pytest.raises(KafkaError) as e:
        rec.validate_batch(bad)
    assert e.value.code == ErrorCode.CORRUPT_MESSAGE
    with pytest.raises(KafkaError) as e:
        rec.validate_batch(data, max_size=len(data) - 1)
    assert e.value.code == ErrorCode.MESSAGE_TOO_LARGE


def test_negative_record_count_invalid():
    data = bytearray(rec.build_batch(_records(1)))
    struct.pack_into(">i", data, 57, -1)
    struct.pack_into(">I", data, 17, rec.compute_crc(data, 0, len(data)))
    with pytest.raises(KafkaError) as e:
        rec.validate_batch(data)
    assert e.value.code == ErrorCode.INVALID_RECORD


def test_control_batch_bytes_exactly_as_kafka():
    data = rec.build_control_batch(producer_id=4000, producer_epoch=3, commit=True, coordinator_epoch=17,
                                   timestamp_ms=1_700_000_000_000, base_offset=55)
    h = rec.validate_batch(data)
    assert h.is_control and h.is_transactional and h.compression == 0 and h.timestamp_type == 0
    assert h.attributes == 0x30
    assert (h.producer_id, h.producer_epoch, h.base_sequence) == (4000, 3, -1)
    assert h.records_count == 1 and h.last_offset_delta == 0 and h.base_offset == 55
    assert h.base_timestamp == h.max_timestamp == 1_700_000_000_000
    # the record: length, attrs 0, ts delta 0, offset delta 0, key len 4, key, value len 6, value, 0 headers
    body = data[61:]
    expected_record = (b"\x00" + b"\x00" + b"\x00" + b"\x08" + struct.pack(">hh", 0, 1)
                       + b"\x0c" + struct.pack(">hi", 0, 17) + b"\x00")
    assert body == rec.encode_varint(len(expected_record)) + expected_record
    assert len(data) == 61 + 1 + 16
    _, [r] = rec.decode_batch(data)
    assert rec.parse_control_record(r) == (ControlRecordType.COMMIT, 17)
    abort = rec.build_control_batch(1, 0, False, 5, 0)
    _, [r] = rec.decode_batch(abort)
    assert rec.parse_control_record(r) == (ControlRecordType.ABORT, 5)
    assert r.key == b"\x00\x00\x00\x00"


def test_parse_control_record_unknown_and_bad():
    assert rec.parse_control_record(Record(0, 0, struct.pack(">hh", 0, 99), b"")) == (ControlRecordType.UNKNOWN, None)
    assert rec.parse_control_record(Record(0, 0, struct.pack(">hh", 0, 2), b"x"))[0] == ControlRecordType.LEADER_CHANGE
    with pytest.raises(KafkaError):
        rec.parse_control_record(Record(0, 0, b"\x00", b""))


def test_decode_multiple_batches_and_validate_all():
    a = rec.build_batch(_records(2), base_offset=0)
    b = rec.build_batch(_records(3), base_offset=2, compression=Compression.GZIP)
    buf = a + b
    hs = rec.validate_batches(buf)
    assert [(p, h.base_offset) for p, h in hs] == [(0, 0), (len(a), 2)]
    decoded = rec.decode_batches(buf)
    assert [len(rs) for _, rs in decoded] == [2, 3]


def test_decompress_garbage_is_unknown_server_error():
    # Kafka's answer to a section its codec cannot read (record_validation/broken_codec_streams)
    with pytest.raises(KafkaError) as e:
        rec.decompress(Compression.GZIP, b"not gzip")
    assert e.value.code == ErrorCode.UNKNOWN_SERVER_ERROR


def test_consumer_view_filters_aborted_transactions_as_kafkas_consumer():
    # pid 7: an aborted transaction at 0-1, its ABORT marker at 2, then a committed one at 3-4;
    # pid 8 interleaved at 1 (never aborted); a plain batch at 6
    def txn(pid, offset, value):
        return rec.build_batch([Record(offset, 0, None, value, ())], base_offset=offset, producer_id=pid,
                               producer_epoch=0, base_sequence=offset, is_transactional=True)
    log = b"".join([txn(7, 0, b"a0"), txn(8, 1, b"b1"),
                    rec.build_control_batch(7, 0, commit=False, coordinator_epoch=0, timestamp_ms=0, base_offset=2),
                    txn(7, 3, b"c3"), rec.build_control_batch(7, 0, commit=True, coordinator_epoch=0,
                                                              timestamp_ms=0, base_offset=4),
                    rec.build_batch([Record(5, 0, None, b"p5", ())], base_offset=5)])
    aborted = [(0, 7)]

    def delivered(read_committed, offset=0, aborted_list=aborted):
        return [(h.base_offset, ok) for h, _, ok in rec.consumer_view(log, aborted_list, offset, read_committed)]

    assert delivered(True) == [(0, False), (1, True), (2, False), (3, True), (4, False), (5, True)]
    # read_uncommitted: every data batch, never a marker
    assert delivered(False) == [(0, True), (1, True), (2, False), (3, True), (4, False), (5, True)]
    # from an offset: earlier batches are not yielded (a broker's answer from 3 lists no aborted
    # transaction, that one ended at 2; were it listed, pid 7's batch at 3 would be dropped)
    assert delivered(True, offset=3, aborted_list=[]) == [(3, True), (4, False), (5, True)]
    assert delivered(True, offset=3) == [(3, False), (4, False), (5, True)]
    # the answer's aborted list is what marks an aborted transaction, not the marker alone
    assert delivered(True, aborted_list=[]) == [(0, True), (1, True), (2, False), (3, True), (4, False), (5, True)]


def test_crc32c_is_the_castagnoli_crc_of_the_crc32c_package():
    import os

    import crc32c as package
    assert rec.crc32c(b"123456789") == 0xE3069283  # the CRC-32C check value
    data = os.urandom(10_000)
    assert rec.crc32c(data) == package.crc32c(data) and rec.crc32c(memoryview(data)[7:]) == package.crc32c(data[7:])


@pytest.mark.parametrize("key,value", [(b"\x00\x00\x00\x05tx-12", b"v" * 60), (b"k", None), (None, b""),
                                       (b"k" * 200, b"v" * 70000)])
def test_record_batch_of_one_record_matches_build_batch(key, value):
    """build_record_batch (the coordinators' state records) writes build_batch's bytes."""
    assert rec.build_record_batch(key, value, 1_700_000_000_123) == rec.build_batch(
        [Record(0, 1_700_000_000_123, key, value, ())])
