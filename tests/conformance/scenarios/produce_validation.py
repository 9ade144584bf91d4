"""How Kafka refuses bad Produce input (LogValidator, UnifiedLog.analyzeAndValidateRecords,
ProduceRequest.validateRecords, ReplicaManager.appendRecords) and how it answers ListOffsets
edge cases (Partition.fetchOffsetForTimestamp, UnifiedLog.fetchOffsetByTimestamp).

Bad batches are valid ones (dsl ``batch``) broken by the helpers below, each named after what
it breaks; the CRC is recomputed unless the CRC is what is broken, so the broker sees exactly
that one fault.

Records that do not match their batch (counts, lengths, trailing bytes, codec streams, inner
offsets) are in record_validation.py."""
import struct
import uuid
import zlib

from minikafka.protocol import records as rec

from ..dsl import (TV2, Batch, Scenario, Topic, add_partitions, await_txn, batch, call, delete_records,
                   describe_producers, describe_txn, end_txn, fetch, idem_produce, init_pid, list_offsets, produce,
                   produce_parts, restart, txn_produce)

RC, RU = 1, 0
HOUR = 3_600_000


# ---------------------------------------------------------------- breaking a built batch

def _recrc(b: bytearray) -> bytes:
    struct.pack_into(">I", b, rec.CRC_OFFSET, rec.compute_crc(b, 0, len(b)))
    return bytes(b)


def wrong_crc(built: bytes) -> bytes:
    """The stored CRC is one more than the bytes' CRC."""
    b = bytearray(built)
    struct.pack_into(">I", b, rec.CRC_OFFSET, (struct.unpack_from(">I", b, rec.CRC_OFFSET)[0] + 1) % (1 << 32))
    return bytes(b)


def header_field(fmt: str, offset: int, value: int):
    """A header field set to ``value`` (CRC recomputed when the field is under it)."""
    def corrupt(built: bytes) -> bytes:
        b = bytearray(built)
        struct.pack_into(fmt, b, offset, value)
        return _recrc(b) if offset >= rec.ATTRIBUTES_OFFSET else bytes(b)
    return corrupt


def records_count(n: int):
    return header_field(">i", rec.RECORDS_COUNT_OFFSET, n)


def last_offset_delta(n: int):
    return header_field(">i", rec.LAST_OFFSET_DELTA_OFFSET, n)


def count_and_delta(count: int, delta: int):
    """records_count and last_offset_delta agree with each other, not with the records present."""
    def corrupt(built: bytes) -> bytes:
        return records_count(count)(last_offset_delta(delta)(built))
    return corrupt


def magic(m: int):
    """The magic byte (outside the CRC) set to ``m``; the rest is a v2 batch."""
    return header_field(">b", rec.MAGIC_OFFSET, m)


def attributes(value: int):
    return header_field(">h", rec.ATTRIBUTES_OFFSET, value)


def batch_length(delta: int):
    """batchLength ``delta`` bytes more than the bytes that follow."""
    def corrupt(built: bytes) -> bytes:
        b = bytearray(built)
        struct.pack_into(">i", b, rec.LENGTH_OFFSET, len(b) - rec.LOG_OVERHEAD + delta)
        return bytes(b)
    return corrupt


def cut(n: int):
    """Only the first ``n`` bytes of the batch."""
    return lambda built: built[:n]


def twice(built: bytes) -> bytes:
    """Two whole batches back to back in one partition's records."""
    return built + built


def followed_by(tail: bytes | None = None, cut_copy: int | None = None):
    """The batch, then ``tail`` (bytes that make no batch) or the first ``cut_copy`` bytes of a
    copy of itself."""
    return lambda built: built + (tail if tail is not None else built[:cut_copy])


def offset_deltas(deltas):
    """The records re-encoded with these offset deltas (last_offset_delta and count unchanged)."""
    def corrupt(built: bytes) -> bytes:
        h, records = rec.decode_batch(built)
        return rec.build_batch([r._replace(offset=d) for r, d in zip(records, deltas)],
                               last_offset_delta=h.last_offset_delta)
    return corrupt


def legacy_message(m: int, value: bytes = b"legacy", key: bytes | None = None) -> bytes:
    """A magic 0 or 1 message set of one uncompressed message (what Produce v0-v2 carried)."""
    body = struct.pack(">bb", m, 0) + (struct.pack(">q", 1_600_000_000_000) if m == 1 else b"")
    for field in (key, value):
        body += struct.pack(">i", -1) if field is None else struct.pack(">i", len(field)) + field
    message = struct.pack(">I", zlib.crc32(body)) + body
    return struct.pack(">qi", 0, len(message)) + message


def plain(values=("v",), **kw) -> Batch:
    return batch(None, list(values), **kw)


