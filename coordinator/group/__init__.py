"""The group coordinator: classic groups, KIP-848 consumer groups and committed offsets
(`__consumer_offsets`), held by a GroupCoordinatorShard."""
from .config import GroupConfig
from .group import ClassicGroup, ClassicMember, GroupState, Waiter
from .records import OffsetValue, partition_for
from .shard import GroupCoordinatorShard
from .store import LogOffsetsStore, MemoryOffsetsStore, OffsetsStore

__all__ = ["GroupConfig", "GroupCoordinatorShard", "ClassicGroup", "ClassicMember", "GroupState", "Waiter",
           "OffsetValue", "partition_for", "LogOffsetsStore", "MemoryOffsetsStore", "OffsetsStore"]
