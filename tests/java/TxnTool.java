// Transactions with the Java client (kafka-clients), driven by the Python tests.
//
//   java -cp <classes>:<jars> TxnTool produce --bootstrap H:P --transactional-id T --topics a,b,c
//        --partitions 4 --txns 200 --per-txn 50 --abort-every 3 --tag java
//   java ... TxnTool zombie --bootstrap H:P --transactional-id T --topic t
//   java ... TxnTool consume --bootstrap H:P --topics a,b --partitions 4 --isolation read_committed
//        --expected N [--timeout-ms 30000]
//   java ... TxnTool follow --bootstrap H:P --topics a --group G --expected N [--timeout-ms 120000]
//        (one long-lived group member: prints records as they arrive, commits after each poll;
//        the test restarts the broker under it)
//   java ... TxnTool eos-member --bootstrap H:P --topics in --group G --out OUT --transactional-id T
//        [--group-protocol consumer|classic] [--duration-ms 60000]
//        (consume-transform-produce: one transaction per poll with the outputs "out:<value>" and the
//        consumer's offsets; prints {"type":"committed","count":N} after each; ends on SIGTERM or
//        after duration-ms)
//   group-consume and follow take --group-protocol consumer|classic too (default classic)
//
// Output: one JSON object per line; the last line is {"type":"summary",...}.
// Record i of transaction t goes to topic (i % topics), partition (i / topics) % partitions,
// with value "<tag>:<t>:<i>"; transaction t aborts when (t % abort-every) == abort-every - 1.

import java.time.Duration;
import java.util.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.*;

public class TxnTool {
    static Map<String, String> opts(String[] argv) {
        Map<String, String> m = new HashMap<>();
        for (int i = 1; i + 1 < argv.length; i += 2) m.put(argv[i].replaceFirst("^--", ""), argv[i + 1]);
        return m;
    }

