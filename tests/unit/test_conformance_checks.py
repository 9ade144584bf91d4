"""The conformance suite's own checks at the wire (tests/conformance/normalize.py, runner.py,
golden.py), without a broker: each fault they exist for shows as a named field that differs."""
from __future__ import annotations

import struct

from conformance import golden
from conformance.dsl import Differs, Scenario
from conformance.normalize import Normalizer, api_versions_table, differences
from conformance.runner import decode_exact
from minikafka.protocol import records as rec
from minikafka.protocol import schema

PLAIN, SASL = "127.0.0.1:9092", "127.0.0.1:9093"


def _norm() -> Normalizer:
    return Normalizer({"{t}": "real-topic"}, {"PLAINTEXT": PLAIN, "SASL_PLAINTEXT": SASL})


def _batch(values=("a",), log_append_time: int | None = None) -> bytes:
    b = bytearray(rec.build_batch([rec.Record(i, 1000, None, v.encode(), ()) for i, v in enumerate(values)]))
    if log_append_time is not None:
        rec.set_log_append_time(b, 0, log_append_time)
    return bytes(b)


def _fetch(records: bytes, topic: str = "real-topic") -> dict:
    return {"responses": [{"topic": topic, "partitions": [{"partition_index": 0, "records": records}]}]}


def _produce_request(records: bytes) -> dict:
    return {"topic_data": [{"name": "real-topic", "partition_data": [{"index": 0, "records": records}]}]}


def _produce_answer(base: int, stamp: int) -> dict:
    return {"responses": [{"name": "real-topic", "partition_responses": [
        {"index": 0, "error_code": 0, "base_offset": base, "log_append_time_ms": stamp}]}]}


def _diff_paths(kafka, ours) -> dict:
    return {path: (k, o) for path, k, o in differences(kafka, ours)}


def test_a_batch_with_a_wrong_crc_differs_in_its_crc_field():
    good = _batch(["a", "b"])
    bad = bytearray(good)
    bad[-1] ^= 1   # a value's last byte: the batch still decodes, its CRC no longer matches
    kafka = _norm().response("Fetch", {}, _fetch(good), 1)
    ours = _norm().response("Fetch", {}, _fetch(bytes(bad)), 1)
    assert "crc" not in kafka["responses"][0]["partitions"][0]["records"][0]
    diffs = _diff_paths(kafka, ours)
    assert diffs["responses[0].partitions[0].records[0].crc"] == ("<absent>", "wrong: not the CRC-32C of the batch")


def test_log_append_time_is_followed_from_the_produce_answer_to_the_fetch():
    def run(answered: int, stored: int) -> dict:
        n = _norm()
        sent = _batch()
        n.response("Produce", _produce_request(sent), _produce_answer(5, answered), 1)
        fetched = bytearray(_batch(log_append_time=stored))
        rec.patch_base_offset(fetched, 0, 5)
        return n.response("Fetch", {}, _fetch(bytes(fetched)), 2)
    kafka, ours = run(1_700_000_000_000, 1_700_000_000_000), run(1_700_000_000_000 - 3_600_000, 1_700_000_000_000)
    assert kafka["responses"][0]["partitions"][0]["records"][0]["append_time"] == "<log_append_time_ms of step 1>"
    diffs = _diff_paths(kafka, ours)
    assert diffs["responses[0].partitions[0].records[0].append_time"] == (
        "<log_append_time_ms of step 1>", "<log_append_time_ms of step 1 +3600000 ms>")


def test_endpoints_are_named_after_their_listener():
    def brokers(port):
        return _norm().response("Metadata", {}, {"brokers": [{"node_id": 1, "host": "127.0.0.1", "port": port}]}, 1)
    kafka, ours = brokers(9093), brokers(9092)
    assert kafka["brokers"][0] == {"node_id": 1, "host": "<SASL_PLAINTEXT host>", "port": "<SASL_PLAINTEXT port>"}
    assert _diff_paths(kafka, ours)["brokers[0].port"] == ("<SASL_PLAINTEXT port>", "<PLAINTEXT port>")
    other = _norm()({"host": "localhost", "port": 9093})
    assert other == {"host": "localhost", "port": "<SASL_PLAINTEXT port>"}
    assert _norm()({"host": "127.0.0.1", "port": 1})["port"] == "<not a listener's port>"
    assert _norm()({"principal": "User:alice", "host": "*"})["host"] == "*"   # an ACL's host is compared as is


def test_an_api_missing_from_api_versions_is_named():
    def table(keys):
        return api_versions_table({"error_code": 0, "api_keys": [
            {"api_key": k, "min_version": lo, "max_version": hi} for k, lo, hi in keys]})
    kafka = table([(0, 0, 13), (26, 0, 5)])
    ours = table([(0, 0, 3)])
    assert kafka["api_keys"] == {"Produce": "0-13", "EndTxn": "0-5"}
    assert _diff_paths(kafka, ours) == {"api_keys.Produce": ("0-13", "0-3"), "api_keys.EndTxn": ("0-5", "<absent>")}


def test_bytes_after_an_answer_are_kept():
    frame = schema.encode_response(18, 0, 7, {"error_code": 0, "api_keys": [], "throttle_time_ms": 0})[4:]
    assert "trailing_bytes" not in decode_exact(18, 0, frame)
    assert decode_exact(18, 0, frame + b"\x00\x01")["trailing_bytes"] == b"\x00\x01"
    assert struct.unpack(">i", frame[:4])[0] == 7


def test_a_declared_difference_that_kafka_answers_too_fails():
    s = Scenario("x/y", "", steps=[], differs={1: Differs("why", {"error_code": 0})})
    step = {"step": 1, "request": {"api": "Produce", "version": 9, "body": {}}}
    kafka = [dict(step, response={"error_code": 0})]
    ours = [dict(step, response={"error_code": 0})]
    [problem] = golden.compare(s, kafka, ours, differences)
    assert "the difference is gone" in problem and "error_code" in problem
    assert golden.compare(s, [dict(step, response={"error_code": 5})], ours, differences) == []
    assert golden.compare(s, kafka, ours, differences, declared=False) == []


def test_consumer_group_describe_groups_compare_in_any_order_but_not_with_other_contents():
    # Kafka answers the groups per coordinator partition: an order that follows the run's names
    s = Scenario("x/y", "", steps=[])
    step = {"step": 1, "request": {"api": "ConsumerGroupDescribe", "version": 1, "body": {}}}
    g = {"group_id": "{g}", "error_code": 0}
    missing = {"group_id": "{nothere}", "error_code": 69}
    kafka = [dict(step, response={"groups": [g, missing]})]
    assert golden.compare(s, kafka, [dict(step, response={"groups": [missing, g]})], differences) == []
    [problem] = golden.compare(s, kafka, [dict(step, response={"groups": [dict(missing, error_code=0), g]})],
                               differences)
    assert "groups[1].error_code: Kafka 69, minikafka 0" in problem
