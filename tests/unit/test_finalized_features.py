"""Finalized feature levels as kept in the data dir (broker/features.py)."""
from __future__ import annotations

import json

from minikafka.broker.features import FEATURES_FILE, FinalizedFeatures


def test_new_data_dir_gets_kafka_41_defaults(tmp_path):
    ff = FinalizedFeatures.format(str(tmp_path))
    assert (ff.group_version, ff.transaction_version) == (1, 2)
    assert FinalizedFeatures.load(str(tmp_path)).levels == ff.levels


def test_file_from_before_group_version_keeps_consumer_groups_on(tmp_path):
    """A file written before group.version was kept (version 1) is read with group.version=1: that
    minikafka served KIP-848's groups, an upgrade must not turn them off."""
    (tmp_path / FEATURES_FILE).write_text(json.dumps(
        {"version": 1, "epoch": 3, "features": {"metadata.version": 27, "transaction.version": 1}}))
    ff = FinalizedFeatures.load(str(tmp_path))
    assert (ff.group_version, ff.transaction_version, ff.epoch) == (1, 1, 3)


def test_group_version_0_survives_a_reload(tmp_path):
    ff = FinalizedFeatures.format(str(tmp_path), {"group.version": 0})
    assert ff.group_version == 0
    assert FinalizedFeatures.load(str(tmp_path)).group_version == 0
