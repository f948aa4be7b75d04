// The Java AdminClient (kafka-clients 4.4.0) against the emulator, run by tests/admin/test_java_admin.py with
// Java's source launcher:  java -cp <kafka-clients classpath> AdminCalls.java BOOTSTRAP TOPIC
// Each step prints one line "step: outcome"; the Python test compares the lines.
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewPartitionReassignment;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.ElectionType;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;

public class AdminCalls {
    static String cause(Exception e) {
        Throwable t = e instanceof ExecutionException ? e.getCause() : e;
        return t.getClass().getSimpleName();
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1];
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("request.timeout.ms", "15000");
        p.put("default.api.timeout.ms", "20000");
        try (Admin admin = Admin.create(p)) {
            admin.createTopics(List.of(new NewTopic(topic, 2, (short) 1))).all().get(20, TimeUnit.SECONDS);
            ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
            admin.incrementalAlterConfigs(Map.of(resource, List.of(
                new AlterConfigOp(new ConfigEntry("retention.ms", "98765"), AlterConfigOp.OpType.SET),
                new AlterConfigOp(new ConfigEntry("cleanup.policy", "compact"), AlterConfigOp.OpType.APPEND))))
                .all().get(20, TimeUnit.SECONDS);
            Config config = admin.describeConfigs(List.of(resource)).all().get(20, TimeUnit.SECONDS).get(resource);
            ConfigEntry retention = config.get("retention.ms");
            System.out.println("describeConfigs: " + retention.value() + " " + retention.source()
                + " " + config.get("cleanup.policy").value());
            try {
                admin.incrementalAlterConfigs(Map.of(resource, List.of(new AlterConfigOp(
                    new ConfigEntry("retention.ms", "soon"), AlterConfigOp.OpType.SET)))).all().get(20, TimeUnit.SECONDS);
                System.out.println("badConfig: accepted");
            } catch (ExecutionException e) {
                System.out.println("badConfig: " + cause(e) + " " + e.getCause().getMessage());
            }
            var cluster = admin.describeCluster();
            System.out.println("describeCluster: " + cluster.nodes().get().size() + " nodes, controller "
                + cluster.controller().get().id() + ", cluster id set " + !cluster.clusterId().get().isEmpty());
            TopicDescription description = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
            System.out.println("describeTopics: " + description.partitions().size() + " partitions");
            var deleted = admin.deleteRecords(Map.of(new TopicPartition(topic, 0), RecordsToDelete.beforeOffset(0)))
                .all();
            try {
                deleted.get(20, TimeUnit.SECONDS);
                System.out.println("deleteRecords: done");
            } catch (ExecutionException e) {
                System.out.println("deleteRecords: " + cause(e));  // the topic is compact,delete here: allowed
            }
            try {
                admin.electLeaders(ElectionType.PREFERRED, Set.of(new TopicPartition(topic, 0))).all()
                    .get(20, TimeUnit.SECONDS);
                System.out.println("electLeaders: elected");
            } catch (ExecutionException e) {
                System.out.println("electLeaders: " + cause(e));
            }
            var reassign = admin.alterPartitionReassignments(Map.of(new TopicPartition(topic, 1),
                Optional.of(new NewPartitionReassignment(List.of(cluster.nodes().get().iterator().next().id())))));
            reassign.all().get(20, TimeUnit.SECONDS);
            System.out.println("alterPartitionReassignments: done, in progress "
                + admin.listPartitionReassignments().reassignments().get().size());
            try {
                admin.describeShareGroups(List.of("share")).all().get(20, TimeUnit.SECONDS);
                System.out.println("describeShareGroups: answered");
            } catch (ExecutionException e) {
                System.out.println("describeShareGroups: " + cause(e));
            }
        }
    }
}
