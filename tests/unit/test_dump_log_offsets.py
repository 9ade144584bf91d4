"""`minikafka dump-log --offsets-decoder` against Kafka 4.1's own output on the same
__consumer_offsets segments, recorded with kafka-dump-log.sh --offsets-decoder --print-data-log
(without its "Dumping <path>" line): one written by the reference Kafka 4.1 (a classic consumer
group: group metadata with its members' subscriptions and assignments, offset commits), one
written by minikafka (a KIP-848 consumer group's records: group epoch, member, target
assignment, current assignment)."""
from __future__ import annotations

import io
import pathlib

import pytest

from minikafka.broker.tools import dump_log

DATA = pathlib.Path(__file__).parent / "data"


@pytest.mark.parametrize("segment", ["consumer_offsets_classic_group", "consumer_offsets_consumer_group"])
def test_offsets_decoder_prints_what_kafka_4_1_prints(segment):
    out = io.StringIO()
    assert dump_log.main(["--files", str(DATA / segment / "00000000000000000000.log"), "--offsets-decoder",
                          "--print-data-log"], out=out) == 0
    ours = out.getvalue().splitlines()[1:]  # after "Dumping <path>"
    assert ours == (DATA / segment / "kafka-dump-log-4.1.txt").read_text().splitlines()
