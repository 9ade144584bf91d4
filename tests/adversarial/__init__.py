"""The adversarial suite: hostile clients (raw frames, misused SASL and TLS, poison batches,
decompression bombs, many connections, slowloris) against a real broker, each while a
well-behaved producer and read_committed consumer (``bystander.Bystander``) keep working."""
