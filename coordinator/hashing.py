"""Internal-topic partitioning shared with Kafka's tools: abs(String.hashCode(key)) % n."""


def java_string_hash(s: str) -> int:
    """Java's String.hashCode over UTF-16 code units, as a signed 32-bit int."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def partition_for(key: str, num_partitions: int) -> int:
    h = java_string_hash(key)
    # Kafka's Utils.abs: Integer.MIN_VALUE maps to 0
    return (0 if h == -(1 << 31) else abs(h)) % num_partitions
