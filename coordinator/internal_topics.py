"""The internal topics the coordinators keep their state in, by Kafka's names
(Topic.GROUP_METADATA_TOPIC_NAME, Topic.TRANSACTION_STATE_TOPIC_NAME)."""

OFFSETS_TOPIC = "__consumer_offsets"
TRANSACTION_TOPIC = "__transaction_state"
INTERNAL_TOPICS = (OFFSETS_TOPIC, TRANSACTION_TOPIC)


def assignable_topics(logs) -> dict:
    """{name: (topic id, partitions)} of the topics a consumer group may be assigned (KIP-848):
    every topic of ``logs`` (the LogManager) but the internal ones."""
    return {name: (info.topic_id, info.num_partitions) for name, info in logs.topics().items()
            if name not in INTERNAL_TOPICS}