def send(b: Batch, v: int = 9, **kw):
    return produce(b, v=v, **kw)


def raw(data: bytes, v: int = 9, **kw):
    return produce(data, v=v, **kw)


def produce_v(v: int, topic_data: list, acks: int = -1, **kw):
    return call(0, v, {"transactional_id": None, "acks": acks, "timeout_ms": 30000, "topic_data": topic_data}, **kw)


def latest(**kw):
    return list_offsets(timestamp=-1, isolation=RU, **kw)


# ---------------------------------------------------------------- Produce: batch structure

SCENARIOS = [
    Scenario("produce_validation/crc_mismatch", "A batch whose stored CRC does not match its bytes, at Produce "
             "v3, v8, v9 and v11: nothing is written; a good batch then lands at offset 0.", steps=[
        *[send(plain(corrupt=wrong_crc), v=v) for v in (3, 8, 9, 11)],
        latest(),
        send(plain()),
    ]),
    Scenario("produce_validation/crc_mismatch_among_partitions", "One Produce for three partitions where the "
             "middle one's batch has a wrong CRC, plus a partition and a topic that do not exist: each "
             "partition gets its own answer.", topics={"t": Topic(partitions=3)}, steps=[
        produce_parts([("{t}", 0, plain(["a"])), ("{t}", 1, plain(["b"], corrupt=wrong_crc)),
                       ("{t}", 2, plain(["c"])), ("{t}", 7, plain(["d"])), ("{nosuch}", 0, plain(["e"]))]),
        *[list_offsets(partition=p, isolation=RU) for p in (0, 1, 2)],
    ]),
    Scenario("produce_validation/count_vs_last_offset_delta", "records_count and last_offset_delta disagree "
             "(CRC recomputed): a count above and below lastOffsetDelta + 1, a zero and a negative count, a "
             "negative lastOffsetDelta.", steps=[
        send(plain(["a", "b"], corrupt=records_count(3))),
        send(plain(["a", "b"], corrupt=records_count(1))),
        send(plain(["a"], corrupt=records_count(0))),
        send(plain(["a"], corrupt=count_and_delta(0, -1))),
        send(plain(["a"], corrupt=records_count(-1))),
        send(plain(["a"], corrupt=last_offset_delta(-1))),
        latest(),
    ]),
    Scenario("produce_validation/offset_deltas_not_monotonic", "Uncompressed records whose offset deltas "
             "repeat, run backwards or skip (header consistent, CRC valid): written as sent, and fetched so.",
             steps=[
        send(plain(["a", "b"], corrupt=offset_deltas([0, 0]))),
        send(plain(["a", "b"], corrupt=offset_deltas([1, 0]))),
        send(plain(["a", "b"], corrupt=offset_deltas([0, 5]))),
        latest(),
        fetch(isolation=RU),
    ]),
    Scenario("produce_validation/batch_length_mismatch", "batchLength larger or smaller than the bytes sent, "
             "records cut inside the header and inside the records.", steps=[
        send(plain(["a"], corrupt=batch_length(5))),
        send(plain(["a"], corrupt=batch_length(-1))),
        send(plain(["a"], corrupt=cut(30))),
        send(plain(["a", "b"], corrupt=cut(rec.HEADER_SIZE + 3))),
        send(plain(["a"], corrupt=batch_length(-(rec.HEADER_SIZE - rec.LOG_OVERHEAD) - 1)),
             label="batchLength below the v2 header"),
        latest(),
    ]),
    # (records null: Kafka 4.1 never answers that request, so there is no answer to compare)
    Scenario("produce_validation/empty_records", "A partition whose records are empty bytes, at v9 and v3.",
             steps=[
        raw(b""),
        raw(b"", v=3),
        latest(),
    ]),
    Scenario("produce_validation/two_batches", "Two whole batches in one partition's records (Produce v3+ allows "
             "one); a batch followed by bytes that make no whole batch: 5 bytes, 12 bytes declaring length 0, "
             "a copy cut after its magic, a copy cut before it.", steps=[
        send(plain(["a"], corrupt=twice)),
        send(plain(["a"], corrupt=twice), v=3),
        send(plain(["b"], corrupt=followed_by(b"\x01\x02\x03\x04\x05"))),
        send(plain(["c"], corrupt=followed_by(bytes(12)))),
        send(plain(["d"], corrupt=followed_by(cut_copy=30))),
        send(plain(["e"], corrupt=followed_by(cut_copy=14))),
        latest(),
        fetch(isolation=RU),
    ]),
    Scenario("produce_validation/unreadable_first_batch", "A first batch whose declared length is below any "
             "batch's (7) or whose magic is 3, beside good partitions and an unknown topic: Kafka cannot read "
             "it before anything else, and the whole request fails.", topics={"t": Topic(partitions=2)}, steps=[
        produce_parts([("{t}", 0, plain(["a"])), ("{t}", 1, plain(["b"], corrupt=magic(3)))]),
        produce_parts([("{t}", 0, plain(["a"])), ("{nosuch}", 0, plain(["b"])),
                       ("{t}", 1, plain(["c"], corrupt=batch_length(-(rec.HEADER_SIZE - rec.LOG_OVERHEAD) - 1)))]),
        produce_parts([("{t}", 0, plain(["a"])), ("{t}", 1, plain(["b"], corrupt=magic(-1)))], v=3),
        *[list_offsets(partition=p, isolation=RU) for p in (0, 1)],
    ]),
    Scenario("produce_validation/legacy_magic", "Message sets of magic 0 and 1 (Produce v0-v2's format) sent with "
             "Produce v3, v9 and v11, and a v2 batch whose magic byte says 3 or 1.", steps=[
        *[raw(legacy_message(m), v=v) for m in (0, 1) for v in (3, 9, 11)],
        send(plain(corrupt=magic(3))),
        send(plain(corrupt=magic(1))),
        latest(),
    ]),
    Scenario("produce_validation/unknown_compression_codec", "Compression codec ids 5, 6 and 7 in the attributes "
             "(CRC recomputed), at Produce v9 and v3; at v3 and v9 beside a good partition.",
             topics={"t": Topic(partitions=2)}, steps=[
        *[send(plain(corrupt=attributes(codec))) for codec in (5, 6, 7)],
        send(plain(corrupt=attributes(5)), v=3),
        *[produce_parts([("{t}", 0, plain(["a"])), ("{t}", 1, plain(["b"], corrupt=attributes(6)))], v=v)
          for v in (3, 9)],
        *[list_offsets(partition=p, isolation=RU) for p in (0, 1)],
    ]),
    Scenario("produce_validation/zstd_before_v7", "A zstd batch at Produce v3 and v6 (zstd needs v7+), then at "
             "v7; at v3 beside a good partition and an empty one.", topics={"t": Topic(partitions=3)}, steps=[
        send(plain(["z"], compression=4), v=3),
        send(plain(["z"], compression=4), v=6),
        send(plain(["z"], compression=4), v=7),
        fetch(isolation=RU),
        produce_parts([("{t}", 0, plain(["z"], compression=4)), ("{t}", 1, plain(["a"])), ("{t}", 2, b"")], v=3),
        *[list_offsets(partition=p, isolation=RU) for p in (0, 1, 2)],
    ]),
    Scenario("produce_validation/producer_set_log_append_time", "A client batch with the LogAppendTime attribute "
             "on a CreateTime topic, at v3 and v9, uncompressed and gzip.", steps=[
        send(plain(["a", "b"], corrupt=attributes(0x08)), v=3),
        send(plain(["a", "b"], corrupt=attributes(0x08))),
        send(plain(["a", "b"], compression=1, corrupt=attributes(0x09))),
        latest(),
    ]),
]

