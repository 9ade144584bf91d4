"""Finalized features (KIP-584, issue 14): `minikafka format --feature` (kafka-storage.sh
format) and `minikafka features` (kafka-features.sh) against a real broker; the level is
durable across kill -9. What UpdateFeatures answers is compared with Kafka 4.1's in
tests/conformance/scenarios/features.py; here the tools' lines, exit codes and the file."""
from __future__ import annotations

import re
import subprocess
import sys


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "minikafka", *args], capture_output=True, text=True, timeout=60)


def finalized(bootstrap: str) -> tuple[int, int]:
    """(transaction.version level, epoch) from `features describe`."""
    r = cli("features", "--bootstrap-server", bootstrap, "describe")
    assert r.returncode == 0, r.stderr
    m = re.search(r"^Feature: transaction\.version\tSupportedMinVersion: 0\tSupportedMaxVersion: 2\t"
                  r"FinalizedVersionLevel: (\d+)\tEpoch: (\d+)$", r.stdout, re.M)
    assert m, r.stdout
    return int(m.group(1)), int(m.group(2))


def test_format_then_upgrade_downgrade_disable_durably(broker_factory):
    b = broker_factory(features={"transaction.version": 1})   # minikafka format --feature transaction.version=1
    level, epoch = finalized(b.bootstrap)
    assert level == 1
    tool = ("features", "--bootstrap-server", b.bootstrap)

    r = cli(*tool, "upgrade", "--feature", "transaction.version=2", "--dry-run")
    assert (r.returncode, r.stdout) == (0, "transaction.version can be upgraded to 2.\n")
    assert finalized(b.bootstrap) == (1, epoch)
    r = cli(*tool, "upgrade", "--feature", "transaction.version=2")
    assert (r.returncode, r.stdout) == (0, "transaction.version was upgraded to 2.\n")
    assert finalized(b.bootstrap) == (2, epoch + 1)

    # refused: every feature of the request reported with the broker's words, exit 1
    for args, why in ((("downgrade", "--feature", "transaction.version=3"), "only supports versions 0-2"),
                      (("upgrade", "--feature", "transaction.version=1"), "without setting the upgrade type"),
                      (("downgrade", "--feature", "transaction.version=2"), "already")):
        r = cli(*tool, *args)
        if why == "already":   # a downgrade to the current level changes nothing, as in Kafka
            assert r.returncode == 0, r.stdout + r.stderr
            continue
        assert r.returncode == 1 and r.stderr == "1 out of 1 operation(s) failed.\n", r
        assert r.stdout.startswith(f"Could not {args[0]} transaction.version to ") and why in r.stdout, r.stdout
    assert finalized(b.bootstrap) == (2, epoch + 1)

    b.restart(kill=True)
    assert finalized(b.bootstrap) == (2, epoch + 1)   # written before UpdateFeatures answered
    r = cli(*tool, "disable", "--feature", "transaction.version")
    assert (r.returncode, r.stdout) == (0, "transaction.version was disabled.\n")
    b.restart()
    assert finalized(b.bootstrap)[0] == 0

    # a formatted data dir is not formatted again
    b.stop()
    r = cli("format", "--override", f"log.dirs={b.data_dir}", "--feature", "transaction.version=2")
    assert r.returncode == 1 and "is already formatted" in r.stderr, r
    r = cli("format", "--override", f"log.dirs={b.data_dir}", "--ignore-formatted")
    assert r.returncode == 0, r
    b.start()
    assert finalized(b.bootstrap)[0] == 0


def test_bad_feature_arguments_are_one_line(tmp_path):
    r = cli("format", "--override", f"log.dirs={tmp_path / 'd'}", "--feature", "transaction.version")
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and "equals sign not found" in r.stderr, r
    r = cli("features", "--bootstrap-server", "127.0.0.1:1", "describe")
    assert r.returncode == 1 and r.stderr.startswith("Failed to talk to 127.0.0.1:1"), r
