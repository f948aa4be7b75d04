package dev.rebalancelab.oracle;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Assignment;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.GroupSubscription;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Subscription;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.RangeAssignor;
import org.apache.kafka.clients.consumer.RoundRobinAssignor;
import org.apache.kafka.clients.consumer.StickyAssignor;
import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * {"kind": "assign", "assignor": name,
 *  "brokers": [{"id", "rack"|null}],
 *  "topics": [{"name", "partitions": [[replica broker ids], ...]}]   (list index = partition id),
 *  "members": [{"id", "topics": [...], "user_data": hex|null, "owned": [[topic, p], ...],
 *               "generation": int|null, "rack": str|null, "instance_id": str|null}]}
 * -> {member id: [[topic, p], ...]} in the assignor's list order.
 */
final class Assign {
    private Assign() {
    }

    static JsonNode assign(JsonNode request) {
        ConsumerPartitionAssignor assignor = newAssignor(request.get("assignor").asText());
        Cluster cluster = cluster(request);
        Map<String, Subscription> subscriptions = subscriptions(request);
        Map<String, Assignment> result = assignor.assign(cluster, new GroupSubscription(subscriptions))
            .groupAssignment();
        return toJson(result);
    }

    /**
     * {"kind": "assign_timed", ...the fields of "assign"..., "repeat": n (default 1),
     *  "with_assignment": bool (default true)}
     * -> {"nanos": [n wall-clock times of {@code assignor.assign(cluster, groupSubscription)}],
     *     "assignment": the last run's result in the "assign" format (omitted if with_assignment is false)}.
     * Every run gets a fresh assignor and freshly built subscriptions (user data buffers are consumed
     * when read) on the same inputs; JSON parsing, building the Cluster and the
     * subscriptions, and writing the answer are outside the timed region. The first run includes JIT warm-up.
     */
    static JsonNode assignTimed(JsonNode request) {
        String name = request.get("assignor").asText();
        int repeat = Math.max(1, request.path("repeat").asInt(1));
        Cluster cluster = cluster(request);
        ObjectNode out = Driver.json().createObjectNode();
        ArrayNode nanos = out.putArray("nanos");
        Map<String, Assignment> result = null;
        for (int i = 0; i < repeat; i++) {
            ConsumerPartitionAssignor assignor = newAssignor(name);
            // Fresh Subscriptions every run: reading user data consumes its ByteBuffer.
            GroupSubscription group = new GroupSubscription(subscriptions(request));
            long start = System.nanoTime();
            result = assignor.assign(cluster, group).groupAssignment();
            nanos.add(System.nanoTime() - start);
        }
        if (request.path("with_assignment").asBoolean(true)) {
            out.set("assignment", toJson(result));
        }
        return out;
    }

    /** ConsumerCoordinator.onLeaderElected: a plain HashMap filled in JoinGroup member order. */
    private static Map<String, Subscription> subscriptions(JsonNode request) {
        Map<String, Subscription> subscriptions = new HashMap<>();
        for (JsonNode m : request.get("members")) {
            subscriptions.put(m.get("id").asText(), subscription(m));
        }
        return subscriptions;
    }

    private static ObjectNode toJson(Map<String, Assignment> result) {
        ObjectNode out = Driver.json().createObjectNode();
        for (Map.Entry<String, Assignment> e : result.entrySet()) {
            ArrayNode list = out.putArray(e.getKey());
            for (TopicPartition tp : e.getValue().partitions()) {
                ArrayNode pair = list.addArray();
                pair.add(tp.topic());
                pair.add(tp.partition());
            }
        }
        return out;
    }

    /** A fresh instance per case: the sticky assignors keep maxGeneration across calls (spec Q4). */
    private static ConsumerPartitionAssignor newAssignor(String name) {
        switch (name) {
            case "range":
                return new RangeAssignor();
            case "roundrobin":
                return new RoundRobinAssignor();
            case "sticky":
                return new StickyAssignor();
            case "cooperative-sticky":
                return new CooperativeStickyAssignor();
            default:
                throw new IllegalArgumentException("unknown assignor " + name);
        }
    }

    private static Cluster cluster(JsonNode request) {
        Map<Integer, Node> nodes = new LinkedHashMap<>();
        for (JsonNode b : request.get("brokers")) {
            int id = b.get("id").asInt();
            JsonNode rack = b.get("rack");
            nodes.put(id, new Node(id, "broker-" + id, 9092, rack == null || rack.isNull() ? null : rack.asText()));
        }
        List<PartitionInfo> partitions = new ArrayList<>();
        for (JsonNode t : request.get("topics")) {
            String topic = t.get("name").asText();
            int p = 0;
            for (JsonNode replicaIds : t.get("partitions")) {
                Node[] replicas = new Node[replicaIds.size()];
                for (int i = 0; i < replicas.length; i++) {
                    replicas[i] = nodes.get(replicaIds.get(i).asInt());
                }
                Node leader = replicas.length > 0 ? replicas[0] : null;
                partitions.add(new PartitionInfo(topic, p++, leader, replicas, replicas));
            }
        }
        return new Cluster("oracle", nodes.values(), partitions, Collections.emptySet(), Collections.emptySet());
    }

    private static Subscription subscription(JsonNode m) {
        List<String> topics = new ArrayList<>();
        m.get("topics").forEach(t -> topics.add(t.asText()));
        JsonNode userData = m.get("user_data");
        ByteBuffer data = userData == null || userData.isNull() ? null : ByteBuffer.wrap(Hex.decode(userData.asText()));
        List<TopicPartition> owned = new ArrayList<>();
        if (m.has("owned")) {
            m.get("owned").forEach(tp -> owned.add(new TopicPartition(tp.get(0).asText(), tp.get(1).asInt())));
        }
        JsonNode gen = m.get("generation");
        int generation = gen == null || gen.isNull() ? -1 : gen.asInt();
        Subscription s = new Subscription(topics, data, owned, generation, optional(m.get("rack")));
        s.setGroupInstanceId(optional(m.get("instance_id")));
        return s;
    }

    private static Optional<String> optional(JsonNode value) {
        return value == null || value.isNull() ? Optional.empty() : Optional.of(value.asText());
    }
}