# ---------------------------------------------------------------- Produce: request-level checks

SCENARIOS += [
    Scenario("produce_validation/invalid_acks", "acks 2 and -2 with a good batch, with a wrong CRC and with a "
             "magic 1 message set in another partition, plus an unknown partition.", topics={"t": Topic(partitions=2)},
             steps=[
        send(plain(), acks=2),
        send(plain(), acks=-2),
        produce_parts([("{t}", 0, plain(["a"])), ("{t}", 1, plain(["b"], corrupt=wrong_crc)), ("{t}", 5, plain())],
                      acks=2),
        produce_v(9, [{"name": "{t}", "partition_data": [{"index": 0, "records": plain()},
                                                          {"index": 1, "records": legacy_message(1)}]}], acks=3),
        send(plain(), acks=2, v=3),
        latest(),
    ]),
    Scenario("produce_validation/acks_zero_error", "acks=0 and a batch Kafka refuses: the connection is closed "
             "(the producer sees the failure on its next request).", steps=[
        send(plain(corrupt=wrong_crc), acks=0),
        latest(),
    ]),
    Scenario("produce_validation/unknown_topic_and_partition", "Produce to a topic that does not exist (not "
             "created by Produce), a partition past the topic's, a negative partition, and a topic id nobody "
             "has (v13).", steps=[
        send(plain(), topic="{nosuch}"),
        send(plain(), topic="{nosuch}", v=3),
        send(plain(), partition=1),
        send(plain(), partition=-1),
        send(plain(), topic=uuid.UUID("00000000-0000-0000-0000-00000000abcd"), v=13),
        send(plain(), v=13),
        send(plain(), topic="{nosuch}", v=11),
        send(plain(), partition=3, v=13),
        list_offsets(topic="{nosuch}"),
    ]),
    Scenario("produce_validation/duplicate_partition", "One partition twice in one Produce (two batches), and "
             "one topic twice: how many answers, and what is written.", steps=[
        produce_v(9, [{"name": "{t}", "partition_data": [{"index": 0, "records": plain(["a"])},
                                                          {"index": 0, "records": plain(["b"])}]}]),
        produce_v(9, [{"name": "{t}", "partition_data": [{"index": 0, "records": plain(["c"])}]},
                      {"name": "{t}", "partition_data": [{"index": 0, "records": plain(["d"])}]}]),
        produce_v(9, [{"name": "{t}", "partition_data": [{"index": 0, "records": plain(["e"])},
                                                          {"index": 0, "records": plain(["f"], corrupt=wrong_crc)}]}]),
        fetch(isolation=RU),
    ]),
    Scenario("produce_validation/error_fields_by_version", "A partition that does not exist and a wrong CRC at "
             "Produce v3, v8, v10, v11 and v12: which fields each version answers.",
             steps=[
        *[produce_v(v, [{"name": "{t}", "partition_data": [{"index": 0, "records": plain(corrupt=wrong_crc)},
                                                            {"index": 3, "records": plain()}]}]) for v in
          (3, 8, 10, 11, 12)],
    ]),
]

