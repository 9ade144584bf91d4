"""Feature versions (KIP-584): what this broker supports, the finalized levels, how they
change (UpdateFeatures, `minikafka features`) and where they are kept.

Kafka finalizes feature levels when the storage is formatted (`kafka-storage.sh format
--feature transaction.version=1`; unnamed features get the release's defaults) and
changes them with UpdateFeatures; they live in the cluster metadata log, so they outlive
restarts, and ApiVersions (v3+) reports them to clients. minikafka does the same:
`minikafka format --feature ...` finalizes them (a data dir first seen by a starting
broker is formatted with the defaults), they are kept in `<log.dir>/minikafka-features.json`
(written atomically before an UpdateFeatures is answered), and ApiVersions reports them.

Two features change what clients get: `transaction.version` at 2 (Kafka 4.x's default)
makes Java clients 4.x use KIP-890's transactions V2 (no AddPartitionsToTxn, EndTxn v5 with
an epoch bump per transaction), at 1 the classic protocol; `group.version` at 1 (the default)
serves KIP-848's consumer groups (with `consumer` in group.coordinator.rebalance.protocols),
at 0 ConsumerGroupHeartbeat and ConsumerGroupDescribe answer UNSUPPORTED_VERSION, as Kafka's.
The other features Kafka 4.1 reports are reported with the levels minikafka can honestly
run: share, KRaft and ELR features at 0 (share groups, a KRaft quorum and ELR are not
served), metadata.version at Kafka 4.1's (4.1-IV1), the protocol level whose APIs minikafka
speaks.
"""
from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass

from minikafka.protocol.errors import ErrorCode
from minikafka.storage.checkpoint import atomic_write

log = logging.getLogger("minikafka.features")

FEATURES_FILE = "minikafka-features.json"
FILE_VERSION = 2  # 2: group.version is kept (a version 1 file's data dir had KIP-848 groups on)
TRANSACTION_VERSION = "transaction.version"
GROUP_VERSION = "group.version"
METADATA_VERSION = "metadata.version"

# name -> (min, max) this broker can run; Kafka 4.1's names, in Kafka's ApiVersions order
SUPPORTED: dict[str, tuple[int, int]] = {
    GROUP_VERSION: (0, 1),
    "kraft.version": (0, 0),
    METADATA_VERSION: (27, 27),
    "share.version": (0, 0),
    TRANSACTION_VERSION: (0, 2),
    "eligible.leader.replicas.version": (0, 0),
}
# what an unformatted data dir gets: Kafka 4.1's defaults where minikafka supports them
DEFAULTS = {METADATA_VERSION: 27, GROUP_VERSION: 1, TRANSACTION_VERSION: 2}
# metadata.version levels by name, as kafka-features.sh prints and takes them
METADATA_VERSION_NAMES = {27: "4.1-IV1"}
# features whose level can never go down (Kafka: "Can't downgrade the version of this feature.")
NOT_DOWNGRADABLE = {"kraft.version"}

UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE = 1, 2, 3


class FeatureError(ValueError):
    """A refused feature level (format, UpdateFeatures): Kafka's wording."""


def parse_feature_arg(text: str) -> tuple[str, int]:
    """`name=level` as kafka-storage.sh / kafka-features.sh take it."""
    name, eq, level = text.partition("=")
    if not eq:
        raise FeatureError(f"Can't parse feature=level string {text}: equals sign not found.")
    name = name.strip()
    if name == METADATA_VERSION:
        for number, release in METADATA_VERSION_NAMES.items():
            if level.strip() == release:
                return name, number
    try:
        value = int(level.strip())
    except ValueError:
        raise FeatureError(f"Can't parse feature=level string {text}: unable to parse {level.strip()} as a short.") from None
    if not -32768 <= value <= 32767:
        raise FeatureError(f"Can't parse feature=level string {text}: unable to parse {level.strip()} as a short.")
    return name, value


def initial_levels(requested: dict[str, int]) -> dict[str, int]:
    """The levels a format finalizes: the defaults, overridden by `--feature` values
    (kafka-storage.sh's checks and words)."""
    levels = dict(DEFAULTS)
    for name, level in requested.items():
        if name not in SUPPORTED or name == METADATA_VERSION:  # Kafka sets it with --release-version
            raise FeatureError(f"Unsupported feature: {name}. Supported features are: "
                               f"{', '.join(sorted(n for n in SUPPORTED if n != METADATA_VERSION))}")
        lo, hi = SUPPORTED[name]
        if not lo <= level <= hi:
            raise FeatureError(f"No feature:{name} with feature level {level}")
        levels[name] = level
    return levels


@dataclass
class FeatureUpdate:
    feature: str
    max_version_level: int
    upgrade_type: int = UPGRADE


