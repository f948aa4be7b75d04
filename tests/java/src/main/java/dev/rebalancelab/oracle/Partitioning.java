package dev.rebalancelab.oracle;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;

import org.apache.kafka.clients.producer.RoundRobinPartitioner;
import org.apache.kafka.clients.producer.internals.BuiltInPartitioner;
import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.utils.Utils;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/** Producer-side cases: Utils.murmur2, BuiltInPartitioner.partitionForKey, RoundRobinPartitioner. */
final class Partitioning {
    private static final String TOPIC = "t";

    private Partitioning() {
    }

    /** {"key": hex} -> signed murmur2. */
    static JsonNode murmur2(JsonNode request) {
        byte[] key = Hex.decode(request.get("key").asText());
        return Driver.json().getNodeFactory().numberNode(Utils.murmur2(key));
    }

    /** {"key": hex, "num_partitions": n} -> partition of a keyed record. */
    static JsonNode partitionForKey(JsonNode request) {
        byte[] key = Hex.decode(request.get("key").asText());
        int n = request.get("num_partitions").asInt();
        return Driver.json().getNodeFactory().numberNode(BuiltInPartitioner.partitionForKey(key, n));
    }

    /** {"num_partitions": n, "available": [ids with a leader], "calls": k} -> k partitions. */
    static JsonNode roundRobin(JsonNode request) {
        int n = request.get("num_partitions").asInt();
        Set<Integer> available = new HashSet<>();
        request.get("available").forEach(p -> available.add(p.asInt()));
        Node leader = new Node(0, "localhost", 9092);
        List<PartitionInfo> partitions = new ArrayList<>();
        for (int p = 0; p < n; p++) {
            Node l = available.contains(p) ? leader : null;
            partitions.add(new PartitionInfo(TOPIC, p, l, new Node[] {leader}, new Node[] {leader}));
        }
        Cluster cluster = new Cluster("c", List.of(leader), partitions, Collections.emptySet(), Collections.emptySet());
        RoundRobinPartitioner partitioner = new RoundRobinPartitioner();
        ArrayNode result = Driver.json().createArrayNode();
        int calls = request.get("calls").asInt();
        for (int i = 0; i < calls; i++) {
            result.add(partitioner.partition(TOPIC, null, null, null, null, cluster));
        }
        return result;
    }
}