# ---------------------------------------------------------------- Produce: topic configs

SCENARIOS += [
    Scenario("produce_validation/message_too_large", "max.message.bytes=1000: batches of 1000 and 1001 bytes "
             "(the limit counts the whole batch), and a gzip batch whose uncompressed size is over it.",
             topics={"t": Topic(configs={"max.message.bytes": "1000"})}, steps=[
        # one record of value n (930 here) is a batch of n + 70 bytes
        send(plain(["x" * 930])),
        send(plain(["x" * 931])),
        send(plain(["x" * 931]), v=3),
        send(plain(["y" * 5000], compression=1)),
        latest(),
    ]),
    Scenario("produce_validation/message_too_large_after_recompression", "compression.type=uncompressed and "
             "max.message.bytes=1000: a gzip batch under the limit whose records are over it once decompressed; "
             "then compression.type=gzip: an uncompressed batch over the limit that gzip would shrink.",
             topics={"t": Topic(configs={"compression.type": "uncompressed", "max.message.bytes": "1000"}),
                     "g": Topic(configs={"compression.type": "gzip", "max.message.bytes": "1000"})}, steps=[
        send(plain(["y" * 5000], compression=1)),
        send(plain(["y" * 500, "z" * 500], compression=1)),
        send(plain(["y" * 5000]), topic="{g}"),
        send(plain(["y" * 500]), topic="{g}"),
        latest(),
        latest(topic="{g}"),
    ]),
    Scenario("produce_validation/record_list_too_large", "A batch larger than the topic's segment.bytes (its "
             "max.message.bytes allows it): RECORD_LIST_TOO_LARGE; one that fits is written.",
             topics={"t": Topic(configs={"segment.bytes": "1048576", "max.message.bytes": "4000000"})}, steps=[
        send(plain(["x" * 1_100_000])),
        send(plain(["x" * 1_000_000])),
        latest(),
    ]),
    Scenario("produce_validation/timestamp_bounds", "message.timestamp.before.max.ms and after.max.ms of one hour: "
             "one bad record of three (before, after), at v3, v8 and v11; a batch where every record is bad; "
             "a record at the edge is accepted.",
             topics={"t": Topic(configs={"message.timestamp.before.max.ms": str(HOUR),
                                         "message.timestamp.after.max.ms": str(HOUR)})}, steps=[
        *[send(plain(["a", "b", "c"], timestamps=[0, -2 * HOUR, 0]), v=v) for v in (3, 8, 11)],
        send(plain(["a", "b", "c"], timestamps=[0, 0, 2 * HOUR])),
        send(plain(["a", "b", "c", "d", "e"], timestamps=[-2 * HOUR, 2 * HOUR, -3 * HOUR, 3 * HOUR, -4 * HOUR])),
        send(plain(["a", "b"], timestamps=[-2 * HOUR, 0], compression=1)),
        send(plain(["ok"], timestamps=[-HOUR + 60_000])),
        latest(),
    ]),
    Scenario("produce_validation/compacted_null_key", "cleanup.policy=compact: a record without a key among "
             "keyed ones at v3, v8 and v11, gzip too; a keyless record that is also out of the timestamp bounds.",
             topics={"t": Topic(configs={"cleanup.policy": "compact",
                                         "message.timestamp.before.max.ms": str(HOUR)})}, steps=[
        *[send(plain(["a", "b", "c"], keys=["k", None, "k"]), v=v) for v in (3, 8, 11)],
        send(plain(["a", "b"], keys=[None, "k"], compression=1)),
        send(plain(["a", "b"], keys=[None, "k"], timestamps=[0, -2 * HOUR])),
        send(plain(["a", "b"], keys=[None, "k"], timestamps=[-2 * HOUR, 0])),
        send(plain(["a"], keys=["k"])),
        latest(),
    ]),
    Scenario("produce_validation/log_append_time_topic_versions", "message.timestamp.type=LogAppendTime: the "
             "answer's log_append_time_ms at v3, v8 and v11, a gzip batch, and what a fetch shows.",
             topics={"t": Topic(configs={"message.timestamp.type": "LogAppendTime"})}, steps=[
        *[send(plain(["a"], timestamps=[-2 * HOUR]), v=v) for v in (3, 8, 11)],
        send(plain(["b", "c"], compression=1)),
        send(plain(["a"], corrupt=wrong_crc)),
        fetch(isolation=RU),
    ]),
    Scenario("produce_validation/min_insync_replicas", "min.insync.replicas=2 on a partition with one replica: "
             "acks=-1 is refused, acks=1 is written.",
             topics={"t": Topic(configs={"min.insync.replicas": "2"})}, steps=[
        send(plain(["all"]), acks=-1),
        send(plain(["one"]), acks=1),
        send(plain(["all"]), acks=-1, v=3),
        latest(),
    ]),
]

