"""`minikafka dump-log --offsets-decoder` against Kafka 4.1's own output: a __consumer_offsets
segment written by the reference Kafka 4.1 (a classic consumer group: group metadata with its
members' subscriptions and assignments, offset commits) and what its kafka-dump-log.sh
--offsets-decoder --print-data-log printed for it (recorded, without the "Dumping <path>" line)."""
from __future__ import annotations

import io
import pathlib

from minikafka.broker.tools import dump_log

DATA = pathlib.Path(__file__).parent / "data" / "consumer_offsets_classic_group"


def test_offsets_decoder_prints_what_kafka_4_1_prints():
    out = io.StringIO()
    assert dump_log.main(["--files", str(DATA / "00000000000000000000.log"), "--offsets-decoder",
                          "--print-data-log"], out=out) == 0
    ours = out.getvalue().splitlines()[1:]  # after "Dumping <path>"
    assert ours == (DATA / "kafka-dump-log-4.1.txt").read_text().splitlines()