class FinalizedFeatures:
    """The finalized levels and their epoch (bumped by every change, as Kafka's metadata
    offset grows; clients take the levels of the highest epoch they have seen)."""

    def __init__(self, path: str, levels: dict[str, int], epoch: int):
        self.path = path
        self.levels = dict(levels)
        self.epoch = epoch

    # -------------------------------------------------------------- storage
    @classmethod
    def path_in(cls, log_dir: str) -> str:
        return os.path.join(log_dir, FEATURES_FILE)

    @classmethod
    def load(cls, log_dir: str) -> "FinalizedFeatures | None":
        path = cls.path_in(log_dir)
        try:
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
            levels = {str(k): int(v) for k, v in doc["features"].items()}
            if int(doc.get("version", 1)) < FILE_VERSION:
                # written before group.version was kept: that minikafka served KIP-848's groups
                # whatever the level, so the data dir keeps them (group.version=1)
                levels.setdefault(GROUP_VERSION, 1)
            return cls(path, levels, int(doc["epoch"]))
        except FileNotFoundError:
            return None
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            raise FeatureError(f"cannot read the finalized features in {path}: {e}") from None

    @classmethod
    def format(cls, log_dir: str, requested: dict[str, int] | None = None) -> "FinalizedFeatures":
        """Finalize the levels of a new data dir (the defaults plus `requested`) and write them."""
        ff = cls(cls.path_in(log_dir), initial_levels(requested or {}), 1)
        ff.save()
        return ff

    def save(self) -> None:
        doc = {"version": FILE_VERSION, "epoch": self.epoch, "features": dict(sorted(self.levels.items()))}
        atomic_write(self.path, json.dumps(doc, indent=1) + "\n")

    # -------------------------------------------------------------- views
    def level(self, name: str) -> int:
        return self.levels.get(name, 0)

    @property
    def transaction_version(self) -> int:
        return self.level(TRANSACTION_VERSION)

    @property
    def group_version(self) -> int:
        return self.level(GROUP_VERSION)

    def describe_levels(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in sorted(self.levels.items()))

    def api_versions_fields(self, api_version: int) -> dict:
        """ApiVersions v3+'s supported and finalized features. Kafka leaves out features at
        level 0 from the finalized list, and before v4 (KAFKA-17011) every supported
        feature whose minimum is 0."""
        supported = [{"name": n, "min_version": lo, "max_version": hi} for n, (lo, hi) in SUPPORTED.items()
                     if api_version >= 4 or lo > 0]
        finalized = [{"name": n, "min_version_level": lvl, "max_version_level": lvl}
                     for n, lvl in self.levels.items() if lvl > 0]
        return {"supported_features": supported, "finalized_features_epoch": self.epoch,
                "finalized_features": finalized, "zk_migration_ready": False}

    # -------------------------------------------------------------- changes
    def check(self, update: FeatureUpdate, node_id: int) -> str | None:
        """Why Kafka's controller refuses this update (its words), or None."""
        name, level, kind = update.feature, update.max_version_level, update.upgrade_type
        prefix = f"Invalid update version {level} for feature {name}."
        if kind not in (UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE):
            return f"{prefix} The controller does not support the given upgrade type."
        if level < 0:
            return f"{prefix} A feature version cannot be less than 0."
        if name not in SUPPORTED:
            return f"{prefix} Local controller {node_id} does not support this feature."
        lo, hi = SUPPORTED[name]
        if not (lo <= level <= hi or level == 0 and lo == 0):
            return f"{prefix} Local controller {node_id} only supports versions {lo}-{hi}"
        current = self.level(name)
        if level > current and kind != UPGRADE:
            return f"{prefix} Can't downgrade to a newer version."
        if level < current:
            if name in NOT_DOWNGRADABLE:
                return f"{prefix} Can't downgrade the version of this feature."
            if kind == UPGRADE:
                return (f"{prefix} Can't downgrade the version of this feature without setting the upgrade type "
                        f"to either safe or unsafe downgrade.")
        return None

    def update(self, updates: list[FeatureUpdate], node_id: int, validate_only: bool) -> tuple[ErrorCode, str | None]:
        """All or nothing, as Kafka: the first refused update fails the request
        (INVALID_UPDATE_VERSION); otherwise the new levels are written, then applied."""
        for u in updates:
            reason = self.check(u, node_id)
            if reason is not None:
                return (ErrorCode.INVALID_UPDATE_VERSION,
                        f"The update failed for all features since the following feature had an error: {reason}")
        if validate_only or not updates:
            return ErrorCode.NONE, None
        new = dict(self.levels)
        for u in updates:
            if u.max_version_level == 0:
                new.pop(u.feature, None)
            else:
                new[u.feature] = u.max_version_level
        if new == self.levels:
            return ErrorCode.NONE, None
        old = self.levels
        self.levels, self.epoch = new, self.epoch + 1
        try:
            self.save()
        except OSError:
            self.levels, self.epoch = old, self.epoch - 1
            raise
        log.info("Finalized features changed (epoch %d): %s", self.epoch, self.describe_levels())
        return ErrorCode.NONE, None
