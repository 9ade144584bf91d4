"""Partition logs on disk, in Apache Kafka's layout and file formats.

Public entry points: :class:`minikafka.storage.log_manager.LogManager`,
:class:`minikafka.storage.log.UnifiedLog`, :class:`minikafka.storage.config.LogConfig`.
storage/ may import protocol/ but never broker/ or coordinator/.
"""
from minikafka.storage.config import LogConfig, describe_configs
from minikafka.storage.log import AppendResult, ReadResult, UnifiedLog
from minikafka.storage.log_manager import LogManager, TopicInfo

__all__ = ["LogConfig", "describe_configs", "AppendResult", "ReadResult", "UnifiedLog", "LogManager", "TopicInfo"]
