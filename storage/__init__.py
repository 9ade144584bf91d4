"""Partition logs on disk, in Apache Kafka's layout and file formats.

Public entry points: :class:`storage.log_manager.LogManager`,
:class:`storage.log.UnifiedLog`, :class:`storage.config.LogConfig`.
storage/ may import protocol/ but never broker/ or coordinator/.
"""
from storage.config import LogConfig, describe_configs
from storage.log import AppendResult, ReadResult, UnifiedLog
from storage.log_manager import LogManager, TopicInfo

__all__ = ["LogConfig", "describe_configs", "AppendResult", "ReadResult", "UnifiedLog", "LogManager", "TopicInfo"]
