"""Partition logs on disk, in Apache Kafka's layout and file formats.

Public entry points: :class:`minikafka.storage.log_manager.LogManager`,
:class:`minikafka.storage.log.UnifiedLog`, :class:`minikafka.storage.config.LogConfig`.
storage/ may import protocol/ but never broker/ or coordinator/. (storage.log, with its
segments, indexes and producer state, is imported when a partition log is first opened, not
by every start: an empty data dir needs none of it.)
"""
