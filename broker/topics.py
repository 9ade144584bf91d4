"""Topics as requests see them (what Kafka's MetadataCache and its controller's topic changes
are for one node): which topics exist, by name and id, their partitions and leader epochs,
and the changes an admin makes (create, delete, add partitions, alter configs). The logs
behind them are the LogManager's (storage/log_manager.py); appends are the ReplicaManager's.
"""
from __future__ import annotations

from minikafka.coordinator.internal_topics import INTERNAL_TOPICS, OFFSETS_TOPIC, TRANSACTION_TOPIC, assignable_topics
from minikafka.storage.log_manager import LogManager

GROUP_KEY, TRANSACTION_KEY = 0, 1  # FindCoordinator's key types


class TopicManager:
    def __init__(self, logs: LogManager, config):
        self._logs = logs
        self.config = config  # the broker's (replaced when dynamic configs change)

    # ------------------------------------------------------------- reads
    def topics(self) -> dict:
        """{name: TopicInfo}."""
        return self._logs.topics()

    def get(self, name: str):
        """The topic's TopicInfo, or None."""
        return self._logs.topics().get(name)

    def by_id(self, topic_id):
        for info in self._logs.topics().values():
            if info.topic_id == topic_id:
                return info
        return None

    def assignable(self) -> dict:
        """{name: (topic id, partitions)} of the topics a consumer group may be assigned (KIP-848)."""
        return assignable_topics(self._logs)

    @staticmethod
    def is_internal(name: str) -> bool:
        return name in INTERNAL_TOPICS

    def leader_epoch(self, topic: str, partition: int) -> int:
        return self._logs.leader_epoch(topic, partition)

    def topic_config(self, name: str):
        return self._logs.topic_config(name)

    @property
    def cluster_id(self) -> str:
        return self._logs.cluster_id

    @property
    def default_log_config(self):
        """The topic configs a topic without overrides has (the broker's log.* settings)."""
        return self._logs.default_config

    def quorum(self) -> tuple[int, object, int]:
        """(offset, directory id, epoch) of the metadata log this node stands in for (DescribeQuorum)."""
        return self._logs.metadata_offset, self._logs.metadata_directory_id, self._logs.quorum_epoch

    # ------------------------------------------------------------- changes
    def create(self, name: str, num_partitions: int | None = None, configs: dict | None = None,
               validate_only: bool = False):
        return self._logs.create_topic(name, num_partitions or self.config["num.partitions"], configs or {},
                                       validate_only=validate_only)

    def internal_topic(self, name: str) -> tuple[int, dict[str, str]]:
        """(partitions, topic configs) an internal topic is created with: compacted, with its
        offsets.topic.* or transaction.state.log.* settings, as Kafka creates it."""
        offsets = name == OFFSETS_TOPIC
        n = self.config["offsets.topic.num.partitions" if offsets else "transaction.state.log.num.partitions"]
        seg = self.config["offsets.topic.segment.bytes" if offsets else "transaction.state.log.segment.bytes"]
        return n, {"cleanup.policy": "compact", "segment.bytes": str(seg)}

    def ensure_internal(self, name: str):
        """The internal topic, created on first use."""
        info = self._logs.topics().get(name)
        if info is not None:
            return info
        return self.create(name, *self.internal_topic(name))

    def ensure_coordinator_topic(self, key_type: int) -> None:
        self.ensure_internal(OFFSETS_TOPIC if key_type == GROUP_KEY else TRANSACTION_TOPIC)

    def delete(self, name: str) -> None:
        self._logs.delete_topic(name)

    def add_partitions(self, name: str, count: int) -> None:
        self._logs.add_partitions(name, count)

    def alter_configs(self, name: str, overrides: dict, validate_only: bool = False) -> None:
        self._logs.alter_topic_configs(name, overrides, validate_only=validate_only)

    def reconfigure(self, config, default_log_config) -> None:
        """Dynamic broker configs changed: the broker's settings and the topics' defaults."""
        self.config = config
        self._logs.set_default_config(default_log_config)
