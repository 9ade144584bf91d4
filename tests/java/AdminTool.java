// Admin APIs with the Java AdminClient (kafka-clients), driven by tests/integration/test_admin_apis.py.
//
//   java -cp <classes>:<jars> AdminTool describe --bootstrap H:P --topics a,b
//        describeTopics (4.x: DescribeTopicPartitions); one {"type":"topic",...} line per topic
//   java ... AdminTool delete-records --bootstrap H:P --topic t --partition 0 --offset 5
//        deleteRecords; {"type":"deleted","low_watermark":N} or {"type":"error",...}
//   java ... AdminTool alter --bootstrap H:P --topic t [--set k=v;k=v] [--delete k,k] [--append k=v] [--subtract k=v]
//        incrementalAlterConfigs, then describeConfigs; {"type":"altered","configs":{k:v (dynamic topic configs)}}
//   java ... AdminTool elect --bootstrap H:P --topic t --partition 0
//        electLeaders(PREFERRED); {"type":"elect","error":"<exception class or null>"}
//   java ... AdminTool abort --bootstrap H:P --topic t --partition 0 --start-offset 5 [--coordinator-epoch N]
//        what kafka-transactions.sh abort --start-offset does (TransactionsCommand.buildAbortSpec):
//        describeProducers, the producer whose transaction starts there, abortTransaction with its
//        coordinator epoch (orElse(0)), or N if given; {"type":"aborted","producer_id":..,
//        "producer_epoch":..,"coordinator_epoch":..} or {"type":"error",...}
//
// Errors print {"type":"error","error":"<exception class>","message":...} and exit 0, so the
// test can assert the exact Kafka exception the client raised.

import java.util.*;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.common.ElectionType;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.config.ConfigResource;

public class AdminTool {
    static Map<String, String> opts(String[] argv) {
        Map<String, String> m = new HashMap<>();
        for (int i = 1; i + 1 < argv.length; i += 2) m.put(argv[i].replaceFirst("^--", ""), argv[i + 1]);
        return m;
    }

    static String js(String s) {
        if (s == null) return "null";
        return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n") + "\"";
    }

    static String ids(List<Node> nodes) {
        StringBuilder b = new StringBuilder("[");
        for (int i = 0; i < nodes.size(); i++) b.append(i == 0 ? "" : ",").append(nodes.get(i).id());
        return b.append("]").toString();
    }

    static void error(Throwable e) {
        Throwable c = e instanceof ExecutionException && e.getCause() != null ? e.getCause() : e;
        System.out.println("{\"type\":\"error\",\"error\":" + js(c.getClass().getSimpleName())
            + ",\"message\":" + js(c.getMessage()) + "}");
    }

    static void describe(Admin admin, Map<String, String> a) throws Exception {
        List<String> topics = Arrays.asList(a.get("topics").split(","));
        Map<String, org.apache.kafka.common.KafkaFuture<TopicDescription>> futures =
            admin.describeTopics(topics).topicNameValues();
        for (String t : topics) {
            try {
                TopicDescription d = futures.get(t).get();
                StringBuilder parts = new StringBuilder("[");
                for (TopicPartitionInfo p : d.partitions()) {
                    if (parts.length() > 1) parts.append(",");
                    parts.append("{\"partition\":").append(p.partition())
                         .append(",\"leader\":").append(p.leader() == null ? -1 : p.leader().id())
                         .append(",\"replicas\":").append(ids(p.replicas()))
                         .append(",\"isr\":").append(ids(p.isr()))
                         .append(",\"elr\":").append(ids(p.elr()))
                         .append(",\"last_known_elr\":").append(ids(p.lastKnownElr())).append("}");
                }
                parts.append("]");
                System.out.println("{\"type\":\"topic\",\"name\":" + js(d.name()) + ",\"topic_id\":" + js(d.topicId().toString())
                    + ",\"internal\":" + d.isInternal() + ",\"partitions\":" + parts + "}");
            } catch (ExecutionException e) {
                Throwable c = e.getCause();
                System.out.println("{\"type\":\"topic\",\"name\":" + js(t) + ",\"error\":" + js(c.getClass().getSimpleName()) + "}");
            }
        }
    }

