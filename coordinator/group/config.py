"""The group coordinator's settings, from Kafka's broker properties (group.*, offsets.*)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class GroupConfig:
    initial_rebalance_delay_ms: int = 3000
    min_session_timeout_ms: int = 6000
    max_session_timeout_ms: int = 1800000
    offsets_retention_ms: int = 7 * 24 * 3600 * 1000
    offsets_retention_check_interval_ms: int = 600000
    offset_metadata_max_bytes: int = 4096
    # KIP-848 (group.consumer.*)
    consumer_heartbeat_interval_ms: int = 5000
    consumer_session_timeout_ms: int = 45000
    consumer_assignors: tuple = ("uniform", "range")
    consumer_max_size: int = 2147483647
    migration_policy: str = "bidirectional"  # group.consumer.migration.policy

    @classmethod
    def from_broker_config(cls, config) -> "GroupConfig":
        return cls(
            initial_rebalance_delay_ms=config["group.initial.rebalance.delay.ms"],
            min_session_timeout_ms=config["group.min.session.timeout.ms"],
            max_session_timeout_ms=config["group.max.session.timeout.ms"],
            offsets_retention_ms=config["offsets.retention.minutes"] * 60_000,
            offsets_retention_check_interval_ms=config["offsets.retention.check.interval.ms"],
            consumer_heartbeat_interval_ms=config["group.consumer.heartbeat.interval.ms"],
            consumer_session_timeout_ms=config["group.consumer.session.timeout.ms"],
            consumer_assignors=tuple(config["group.consumer.assignors"]),
            consumer_max_size=config["group.consumer.max.size"],
            migration_policy=config["group.consumer.migration.policy"].lower(),
        )

    def allows_upgrade(self) -> bool:
        """group.consumer.migration.policy: may a classic group become a consumer group online?"""
        return self.migration_policy in ("upgrade", "bidirectional")

    def allows_downgrade(self) -> bool:
        return self.migration_policy in ("downgrade", "bidirectional")
