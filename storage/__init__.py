"""Partition logs on disk, in Apache Kafka's layout and file formats.

Public entry points: :class:`minikafka.storage.log_manager.LogManager`,
:class:`minikafka.storage.log.UnifiedLog`, :class:`minikafka.storage.config.LogConfig`.
storage/ may import protocol/ but never broker/ or coordinator/.
"""
from minikafka.storage.config import LogConfig, describe_configs
from minikafka.storage.log_manager import LogManager, TopicInfo

__all__ = ["LogConfig", "describe_configs", "AppendResult", "ReadResult", "UnifiedLog", "LogManager", "TopicInfo"]


def __getattr__(name: str):
    # storage.log (with its segments, indexes and producer state) is imported when a partition log
    # is first opened, not by every start: an empty data dir needs none of it (~2 ms of a start)
    if name in ("AppendResult", "ReadResult", "UnifiedLog"):
        from minikafka.storage import log
        return getattr(log, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