SCENARIOS += [
    Scenario("produce_validation/internal_topics", "A client's Produce to __consumer_offsets and "
             "__transaction_state, with acks -1 and with acks 2.", steps=[
        send(plain(), topic="__consumer_offsets"),
        send(plain(), topic="__transaction_state", v=3),
        send(plain(), topic="__consumer_offsets", acks=2),
    ]),
    Scenario("produce_validation/client_offsets_and_epoch", "A client batch with base offset 5 and partition "
             "leader epoch 7 in its header (outside the CRC): what is written; base offset 5 and a wrong CRC, "
             "and base offset 5 in a batch over max.message.bytes: which check comes first.",
             topics={"t": Topic(configs={"max.message.bytes": "1000"})}, steps=[
        send(plain(["a", "b"], corrupt=header_field(">q", rec.BASE_OFFSET_OFFSET, 5))),
        send(plain(["a"], corrupt=lambda b: wrong_crc(header_field(">q", rec.BASE_OFFSET_OFFSET, 5)(b)))),
        send(plain(["x" * 2000], corrupt=header_field(">q", rec.BASE_OFFSET_OFFSET, 5))),
        send(plain(["c"], corrupt=header_field(">i", rec.PARTITION_LEADER_EPOCH_OFFSET, 7))),
        fetch(isolation=RU),
    ]),
    Scenario("produce_validation/header_max_timestamp", "A batch whose header max timestamp is far in the "
             "future (past message.timestamp.after.max.ms) while its records are not (CRC recomputed), and, on a "
             "topic with message.timestamp.before.max.ms, one whose header max is below its records': what "
             "ListOffsets max timestamp and a lookup then see.",
             topics={"t": Topic(), "b": Topic(configs={"message.timestamp.before.max.ms": str(HOUR)})}, steps=[
        send(plain(["a", "b"], timestamps=[-2000, -1000])),
        send(plain(["c"], timestamps=[-3000],
                   corrupt=header_field(">q", rec.MAX_TIMESTAMP_OFFSET, 4_000_000_000_000))),
        list_offsets(timestamp=-3, isolation=RU),
        list_offsets(timestamp=3_000_000_000_000, isolation=RU),
        send(plain(["d"], timestamps=[-1000]), topic="{b}"),
        send(plain(["e", "f"], timestamps=[-3000, -500], corrupt=header_field(">q", rec.MAX_TIMESTAMP_OFFSET, 5)),
             topic="{b}"),
        list_offsets(topic="{b}", timestamp=-3, isolation=RU),
    ]),
    Scenario("produce_validation/log_append_time_ignores_bounds", "message.timestamp.type=LogAppendTime with "
             "one-hour timestamp bounds: records two hours old or ahead are stamped, not refused.",
             topics={"t": Topic(configs={"message.timestamp.type": "LogAppendTime",
                                         "message.timestamp.before.max.ms": str(HOUR),
                                         "message.timestamp.after.max.ms": str(HOUR)})}, steps=[
        send(plain(["a", "b"], timestamps=[-2 * HOUR, 2 * HOUR])),
        send(plain(["c"], timestamps=[-2 * HOUR]), v=3),
        latest(),
    ]),
    Scenario("produce_validation/negative_record_timestamps", "Records stamped -1 (no timestamp) and -5 on a "
             "topic with one-hour timestamp bounds, and on one without.",
             topics={"t": Topic(configs={"message.timestamp.before.max.ms": str(HOUR)}), "u": Topic()}, steps=[
        *[send(plain(["a"], timestamps=[0], base_time=ts), topic=topic) for topic in ("{t}", "{u}")
          for ts in (-1, -5)],
        list_offsets(topic="{u}", timestamp=-3, isolation=RU),
    ]),
]

