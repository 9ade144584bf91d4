"""Client-side code: the operator subcommands that talk to a running broker over Kafka's
protocol (Kafka's kafka-acls.sh, kafka-configs.sh, kafka-features.sh, kafka-transactions.sh,
a healthcheck) and the small blocking wire client they, the pytest plugin and the tests use.
The broker never imports this package; it may use the broker's pure definitions (config
parsing, SCRAM, ACL names) so that both sides read a setting or a name the same way."""