    static void deleteRecords(Admin admin, Map<String, String> a) {
        TopicPartition tp = new TopicPartition(a.get("topic"), Integer.parseInt(a.get("partition")));
        long offset = Long.parseLong(a.get("offset"));
        try {
            DeletedRecords r = admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(offset)))
                .lowWatermarks().get(tp).get();
            System.out.println("{\"type\":\"deleted\",\"low_watermark\":" + r.lowWatermark() + "}");
        } catch (Exception e) {
            error(e);
        }
    }

    static void alter(Admin admin, Map<String, String> a) {
        ConfigResource res = new ConfigResource(ConfigResource.Type.TOPIC, a.get("topic"));
        List<AlterConfigOp> ops = new ArrayList<>();
        String[][] kinds = {{"set", "SET"}, {"append", "APPEND"}, {"subtract", "SUBTRACT"}};
        for (String[] k : kinds) {
            String v = a.get(k[0]);
            if (v == null) continue;
            for (String kv : v.split(";")) {
                int eq = kv.indexOf('=');
                ops.add(new AlterConfigOp(new ConfigEntry(kv.substring(0, eq), kv.substring(eq + 1)),
                                          AlterConfigOp.OpType.valueOf(k[1])));
            }
        }
        if (a.get("delete") != null)
            for (String k : a.get("delete").split(","))
                ops.add(new AlterConfigOp(new ConfigEntry(k, null), AlterConfigOp.OpType.DELETE));
        try {
            admin.incrementalAlterConfigs(Map.of(res, ops)).all().get();
            Config c = admin.describeConfigs(List.of(res)).all().get().get(res);
            StringBuilder b = new StringBuilder("{");
            for (ConfigEntry e : c.entries()) {
                if (e.source() != ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG) continue;
                if (b.length() > 1) b.append(",");
                b.append(js(e.name())).append(":").append(js(e.value()));
            }
            System.out.println("{\"type\":\"altered\",\"configs\":" + b.append("}") + "}");
        } catch (Exception e) {
            error(e);
        }
    }

    static void elect(Admin admin, Map<String, String> a) {
        TopicPartition tp = new TopicPartition(a.get("topic"), Integer.parseInt(a.get("partition")));
        try {
            Map<TopicPartition, Optional<Throwable>> r = admin.electLeaders(ElectionType.PREFERRED, Set.of(tp)).partitions().get();
            Optional<Throwable> err = r.get(tp);
            System.out.println("{\"type\":\"elect\",\"error\":" + js(err.map(t -> t.getClass().getSimpleName()).orElse(null)) + "}");
        } catch (Exception e) {
            error(e);
        }
    }

    static void abort(Admin admin, Map<String, String> a) {
        TopicPartition tp = new TopicPartition(a.get("topic"), Integer.parseInt(a.get("partition")));
        long start = Long.parseLong(a.get("start-offset"));
        try {
            ProducerState found = null;
            for (ProducerState s : admin.describeProducers(List.of(tp)).partitionResult(tp).get().activeProducers()) {
                if (s.currentTransactionStartOffset().isPresent() && s.currentTransactionStartOffset().getAsLong() == start) {
                    found = s;
                    break;
                }
            }
            if (found == null) {
                System.out.println("{\"type\":\"error\",\"error\":\"NoOpenTransaction\",\"message\":null}");
                return;
            }
            int coordinatorEpoch = a.containsKey("coordinator-epoch") ? Integer.parseInt(a.get("coordinator-epoch"))
                : found.coordinatorEpoch().orElse(0);
            admin.abortTransaction(new AbortTransactionSpec(tp, found.producerId(), (short) found.producerEpoch(),
                coordinatorEpoch)).all().get();
            System.out.println("{\"type\":\"aborted\",\"producer_id\":" + found.producerId() + ",\"producer_epoch\":"
                + found.producerEpoch() + ",\"coordinator_epoch\":" + coordinatorEpoch + "}");
        } catch (Exception e) {
            error(e);
        }
    }

    public static void main(String[] argv) throws Exception {
        Map<String, String> a = opts(argv);
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, a.get("bootstrap"));
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "30000");
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "20000");
        try (Admin admin = Admin.create(p)) {
            switch (argv[0]) {
                case "describe": describe(admin, a); break;
                case "delete-records": deleteRecords(admin, a); break;
                case "alter": alter(admin, a); break;
                case "elect": elect(admin, a); break;
                case "abort": abort(admin, a); break;
                default: throw new IllegalArgumentException("unknown mode " + argv[0]);
            }
        }
        System.out.println("{\"type\":\"summary\",\"ok\":true}");
    }
}