# ---------------------------------------------------------------- refused batches of producers with state
# A refused batch must leave the producer's sequence and the transaction as they were: the
# producer retries it, or goes on, with the same sequence.

SCENARIOS += [
    Scenario("produce_validation/idempotent_after_refusal", "An idempotent producer's batch refused for a wrong "
             "CRC, a keyless record on a compacted topic and a timestamp out of bounds: the retry with the same "
             "sequence is written, the producer's state shows only it.",
             topics={"t": Topic(configs={"cleanup.policy": "compact",
                                         "message.timestamp.before.max.ms": str(HOUR)})}, steps=[
        init_pid("a", txn=None),
        produce(batch("a", ["x"], 0, keys=["k"], corrupt=wrong_crc)),
        produce(batch("a", ["x"], 0, keys=[None])),
        produce(batch("a", ["x"], 0, keys=["k"], timestamps=[-2 * HOUR])),
        produce(batch("a", ["x"], 0, keys=["k"], corrupt=header_field(">q", rec.BASE_OFFSET_OFFSET, 3))),
        describe_producers(),
        produce(batch("a", ["x"], 0, keys=["k"])),
        produce(batch("a", ["x"], 0, keys=["k"]), label="a duplicate"),
        produce(batch("a", ["y"], 1, keys=["k"])),
        describe_producers(),
    ]),
    Scenario("produce_validation/txn_refused_batch_v3", "A transactional batch refused for a wrong CRC after "
             "AddPartitionsToTxn (Produce v9): the transaction holds the partition, the LSO does not move, the "
             "retry goes in and the commit covers it.", steps=[
        init_pid("a"),
        add_partitions("a"),
        produce(batch("a", ["x"], 0, transactional=True, corrupt=wrong_crc), txn="{tx}"),
        list_offsets(isolation=RC),
        describe_producers(),
        produce(batch("a", ["x"], 0, transactional=True), txn="{tx}"),
        end_txn("a"),
        await_txn("CompleteCommit"),
        fetch(isolation=RC),
    ]),
    Scenario("produce_validation/txn_refused_batch_v12", "Transactions V2: a first transactional batch (Produce "
             "v12, which adds its partition) refused for a wrong CRC, then for a base offset of 4: is the "
             "partition in the transaction?", features=TV2, steps=[
        init_pid("a", v=5),
        produce(batch("a", ["x"], 0, transactional=True, corrupt=wrong_crc), txn="{tx}", v=12),
        describe_txn(),
        produce(batch("a", ["x"], 0, transactional=True, corrupt=header_field(">q", rec.BASE_OFFSET_OFFSET, 4)),
                txn="{tx}", v=12),
        describe_txn(),
        list_offsets(isolation=RC),
        produce(batch("a", ["x"], 0, transactional=True), txn="{tx}", v=12),
        end_txn("a", v=5),
        await_txn("CompleteCommit"),
        fetch(isolation=RC),
    ]),
]

# ---------------------------------------------------------------- ListOffsets
# Records stamped at fixed times, so a lookup can name one; the topics keep them forever
# (time retention would otherwise delete a segment stamped in 2020).
T0 = 1_600_000_000_000
KEPT = {"retention.ms": "-1"}


def at(values, stamps) -> Batch:
    """A batch whose records are stamped T0 + each of ``stamps``."""
    return plain(values, timestamps=list(stamps), base_time=T0)


def lookup(ts: int, isolation: int = RU, v: int = 10, **kw):
    return list_offsets(timestamp=ts, isolation=isolation, v=v, **kw)


