"""Classic consumer groups and committed offsets (`__consumer_offsets`)."""
from .coordinator import GroupConfig, GroupCoordinator
from .group import Group, GroupState, Member, Waiter
from .records import OffsetValue, partition_for
from .store import LogOffsetsStore, MemoryOffsetsStore, OffsetsStore

__all__ = ["GroupConfig", "GroupCoordinator", "Group", "GroupState", "Member", "Waiter", "OffsetValue",
           "partition_for", "LogOffsetsStore", "MemoryOffsetsStore", "OffsetsStore"]
