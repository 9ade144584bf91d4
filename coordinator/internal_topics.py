"""The internal topics the coordinators keep their state in, by Kafka's names
(Topic.GROUP_METADATA_TOPIC_NAME, Topic.TRANSACTION_STATE_TOPIC_NAME)."""

OFFSETS_TOPIC = "__consumer_offsets"
TRANSACTION_TOPIC = "__transaction_state"
INTERNAL_TOPICS = (OFFSETS_TOPIC, TRANSACTION_TOPIC)
