// A small CLI around the Apache Kafka Java client, driven by the Python tests.
//
//   java -cp <classes>:<jars> ClientTool <mode> --bootstrap HOST:PORT [options]
//
// Modes
//   create-topic --topic T --partitions N [--replication-factor 1] [--topic-config k=v]...
//   produce      --topic T --count N --tag TAG [--ts-base MS] [--start I]
//                [--compression none|gzip|snappy|lz4|zstd] [--acks all|1|0]
//                [--linger-ms 5] [--batch-size 65536] [--idempotence true|false]
//                [--transactional-id ID [--txn-size N] [--abort true]]
//                [--print-acks true] [--producer-config k=v]...
//   consume      --topic T --expected N [--timeout-ms 60000] [--partitions N]
//                [--isolation-level read_uncommitted|read_committed]
//                [--format json|none] [--consumer-config k=v]...
//   end-offsets  --topic T [--partitions N] [--isolation-level ...]
//   generate     --tag TAG --count N [--start I] [--ts-base MS]   (no broker: prints the
//                records produce would send, as consume prints them, p=-1, o=i)
//
// Records are deterministic and must match tests/harness.py (make_record):
//   key     = "k" + (i % 997)
//   value   = TAG + ":" + i + ":" + alphabet repeated, total length 40 + i % 80
//   headers = idx=<i>, tag=<TAG>, bin=[i%256, (i*7)%256, 0, 255]
//   ts      = ts-base + i
//
// Output: one JSON object per line.  Every mode ends with a line
// {"type":"summary", ...}; consume prints {"type":"record", ...} lines before
// it (bytes in base64).  Exit code 0 on success, 2 on produce errors, 3 when
// consume got fewer records than expected, 1 on other failures.

