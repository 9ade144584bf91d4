"""Producer id allocation: monotonic, never reused, also across crashes.

Ids are handed out from blocks. Before the first id of a block is used, the end
of the block is written durably (temp file, fsync, rename, fsync dir), so after
a crash allocation resumes at the next block: some ids may be skipped, none is
handed out twice. Kafka's controller does the same with ProducerIdsRecord.
"""
from __future__ import annotations

import os

BLOCK_SIZE = 1000
FILE_NAME = "producer-id-block"


class ProducerIdManager:
    def __init__(self, log_dir: str, block_size: int = BLOCK_SIZE):
        self.path = os.path.join(log_dir, FILE_NAME)
        self.block_size = block_size
        self._next = 0
        self._block_end = 0  # exclusive; ids below it are reserved on disk
        try:
            with open(self.path) as f:
                for line in f:
                    k, _, v = line.partition("=")
                    if k.strip() == "next.block.start":
                        self._next = self._block_end = int(v)
        except FileNotFoundError:
            pass

    def next_id(self) -> int:
        if self._next >= self._block_end:
            self._reserve(self._next + self.block_size)
        pid = self._next
        self._next += 1
        return pid

    def _reserve(self, end: int) -> None:
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            f.write(f"version=0\nnext.block.start={end}\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
        dfd = os.open(os.path.dirname(self.path) or ".", os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
        self._block_end = end
