"""protocol/schema: every advertised (api, version) round-trips, and the codec agrees
with kafka-python's independent implementation on real messages."""
from __future__ import annotations

import uuid

import pytest

from minikafka.protocol import schema
from schema_samples import advertised as _advertised, sample as _sample


@pytest.mark.parametrize("key,version", list(_advertised()))
@pytest.mark.parametrize("kind", ["request", "response"])
def test_round_trip_every_advertised_version(key, version, kind):
    con = schema.message(key, kind, version)
    value = _sample(con)
    data = schema.build(con, value)
    back, used = schema.parse(con, data)
    assert used == len(data)
    assert schema.build(con, back) == data
    for f in con.fields + (con.tagged or []):
        assert back[f.name] == value[f.name] or isinstance(value[f.name], (list, dict))


def test_headers_follow_flexible_versions():
    assert schema.request_header_version(0, 8) == 1 and schema.request_header_version(0, 9) == 2
    assert schema.response_header_version(18, 4) == 0  # ApiVersions: always v0
    assert schema.request_header_version(7, 0) == 0


def test_unknown_tagged_fields_are_skipped():
    con = schema.message(18, "request", 3)
    data = schema.build(con, {"client_software_name": "a", "client_software_version": "b"})
    # replace the empty tag section with one unknown tag (tag 99, 2 bytes)
    data = data[:-1] + bytes([1, 99, 2, 0xAB, 0xCD])
    back, used = schema.parse(con, data)
    assert used == len(data) and back.client_software_name == "a"


def test_truncated_input_raises_schema_error():
    con = schema.message(3, "request", 12)
    data = schema.build(con, {"topics": [{"name": "abc", "topic_id": uuid.uuid4()}]})
    with pytest.raises(schema.SchemaError):
        schema.parse(con, data[:-4])


def test_kafka_python_decodes_our_metadata_response():
    from kafka.protocol.metadata import MetadataResponse
    body = {"brokers": [{"node_id": 1, "host": "h", "port": 9092, "rack": None}], "cluster_id": "c",
            "controller_id": 1, "topics": [{"error_code": 0, "name": "t", "topic_id": uuid.uuid4(), "is_internal": False,
                                            "partitions": [{"partition_index": 0, "leader_id": 1, "leader_epoch": 0,
                                                            "replica_nodes": [1], "isr_nodes": [1], "offline_replicas": []}]}]}
    for v in (1, 9, 12):
        frame = schema.encode_response(3, v, 7, body)
        payload = frame[4:]
        resp = MetadataResponse[v].decode(payload[5:] if v >= 9 else payload[4:])
        topics = resp.topics
        assert topics[0].name == "t" if hasattr(topics[0], "name") else topics[0][1] == "t"


def _produce_frame(records: bytes) -> bytes:
    """A Produce v9 request frame (no size prefix) carrying ``records`` for one partition."""
    return schema.encode_request(0, 9, 1, "c", {"transactional_id": None, "acks": 1, "timeout_ms": 1000,
                                                "topic_data": [{"name": "t", "partition_data": [
                                                    {"index": 0, "records": records}]}]})[4:]


def _records(frame):
    return schema.decode_request(frame)[1]["topic_data"][0]["partition_data"][0]["records"]


def test_produce_records_are_a_view_of_an_unchanging_frame():
    """A request's records are not copied out of a frame that does not change (bytes, or the
    FrameReader's read-only view of a buffer of its own): the view is read-only."""
    batch = bytes(range(256)) * 4
    frame = _produce_frame(batch)
    records = _records(frame)
    assert isinstance(records, memoryview) and records.readonly and records.obj is frame
    assert records == batch
    owner = bytearray(frame)
    records = _records(memoryview(owner).toreadonly())
    assert isinstance(records, memoryview) and records.readonly and records.obj is owner
    assert records == batch


def test_produce_records_of_a_writable_frame_are_copied():
    """A writable frame may be reused by its owner: its records are bytes of their own."""
    batch = bytes(range(256)) * 4
    owner = bytearray(_produce_frame(batch))
    records = _records(owner)
    assert type(records) is bytes
    owner[:] = bytes(len(owner))
    assert records == batch


def test_other_bytes_fields_and_response_records_stay_bytes():
    """Only a request's records are views: every other bytes field (hashed, compared, kept in
    coordinator state) and the records of a decoded response are bytes."""
    frame = schema.encode_request(36, 2, 1, "c", {"auth_bytes": b"\x00user\x00secret"})[4:]
    assert type(schema.decode_request(frame)[1]["auth_bytes"]) is bytes
    frame = schema.encode_request(11, 9, 1, "c", {
        "group_id": "g", "session_timeout_ms": 10, "rebalance_timeout_ms": 10, "member_id": "",
        "group_instance_id": None, "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": b"\x00\x01meta"}]})[4:]
    assert type(schema.decode_request(frame)[1]["protocols"][0]["metadata"]) is bytes
    body = {"responses": [{"topic": "t", "partitions": [{"partition_index": 0, "records": b"\x01" * 70}]}]}
    _, back = schema.decode_response(1, 12, schema.encode_response(1, 12, 5, body)[4:])
    assert type(back["responses"][0]["partitions"][0]["records"]) is bytes