    static Properties producerProps(Map<String, String> a) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, a.get("bootstrap"));
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, a.get("transactional-id"));
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.LINGER_MS_CONFIG, "2");
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "30000");
        return p;
    }

    static String js(String s) {
        return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }

    static int produce(Map<String, String> a) throws Exception {
        String[] topics = a.get("topics").split(",");
        int parts = Integer.parseInt(a.getOrDefault("partitions", "1"));
        int txns = Integer.parseInt(a.get("txns"));
        int per = Integer.parseInt(a.get("per-txn"));
        int abortEvery = Integer.parseInt(a.getOrDefault("abort-every", "0"));
        String tag = a.getOrDefault("tag", "java");
        int committed = 0, aborted = 0;
        try (KafkaProducer<String, String> p = new KafkaProducer<>(producerProps(a))) {
            p.initTransactions();
            for (int t = 0; t < txns; t++) {
                p.beginTransaction();
                for (int i = 0; i < per; i++) {
                    String topic = topics[i % topics.length];
                    int part = (i / topics.length) % parts;
                    p.send(new ProducerRecord<>(topic, part, t + "-" + i, tag + ":" + t + ":" + i));
                }
                p.flush();
                if (abortEvery > 0 && t % abortEvery == abortEvery - 1) { p.abortTransaction(); aborted++; }
                else { p.commitTransaction(); committed++; }
            }
        }
        System.out.println("{\"type\":\"summary\",\"mode\":\"produce\",\"committed\":" + committed + ",\"aborted\":" + aborted + "}");
        return 0;
    }

    static int zombie(Map<String, String> a) throws Exception {
        String topic = a.get("topic");
        String sendError = "none", commitError = "none";
        KafkaProducer<String, String> zombie = new KafkaProducer<>(producerProps(a));
        zombie.initTransactions();
        zombie.beginTransaction();
        zombie.send(new ProducerRecord<>(topic, 0, "z", "zombie:0")).get();
        try (KafkaProducer<String, String> fresh = new KafkaProducer<>(producerProps(a))) {
            fresh.initTransactions();  // bumps the epoch: the first producer is now a zombie
            try {
                zombie.send(new ProducerRecord<>(topic, 0, "z", "zombie:1")).get();
            } catch (Exception e) {
                sendError = (e.getCause() != null ? e.getCause() : e).getClass().getSimpleName();
            }
            try {
                zombie.commitTransaction();
            } catch (Exception e) {
                commitError = e.getClass().getSimpleName();
            }
            fresh.beginTransaction();
            fresh.send(new ProducerRecord<>(topic, 0, "f", "fresh:0")).get();
            fresh.commitTransaction();
        }
        try { zombie.close(Duration.ofSeconds(5)); } catch (Exception ignored) { }
        System.out.println("{\"type\":\"summary\",\"mode\":\"zombie\",\"send_error\":" + js(sendError)
                + ",\"commit_error\":" + js(commitError) + "}");
        return 0;
    }

    static int consume(Map<String, String> a) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, a.get("bootstrap"));
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, a.getOrDefault("isolation", "read_committed"));
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        if (a.containsKey("max-partition-fetch-bytes"))
            p.put(ConsumerConfig.MAX_PARTITION_FETCH_BYTES_CONFIG, a.get("max-partition-fetch-bytes"));
        if (a.containsKey("fetch-max-bytes")) p.put(ConsumerConfig.FETCH_MAX_BYTES_CONFIG, a.get("fetch-max-bytes"));
        int expected = Integer.parseInt(a.get("expected"));
        long deadline = System.currentTimeMillis() + Long.parseLong(a.getOrDefault("timeout-ms", "30000"));
        int parts = Integer.parseInt(a.getOrDefault("partitions", "1"));
        List<TopicPartition> tps = new ArrayList<>();
        for (String t : a.get("topics").split(",")) for (int i = 0; i < parts; i++) tps.add(new TopicPartition(t, i));
        int n = 0;
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(p)) {
            c.assign(tps);
            c.seekToBeginning(tps);
            while (n < expected && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                    System.out.println("{\"type\":\"record\",\"topic\":" + js(r.topic()) + ",\"partition\":" + r.partition()
                            + ",\"offset\":" + r.offset() + ",\"value\":" + js(r.value()) + "}");
                    n++;
                }
            }
            // a little more polling proves nothing beyond `expected` arrives
            long extra = System.currentTimeMillis() + Long.parseLong(a.getOrDefault("linger-ms", "500"));
            while (System.currentTimeMillis() < extra) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(100))) {
                    System.out.println("{\"type\":\"record\",\"topic\":" + js(r.topic()) + ",\"partition\":" + r.partition()
                            + ",\"offset\":" + r.offset() + ",\"value\":" + js(r.value()) + "}");
                    n++;
                }
            }
        }
        System.out.println("{\"type\":\"summary\",\"mode\":\"consume\",\"count\":" + n + "}");
        return 0;
    }

    // Subscribe with a group, read `expected` records, commitSync, print what was read.
    static int groupConsume(Map<String, String> a) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, a.get("bootstrap"));
        p.put(ConsumerConfig.GROUP_ID_CONFIG, a.get("group"));
        p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, a.getOrDefault("group-protocol", "classic"));
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, a.getOrDefault("isolation", "read_committed"));
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        int expected = Integer.parseInt(a.get("expected"));
        long deadline = System.currentTimeMillis() + Long.parseLong(a.getOrDefault("timeout-ms", "30000"));
        int n = 0;
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(p)) {
            c.subscribe(Arrays.asList(a.get("topics").split(",")));
            while (n < expected && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                    System.out.println("{\"type\":\"record\",\"topic\":" + js(r.topic()) + ",\"partition\":" + r.partition()
                            + ",\"offset\":" + r.offset() + ",\"value\":" + js(r.value()) + "}");
                    n++;
                }
            }
            c.commitSync();
            System.out.println("{\"type\":\"summary\",\"mode\":\"group-consume\",\"count\":" + n
                    + ",\"assignment\":" + c.assignment().size() + "}");
        }
        return 0;
    }

    // A group member that lives across broker restarts: each record is printed (with the leader
    // epoch of its batch) and flushed as it arrives, offsets are committed after every poll.
    static int follow(Map<String, String> a) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, a.get("bootstrap"));
        p.put(ConsumerConfig.GROUP_ID_CONFIG, a.get("group"));
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, a.getOrDefault("isolation", "read_committed"));
        p.put(ConsumerConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, "500");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        int expected = Integer.parseInt(a.get("expected"));
        long deadline = System.currentTimeMillis() + Long.parseLong(a.getOrDefault("timeout-ms", "120000"));
        int n = 0, commitErrors = 0;
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(p)) {
            c.subscribe(Arrays.asList(a.get("topics").split(",")));
            while (n < expected && System.currentTimeMillis() < deadline) {
                ConsumerRecords<String, String> rs = c.poll(Duration.ofMillis(200));
                for (ConsumerRecord<String, String> r : rs) {
                    System.out.println("{\"type\":\"record\",\"topic\":" + js(r.topic()) + ",\"partition\":" + r.partition()
                            + ",\"offset\":" + r.offset() + ",\"leader_epoch\":" + r.leaderEpoch().orElse(-1)
                            + ",\"value\":" + js(r.value()) + "}");
                    n++;
                }
                if (!rs.isEmpty()) {
                    System.out.flush();
                    try {
                        c.commitSync(Duration.ofSeconds(30));
                    } catch (Exception e) {  // the broker went away mid-commit: the next poll commits again
                        commitErrors++;
                    }
                }
            }
            try {
                c.commitSync(Duration.ofSeconds(30));
            } catch (Exception e) {
                commitErrors++;
            }
            System.out.println("{\"type\":\"summary\",\"mode\":\"follow\",\"count\":" + n
                    + ",\"commit_errors\":" + commitErrors + "}");
        }
        return 0;
    }

    static int eosMember(Map<String, String> a) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, a.get("bootstrap"));
        p.put(ConsumerConfig.GROUP_ID_CONFIG, a.get("group"));
        p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, a.getOrDefault("group-protocol", "consumer"));
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        Properties pp = producerProps(a);
        pp.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, "10000");
        long deadline = System.currentTimeMillis() + Long.parseLong(a.getOrDefault("duration-ms", "60000"));
        int n = 0;
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(p);
             KafkaProducer<String, String> prod = new KafkaProducer<>(pp)) {
            prod.initTransactions();
            c.subscribe(Arrays.asList(a.get("topics").split(",")));
            while (System.currentTimeMillis() < deadline) {
                ConsumerRecords<String, String> rs = c.poll(Duration.ofMillis(200));
                if (rs.isEmpty()) continue;
                Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                prod.beginTransaction();
                try {
                    for (ConsumerRecord<String, String> r : rs) {
                        prod.send(new ProducerRecord<>(a.get("out"), r.key(), "out:" + r.value()));
                        offsets.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                    }
                    prod.sendOffsetsToTransaction(offsets, c.groupMetadata());
                    prod.commitTransaction();
                    n += rs.count();
                    System.out.println("{\"type\":\"committed\",\"count\":" + n + "}");
                    System.out.flush();
                } catch (org.apache.kafka.common.errors.ProducerFencedException e) {
                    throw e;
                } catch (Exception e) {
                    // e.g. a stale member epoch after a rebalance: abort, go back to the committed offsets
                    System.out.println("{\"type\":\"aborted\",\"error\":" + js(e.toString()) + "}");
                    System.out.flush();
                    prod.abortTransaction();
                    Map<TopicPartition, OffsetAndMetadata> committed = c.committed(c.assignment());
                    for (TopicPartition tp : c.assignment()) {
                        OffsetAndMetadata om = committed.get(tp);
                        if (om != null) c.seek(tp, om.offset()); else c.seekToBeginning(Collections.singleton(tp));
                    }
                }
            }
        }
        System.out.println("{\"type\":\"summary\",\"mode\":\"eos-member\",\"count\":" + n + "}");
        return 0;
    }

    public static void main(String[] argv) throws Exception {
        Map<String, String> a = opts(argv);
        int rc;
        switch (argv[0]) {
            case "produce": rc = produce(a); break;
            case "zombie": rc = zombie(a); break;
            case "consume": rc = consume(a); break;
            case "group-consume": rc = groupConsume(a); break;
            case "follow": rc = follow(a); break;
            case "eos-member": rc = eosMember(a); break;
            default: throw new IllegalArgumentException("unknown mode " + argv[0]);
        }
        System.out.flush();
        System.exit(rc);
    }
}