SCENARIOS += [
    Scenario("list_offsets/empty_partition", "Every special timestamp (-1 latest, -2 earliest, -3 max timestamp, "
             "-4 earliest local, -5 latest tiered) and a lookup by time on a partition without records, at v10 "
             "and v7.", steps=[
        *[lookup(ts) for ts in (-1, -2, -3, -4, -5, 0, T0)],
        *[lookup(ts, v=7) for ts in (-1, -2, -3)],
    ]),
    Scenario("list_offsets/special_timestamps_by_version", "-3 below v7, -4 below v8, -5 below v9 and at them, "
             "with records.", topics={"t": Topic(configs=KEPT)}, steps=[
        produce(at(["a", "b"], [1000, 3000])),
        produce(at(["c"], [2000])),
        *[lookup(-3, v=v) for v in (1, 6, 7)],
        *[lookup(-4, v=v) for v in (1, 7, 8)],
        *[lookup(-5, v=v) for v in (1, 8, 9, 10)],
    ]),
    Scenario("list_offsets/timestamp_lookup", "Lookups before every record, equal to one, between two, after "
             "every record, and at the last one, across batches with out-of-order timestamps inside one batch.",
             topics={"t": Topic(configs=KEPT)}, steps=[
        produce(at(["a", "b"], [1000, 2000])),
        produce(at(["c", "d", "e"], [5000, 3000, 4000])),
        produce(at(["f"], [6000])),
        *[lookup(T0 + d) for d in (0, 1000, 1500, 2000, 3000, 3500, 4500, 5000, 6000, 6001)],
        lookup(T0 + 3500, v=1),
        lookup(T0 + 3500, v=4),
        lookup(-3),
    ]),
    Scenario("list_offsets/max_timestamp_ties", "Max timestamp when two records share the largest timestamp "
             "(in one batch, then in two batches), and when the first record holds it.",
             topics={"t": Topic(configs=KEPT)}, steps=[
        produce(at(["a", "b", "c"], [9000, 1000, 9000])),
        lookup(-3),
        produce(at(["d"], [9000])),
        lookup(-3),
        lookup(T0 + 9000),
        produce(at(["e"], [9500])),
        lookup(-3),
    ]),
    Scenario("list_offsets/after_delete_records", "After DeleteRecords into the middle of a batch: earliest, "
             "earliest local, max timestamp, and lookups for a deleted record's time and for before everything.",
             topics={"t": Topic(configs=KEPT)}, steps=[
        produce(at(["a", "b", "c"], [5000, 1000, 2000])),
        produce(at(["d"], [3000])),
        delete_records(2),
        *[lookup(ts) for ts in (-2, -4, -3, -1, T0, T0 + 1000, T0 + 2500, T0 + 5000)],
        delete_records(4),
        *[lookup(ts) for ts in (-2, -4, -3, -1, T0)],
    ]),
    Scenario("list_offsets/unknown_topic_and_partition", "ListOffsets for a partition past the topic's, a "
             "negative partition and a topic that does not exist, in one request with a good partition.",
             steps=[
        call(2, 10, {"replica_id": -1, "isolation_level": 0, "topics": [
            {"name": "{t}", "partitions": [{"partition_index": p, "timestamp": -1, "current_leader_epoch": -1}
                                           for p in (0, 3, -1)]},
            {"name": "{nosuch}", "partitions": [{"partition_index": 0, "timestamp": -2, "current_leader_epoch": -1}]},
        ]}),
        call(2, 1, {"replica_id": -1, "topics": [
            {"name": "{nosuch}", "partitions": [{"partition_index": 0, "timestamp": -1}]}]}),
    ]),
    Scenario("list_offsets/duplicate_partitions", "One partition twice in one request (with the same and with "
             "different timestamps), at v10 and v1.", topics={"t": Topic(partitions=2)}, steps=[
        produce(plain(["a"])),
        *[call(2, v, {"replica_id": -1, "isolation_level": 0, "topics": [
            {"name": "{t}", "partitions": [{"partition_index": 0, "timestamp": -1, "current_leader_epoch": -1},
                                           {"partition_index": 1, "timestamp": -1, "current_leader_epoch": -1},
                                           {"partition_index": 0, "timestamp": -2, "current_leader_epoch": -1}]}]})
          for v in (10, 1)],
        call(2, 10, {"replica_id": -1, "isolation_level": 0, "topics": [
            {"name": "{t}", "partitions": [{"partition_index": 0, "timestamp": -1, "current_leader_epoch": -1}]},
            {"name": "{t}", "partitions": [{"partition_index": 0, "timestamp": -1, "current_leader_epoch": -1}]}]},
             label="the topic twice"),
    ]),
    Scenario("list_offsets/unknown_negative_timestamps", "Timestamps below -5 (-6, -7, -1000 and Long.MIN_VALUE) "
             "on a partition with records.", topics={"t": Topic(configs=KEPT)}, steps=[
        produce(at(["a", "b"], [1000, 2000])),
        *[lookup(ts) for ts in (-6, -7, -1000, -(1 << 63))],
        lookup(-6, v=1),
    ]),
    Scenario("list_offsets/debugging_replica_id", "ListOffsets latest with replica_id -2 (a debugging consumer) "
             "while a transaction is open, under both isolation levels, beside a consumer's (-1).",
             steps=[
        produce(plain(["a"])),
        init_pid("a"),
        add_partitions("a"),
        txn_produce("a", ["x"]),
        *[call(2, 10, {"replica_id": r, "isolation_level": iso, "topics": [
            {"name": "{t}", "partitions": [{"partition_index": 0, "timestamp": ts, "current_leader_epoch": -1}]}]})
          for r in (-2, -1) for iso in (RU, RC) for ts in (-1, -3)],
        end_txn("a"),
        await_txn("CompleteCommit"),
    ]),
    Scenario("list_offsets/log_append_time_topic", "On a LogAppendTime topic a lookup and max timestamp use the "
             "broker's append time, not the producer's.",
             topics={"t": Topic(configs={"message.timestamp.type": "LogAppendTime", **KEPT})}, steps=[
        produce(at(["a", "b"], [1000, 2000])),
        lookup(T0 + 1000),
        lookup(-3),
        lookup(T0 + 10 * 365 * 24 * HOUR),
    ]),
    Scenario("list_offsets/compressed_batch_lookup", "Lookups inside one gzip batch whose records' timestamps "
             "are out of order: the first record at or after the target, not the batch's first.",
             topics={"t": Topic(configs=KEPT)}, steps=[
        produce(plain(["a"], timestamps=[500], base_time=T0)),
        produce(plain(["b", "c", "d"], timestamps=[1000, 3000, 2000], base_time=T0, compression=1)),
        *[lookup(T0 + d) for d in (600, 1000, 1500, 2500, 3000, 3001)],
        lookup(-3),
    ]),
    Scenario("list_offsets/lookup_across_segments", "segment.ms of an hour: records stamped hours apart roll "
             "segments; lookups and max timestamp across segments whose timestamps go back in time.",
             topics={"t": Topic(configs={"segment.ms": str(HOUR), **KEPT})}, steps=[
        produce(at(["a"], [0])),
        produce(at(["b"], [2 * HOUR])),
        produce(at(["c"], [HOUR])),
        produce(at(["d"], [5 * HOUR])),
        produce(at(["e"], [3 * HOUR])),
        *[lookup(T0 + d) for d in (0, HOUR, HOUR + 1, 2 * HOUR, 3 * HOUR, 4 * HOUR, 5 * HOUR, 6 * HOUR)],
        lookup(-3),
        delete_records(2),
        lookup(T0 + HOUR),
        lookup(-3),
    ]),
    Scenario("list_offsets/invalid_isolation_level", "ListOffsets with isolation_level 2 and -1; then 2 with a "
             "partition named twice, an unknown partition and an unknown topic.", steps=[
        produce(plain(["a"])),
        *[call(2, 10, {"replica_id": -1, "isolation_level": iso, "topics": [
            {"name": "{t}", "partitions": [{"partition_index": 0, "timestamp": -1, "current_leader_epoch": -1}]}]})
          for iso in (2, -1)],
        call(2, 10, {"replica_id": -1, "isolation_level": 2, "topics": [
            {"name": "{t}", "partitions": [{"partition_index": p, "timestamp": -1, "current_leader_epoch": -1}
                                           for p in (0, 0, 5)]},
            {"name": "{nosuch}", "partitions": [{"partition_index": 0, "timestamp": -1, "current_leader_epoch": -1}]}]}),
        latest(),
    ]),
    Scenario("list_offsets/restart_clean", "After a clean restart (leader epoch 2): latest, earliest, max "
             "timestamp and lookups answer from the recovered indexes; the epoch of each answer.",
             topics={"t": Topic(configs=KEPT)}, steps=[
        produce(at(["a", "b"], [1000, 5000])),
        produce(at(["c"], [3000])),
        delete_records(1),
        restart(),
        *[lookup(ts) for ts in (-1, -2, -3, -4, T0, T0 + 2000, T0 + 4000, T0 + 6000)],
        produce(at(["d"], [4000])),
        *[lookup(ts) for ts in (-1, -3, T0 + 4000)],
    ]),
    Scenario("list_offsets/idempotent_and_control_batches", "Max timestamp and a lookup past every data record "
             "when the newest batch is a COMMIT marker (its timestamp is the marker's write time).",
             topics={"t": Topic(configs=KEPT)}, steps=[
        init_pid("a"),
        add_partitions("a"),
        produce(batch("a", ["x"], 0, transactional=True, timestamps=[1000], base_time=T0), txn="{tx}"),
        end_txn("a"),
        await_txn("CompleteCommit"),
        lookup(-3, isolation=RC),
        lookup(T0 + 2000, isolation=RC),
        lookup(-1, isolation=RC),
        idem_produce(None, ["y"]),
        lookup(-3, isolation=RU),
    ]),
]
