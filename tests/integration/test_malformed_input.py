"""Bad input gets Kafka's error code or a clean connection close; the broker keeps
serving other connections and loses nothing already stored (issue 2, criterion 4)."""
from __future__ import annotations

import struct

import pytest

from minikafka.protocol import schema
from rawclient import RawClient, make_batch

MAX_REQUEST = 1 << 20  # socket.request.max.bytes for this module's broker
MAX_MESSAGE = 64 * 1024  # message.max.bytes


@pytest.fixture(scope="module")
def small_broker(tmp_path_factory):
    from harness import BrokerProcess
    b = BrokerProcess(tmp_path_factory.mktemp("malformed") / "data",
                      overrides={"socket.request.max.bytes": MAX_REQUEST, "message.max.bytes": MAX_MESSAGE},
                      name="malformed")
    b.start()
    try:
        with RawClient.to(b.bootstrap) as c:
            assert c.create_topic("stored", 1) == 0
            p = c.produce("stored", 0, make_batch([b"keep-%d" % i for i in range(10)]))
            assert p.error_code == 0
        yield b
    finally:
        b.close()


def assert_still_serving(b):
    """Another connection works and the data stored before is intact."""
    with RawClient.to(b.bootstrap) as c:
        assert c.list_offset("stored", 0) == 10
        _, batches = c.fetch_all("stored", 0)
        values = [r.value for _, recs in batches for r in recs]
        assert values == [b"keep-%d" % i for i in range(10)]
    assert b.running


def test_negative_frame_size_closes_connection(small_broker):
    with RawClient.to(small_broker.bootstrap) as c:
        c.send_frame(struct.pack(">i", -5) + b"xxxx")
        assert c.is_closed_by_peer()
    assert_still_serving(small_broker)


def test_oversized_frame_closes_connection(small_broker):
    with RawClient.to(small_broker.bootstrap) as c:
        c.send_frame(struct.pack(">i", MAX_REQUEST + 1))
        assert c.is_closed_by_peer()
    assert_still_serving(small_broker)


def test_truncated_body_closes_connection(small_broker):
    frame = schema.encode_request(3, 9, 1, "t", {"topics": [{"name": "stored"}], "allow_auto_topic_creation": False})
    payload = frame[4:-3]  # cut inside the body but frame it consistently
    with RawClient.to(small_broker.bootstrap) as c:
        c.send_frame(struct.pack(">i", len(payload)) + payload)
        assert c.is_closed_by_peer()
    assert_still_serving(small_broker)


def test_disconnect_mid_frame_is_harmless(small_broker):
    with RawClient.to(small_broker.bootstrap) as c:
        c.send_frame(struct.pack(">i", 1000) + b"\x00" * 10)
    assert_still_serving(small_broker)


def test_disconnect_mid_large_frame_is_harmless(small_broker):
    # a frame past 64 KiB is received into its own buffer (broker/server.py FrameReader)
    with RawClient.to(small_broker.bootstrap) as c:
        c.send_frame(struct.pack(">i", 500_000) + b"\x00" * 200_000)
    assert_still_serving(small_broker)


def test_large_frames_back_to_back_are_each_answered(small_broker):
    """Frames past 64 KiB and a small one, sent in one write, each answered in order."""
    big = [make_batch([b"%d-" % i + b"v" * 100_000]) for i in range(2)]  # under MAX_REQUEST, over message.max.bytes
    frames = b"".join(schema.encode_request(0, 9, 100 + i, "t", {
        "transactional_id": None, "acks": 1, "timeout_ms": 1000,
        "topic_data": [{"name": "stored", "partition_data": [{"index": 0, "records": b}]}]}) for i, b in enumerate(big))
    small = schema.encode_request(18, 3, 99, "t", {"client_software_name": "t", "client_software_version": "1"})
    with RawClient.to(small_broker.bootstrap) as c:
        c.sock.sendall(frames + small)
        ids = [struct.unpack_from(">i", c.recv_frame(), 0)[0] for _ in range(3)]
    assert ids == [100, 101, 99]
    assert_still_serving(small_broker)


def test_unknown_api_key_closes_connection(small_broker):
    payload = struct.pack(">hhih", 999, 0, 7, -1)
    with RawClient.to(small_broker.bootstrap) as c:
        c.send_frame(struct.pack(">i", len(payload)) + payload)
        assert c.is_closed_by_peer()
    assert_still_serving(small_broker)


def test_unsupported_version_closes_connection(small_broker):
    payload = struct.pack(">hhih", 0, 99, 7, -1) + b"\x00" * 20
    with RawClient.to(small_broker.bootstrap) as c:
        c.send_frame(struct.pack(">i", len(payload)) + payload)
        assert c.is_closed_by_peer()
    assert_still_serving(small_broker)


def test_api_versions_too_new_gets_v0_unsupported_version(small_broker):
    # KIP-511: answered with a v0 body, error UNSUPPORTED_VERSION, and the range of ApiVersions
    # alone (Kafka's ApiVersionsRequest.getErrorResponse; recorded, cluster_apis/api_versions)
    payload = struct.pack(">hhih", 18, 99, 42, -1) + b"\x00\x00"
    with RawClient.to(small_broker.bootstrap) as c:
        c.send_frame(struct.pack(">i", len(payload)) + payload)
        corr, body = schema.decode_response(18, 0, c.recv_frame())
        assert corr == 42
        assert body.error_code == 35
        keys = {k.api_key: (k.min_version, k.max_version) for k in body.api_keys}
        assert keys == {18: (0, 4)}
        # the connection stays usable: a supported version now works
        assert c.request(18, 3, {"client_software_name": "t", "client_software_version": "1"}).error_code == 0


def test_bad_crc_is_corrupt_message_and_not_stored(small_broker):
    batch = bytearray(make_batch([b"bad"]))
    batch[-1] ^= 0xFF  # flip a bit in the records: the CRC no longer matches
    with RawClient.to(small_broker.bootstrap) as c:
        p = c.produce("stored", 0, bytes(batch))
        assert p.error_code == 2  # CORRUPT_MESSAGE
        assert c.list_offset("stored", 0) == 10
    assert_still_serving(small_broker)


def test_batch_over_message_max_bytes_is_message_too_large(small_broker):
    with RawClient.to(small_broker.bootstrap) as c:
        p = c.produce("stored", 0, make_batch([b"x" * (MAX_MESSAGE + 100)]))
        assert p.error_code == 10  # MESSAGE_TOO_LARGE
        assert c.list_offset("stored", 0) == 10
    assert_still_serving(small_broker)


def test_garbage_records_field_is_rejected(small_broker):
    with RawClient.to(small_broker.bootstrap) as c:
        p = c.produce("stored", 0, b"\x00" * 7)
        # INVALID_RECORD: no whole batch (Kafka 4.1, conformance produce_validation/batch_length_mismatch)
        assert p.error_code == 87
        assert c.list_offset("stored", 0) == 10
    assert_still_serving(small_broker)


def test_two_batches_in_one_partition_is_invalid_record(small_broker):
    with RawClient.to(small_broker.bootstrap) as c:
        p = c.produce("stored", 0, make_batch([b"a"]) + make_batch([b"b"]))
        assert p.error_code == 87  # INVALID_RECORD: v3+ carries exactly one batch
        assert c.list_offset("stored", 0) == 10
    assert_still_serving(small_broker)