import java.io.BufferedOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public final class ClientTool {
    static final int KEY_SPACE = 997;
    static final int VALUE_BASE = 40;
    static final int VALUE_SPREAD = 80;
    static final byte[] ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789".getBytes(StandardCharsets.US_ASCII);

    static final PrintStream OUT = new PrintStream(new BufferedOutputStream(System.out, 1 << 16), false, StandardCharsets.UTF_8);

    // ---------------------------------------------------------------- args
    static final class Args {
        final Map<String, String> single = new HashMap<>();
        final Map<String, List<String>> multi = new HashMap<>();

        Args(String[] argv, int from) {
            for (int i = from; i < argv.length; i++) {
                String a = argv[i];
                if (!a.startsWith("--") || i + 1 >= argv.length)
                    throw new IllegalArgumentException("expected --name value, got: " + a);
                String k = a.substring(2), v = argv[++i];
                single.put(k, v);
                multi.computeIfAbsent(k, x -> new ArrayList<>()).add(v);
            }
        }

        String get(String k) {
            String v = single.get(k);
            if (v == null) throw new IllegalArgumentException("missing --" + k);
            return v;
        }

        String get(String k, String dflt) { return single.getOrDefault(k, dflt); }
        long getLong(String k, long dflt) { return single.containsKey(k) ? Long.parseLong(single.get(k)) : dflt; }
        int getInt(String k, int dflt) { return (int) getLong(k, dflt); }
        boolean getBool(String k, boolean dflt) { return single.containsKey(k) ? Boolean.parseBoolean(single.get(k)) : dflt; }

        void putAll(String k, Properties props) {
            for (String kv : multi.getOrDefault(k, Collections.emptyList())) {
                int eq = kv.indexOf('=');
                if (eq <= 0) throw new IllegalArgumentException("--" + k + " wants key=value, got " + kv);
                props.put(kv.substring(0, eq), kv.substring(eq + 1));
            }
        }
    }

    // ---------------------------------------------------------------- records
    static byte[] key(int i) { return ("k" + (i % KEY_SPACE)).getBytes(StandardCharsets.US_ASCII); }

    static byte[] value(String tag, int i) {
        byte[] head = (tag + ":" + i + ":").getBytes(StandardCharsets.UTF_8);
        int n = VALUE_BASE + i % VALUE_SPREAD;
        int bodyLen = Math.max(0, n - head.length);
        byte[] out = new byte[head.length + bodyLen];
        System.arraycopy(head, 0, out, 0, head.length);
        for (int j = 0; j < bodyLen; j++) out[head.length + j] = ALPHABET[j % ALPHABET.length];
        return out;
    }

    static List<Header> headers(String tag, int i) {
        List<Header> h = new ArrayList<>(3);
        h.add(new RecordHeader("idx", Integer.toString(i).getBytes(StandardCharsets.US_ASCII)));
        h.add(new RecordHeader("tag", tag.getBytes(StandardCharsets.UTF_8)));
        h.add(new RecordHeader("bin", new byte[] {(byte) (i % 256), (byte) ((i * 7) % 256), 0, (byte) 255}));
        return h;
    }

    // ---------------------------------------------------------------- json
    static String js(String s) {
        if (s == null) return "null";
        StringBuilder b = new StringBuilder(s.length() + 2).append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"': b.append("\\\""); break;
                case '\\': b.append("\\\\"); break;
                case '\n': b.append("\\n"); break;
                case '\r': b.append("\\r"); break;
                case '\t': b.append("\\t"); break;
                default:
                    if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
                    else b.append(c);
            }
        }
        return b.append('"').toString();
    }

    static String b64(byte[] b) { return b == null ? "null" : "\"" + Base64.getEncoder().encodeToString(b) + "\""; }

    static String partitionMap(Map<Integer, String> m) {
        StringBuilder b = new StringBuilder("{");
        boolean first = true;
        for (Map.Entry<Integer, String> e : new TreeMap<>(m).entrySet()) {
            if (!first) b.append(',');
            first = false;
            b.append('"').append(e.getKey()).append("\":").append(e.getValue());
        }
        return b.append('}').toString();
    }

    // ---------------------------------------------------------------- modes
    static Properties common(Args a) {
        Properties p = new Properties();
        p.put("bootstrap.servers", a.get("bootstrap"));
        p.put("client.id", a.get("client-id", "minikafka-clienttool"));
        return p;
    }

    static int createTopic(Args a) throws Exception {
        Properties p = common(a);
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "30000");
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "60000");
        a.putAll("admin-config", p);
        String topic = a.get("topic");
        NewTopic nt = new NewTopic(topic, a.getInt("partitions", 1), (short) a.getInt("replication-factor", 1));
        Map<String, String> cfg = new HashMap<>();
        for (String kv : a.multi.getOrDefault("topic-config", Collections.emptyList())) {
            int eq = kv.indexOf('=');
            cfg.put(kv.substring(0, eq), kv.substring(eq + 1));
        }
        if (!cfg.isEmpty()) nt.configs(cfg);
        try (Admin admin = Admin.create(p)) {
            admin.createTopics(List.of(nt)).all().get();
            int n = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic).partitions().size();
            OUT.println("{\"type\":\"summary\",\"mode\":\"create-topic\",\"topic\":" + js(topic) + ",\"partitions\":" + n + "}");
        }
        return 0;
    }

    static int produce(Args a) throws Exception {
        Properties p = common(a);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.ACKS_CONFIG, a.get("acks", "all"));
        p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, a.get("compression", "none"));
        p.put(ProducerConfig.LINGER_MS_CONFIG, a.get("linger-ms", "5"));
        p.put(ProducerConfig.BATCH_SIZE_CONFIG, a.get("batch-size", "65536"));
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, a.get("idempotence", "true"));
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, a.get("delivery-timeout-ms", "60000"));
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "30000");
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "30000");
        String txnId = a.get("transactional-id", null);
        if (txnId != null) p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, txnId);
        a.putAll("producer-config", p);

        String topic = a.get("topic");
        String tag = a.get("tag");
        int start = a.getInt("start", 0);
        int count = a.getInt("count", 1);
        long tsBase = a.getLong("ts-base", System.currentTimeMillis());
        boolean printAcks = a.getBool("print-acks", false);
        boolean abort = a.getBool("abort", false);
        int txnSize = a.getInt("txn-size", count);

        AtomicLong acked = new AtomicLong(), errors = new AtomicLong();
        AtomicReference<String> firstError = new AtomicReference<>();
        Map<Integer, long[]> parts = new HashMap<>(); // partition -> {count, lastOffset}
        List<String> ackLines = printAcks ? Collections.synchronizedList(new ArrayList<>()) : null;
        long t0 = System.nanoTime();
        int transactions = 0;
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
            if (txnId != null) producer.initTransactions();
            for (int i = start; i < start + count; i++) {
                if (txnId != null && (i - start) % txnSize == 0) {
                    producer.beginTransaction();
                    transactions++;
                }
                final int idx = i;
                ProducerRecord<byte[], byte[]> rec = new ProducerRecord<>(topic, null, tsBase + i, key(i), value(tag, i), headers(tag, i));
                producer.send(rec, (md, ex) -> {
                    if (ex != null) {
                        errors.incrementAndGet();
                        firstError.compareAndSet(null, "record " + idx + ": " + ex);
                    } else {
                        acked.incrementAndGet();
                        synchronized (parts) {
                            long[] s = parts.computeIfAbsent(md.partition(), x -> new long[] {0, -1});
                            s[0]++;
                            s[1] = Math.max(s[1], md.offset());
                        }
                        if (ackLines != null)
                            ackLines.add("{\"type\":\"ack\",\"i\":" + idx + ",\"p\":" + md.partition() + ",\"o\":" + md.offset() + "}");
                    }
                });
                if (txnId != null && ((i - start + 1) % txnSize == 0 || i == start + count - 1)) {
                    if (abort) producer.abortTransaction();
                    else producer.commitTransaction();
                }
            }
            producer.flush();
        }
        double secs = (System.nanoTime() - t0) / 1e9;
        if (ackLines != null) for (String l : ackLines) OUT.println(l);
        Map<Integer, String> pm = new HashMap<>();
        for (Map.Entry<Integer, long[]> e : parts.entrySet())
            pm.put(e.getKey(), "{\"count\":" + e.getValue()[0] + ",\"last_offset\":" + e.getValue()[1] + "}");
        OUT.println("{\"type\":\"summary\",\"mode\":\"produce\",\"sent\":" + count + ",\"acked\":" + acked.get()
                + ",\"errors\":" + errors.get() + ",\"first_error\":" + js(firstError.get())
                + ",\"transactions\":" + transactions + ",\"seconds\":" + String.format("%.3f", secs)
                + ",\"partitions\":" + partitionMap(pm) + "}");
        return errors.get() == 0 && acked.get() == count ? 0 : 2;
    }

    static List<TopicPartition> partitionsOf(KafkaConsumer<?, ?> c, Args a, long deadline) {
        String topic = a.get("topic");
        List<TopicPartition> tps = new ArrayList<>();
        if (a.single.containsKey("partitions")) {
            for (int i = 0; i < a.getInt("partitions", 1); i++) tps.add(new TopicPartition(topic, i));
            return tps;
        }
        while (true) {
            List<PartitionInfo> infos = c.partitionsFor(topic, Duration.ofSeconds(10));
            if (infos != null && !infos.isEmpty()) {
                for (PartitionInfo pi : infos) tps.add(new TopicPartition(topic, pi.partition()));
                tps.sort((x, y) -> Integer.compare(x.partition(), y.partition()));
                return tps;
            }
            if (System.currentTimeMillis() > deadline) throw new IllegalStateException("no partitions for " + topic);
        }
    }

    static KafkaConsumer<byte[], byte[]> consumer(Args a) {
        Properties p = common(a);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, a.get("isolation-level", "read_uncommitted"));
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "2000");
        a.putAll("consumer-config", p);
        return new KafkaConsumer<>(p);
    }

    static int consume(Args a) {
        long expected = a.getLong("expected", 0);
        long timeoutMs = a.getLong("timeout-ms", 60000);
        long deadline = System.currentTimeMillis() + timeoutMs;
        boolean json = a.get("format", "json").equals("json");
        long n = 0;
        Map<Integer, String> positions = new HashMap<>();
        try (KafkaConsumer<byte[], byte[]> c = consumer(a)) {
            List<TopicPartition> tps = partitionsOf(c, a, deadline);
            c.assign(tps);
            c.seekToBeginning(tps);
            while (n < expected && System.currentTimeMillis() < deadline) {
                ConsumerRecords<byte[], byte[]> recs = c.poll(Duration.ofMillis(500));
                for (ConsumerRecord<byte[], byte[]> r : recs) {
                    n++;
                    if (!json) continue;
                    OUT.println(recordJson(r.partition(), r.offset(), r.key(), r.value(), r.timestamp(),
                            r.timestampType().name, r.headers()));
                }
            }
            for (TopicPartition tp : tps) positions.put(tp.partition(), Long.toString(c.position(tp)));
        }
        OUT.println("{\"type\":\"summary\",\"mode\":\"consume\",\"count\":" + n + ",\"expected\":" + expected
                + ",\"positions\":" + partitionMap(positions) + "}");
        return n >= expected ? 0 : 3;
    }

    static String recordJson(int p, long o, byte[] k, byte[] v, long ts, String tt, Iterable<Header> headers) {
        StringBuilder b = new StringBuilder(256);
        b.append("{\"type\":\"record\",\"p\":").append(p).append(",\"o\":").append(o)
         .append(",\"k\":").append(b64(k)).append(",\"v\":").append(b64(v))
         .append(",\"ts\":").append(ts).append(",\"tt\":").append(js(tt)).append(",\"h\":[");
        boolean first = true;
        for (Header h : headers) {
            if (!first) b.append(',');
            first = false;
            b.append('[').append(js(h.key())).append(',').append(b64(h.value())).append(']');
        }
        return b.append("]}").toString();
    }

    static int generate(Args a) {
        String tag = a.get("tag");
        int start = a.getInt("start", 0), count = a.getInt("count", 1);
        long tsBase = a.getLong("ts-base", 0);
        for (int i = start; i < start + count; i++)
            OUT.println(recordJson(-1, i, key(i), value(tag, i), tsBase + i, "CreateTime", headers(tag, i)));
        OUT.println("{\"type\":\"summary\",\"mode\":\"generate\",\"count\":" + count + "}");
        return 0;
    }

    static int endOffsets(Args a) {
        long deadline = System.currentTimeMillis() + a.getLong("timeout-ms", 30000);
        Map<Integer, String> out = new HashMap<>();
        try (KafkaConsumer<byte[], byte[]> c = consumer(a)) {
            List<TopicPartition> tps = partitionsOf(c, a, deadline);
            for (Map.Entry<TopicPartition, Long> e : c.endOffsets(tps, Duration.ofSeconds(30)).entrySet())
                out.put(e.getKey().partition(), Long.toString(e.getValue()));
        }
        OUT.println("{\"type\":\"summary\",\"mode\":\"end-offsets\",\"offsets\":" + partitionMap(out) + "}");
        return 0;
    }

    public static void main(String[] argv) {
        int rc;
        try {
            if (argv.length < 1) throw new IllegalArgumentException("usage: ClientTool <mode> --bootstrap HOST:PORT ...");
            Args a = new Args(argv, 1);
            switch (argv[0]) {
                case "create-topic": rc = createTopic(a); break;
                case "produce": rc = produce(a); break;
                case "consume": rc = consume(a); break;
                case "end-offsets": rc = endOffsets(a); break;
                case "generate": rc = generate(a); break;
                default: throw new IllegalArgumentException("unknown mode " + argv[0]);
            }
        } catch (Throwable t) {
            OUT.println("{\"type\":\"error\",\"error\":" + js(String.valueOf(t)) + "}");
            OUT.flush();
            t.printStackTrace();
            rc = 1;
        }
        OUT.flush();
        System.exit(rc);
    }
}
