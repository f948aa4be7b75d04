package dev.rebalancelab.oracle;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.metadata.placement.ClusterDescriber;
import org.apache.kafka.metadata.placement.PartitionAssignment;
import org.apache.kafka.metadata.placement.PlacementSpec;
import org.apache.kafka.metadata.placement.StripedReplicaPlacer;
import org.apache.kafka.metadata.placement.TopicAssignment;
import org.apache.kafka.metadata.placement.UsableBroker;

import java.io.File;
import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.net.URL;
import java.net.URLClassLoader;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;

/**
 * Replica placement cases.
 *
 * <p>Both kinds take {"brokers": [{"id", "rack"|null, "fenced"?}], "requests": [{"partitions", "rf",
 * "fixed_start_index"?, "start_partition_id"?}], "seed": long, "random": "java"|"mock"} and answer
 * one entry per request, {"replicas": [[...], ...]} or {"error": {...}}. All requests share one
 * random generator, as one controller (or one JVM running AdminUtils) would.
 */
final class Placement {
    private static Class<?> adminUtils;
    private static Constructor<?> brokerMetadata;
    private static Method assign;

    private Placement() {
    }

    /** org.apache.kafka.admin.AdminUtils (kafka-server-common 3.9.2, loaded by its own class loader). */
    static JsonNode adminUtils(JsonNode request) throws Exception {
        loadAdminUtils();
        // AdminUtils draws from a static unseeded Random; seeding that instance makes it reproducible.
        Field rand = adminUtils.getDeclaredField("RAND");
        rand.setAccessible(true);
        ((Random) rand.get(null)).setSeed(request.path("seed").asLong(0));
        List<Object> brokers = new ArrayList<>();
        for (JsonNode b : request.get("brokers")) {
            brokers.add(brokerMetadata.newInstance(b.get("id").asInt(), rack(b)));
        }
        ArrayNode results = Driver.json().createArrayNode();
        for (JsonNode r : request.get("requests")) {
            int start = r.path("start_partition_id").asInt(-1);
            try {
                @SuppressWarnings("unchecked")
                Map<Integer, List<Integer>> placed = (Map<Integer, List<Integer>>) assign.invoke(null, brokers,
                    r.get("partitions").asInt(), r.get("rf").asInt(), r.path("fixed_start_index").asInt(-1), start);
                List<List<Integer>> ordered = new ArrayList<>();
                for (int p = Math.max(0, start); p < Math.max(0, start) + placed.size(); p++) {
                    ordered.add(placed.get(p));
                }
                results.add(replicas(ordered));
            } catch (Throwable e) {
                results.add(errorEntry(e));
            }
        }
        return results;
    }

    /** org.apache.kafka.metadata.placement.StripedReplicaPlacer (kafka-metadata 4.4.0). */
    static JsonNode striped(JsonNode request) {
        Random random = "mock".equals(request.path("random").asText("java"))
            ? new MockRandom(request.path("seed").asLong(17))
            : new Random(request.path("seed").asLong(0));
        StripedReplicaPlacer placer = new StripedReplicaPlacer(random);
        List<UsableBroker> brokers = new ArrayList<>();
        for (JsonNode b : request.get("brokers")) {
            brokers.add(new UsableBroker(b.get("id").asInt(), rack(b), b.path("fenced").asBoolean(false)));
        }
        ClusterDescriber cluster = new ClusterDescriber() {
            @Override
            public Iterator<UsableBroker> usableBrokers() {
                return brokers.iterator();
            }

            @Override
            public Uuid defaultDir(int brokerId) {
                return Uuid.ZERO_UUID;
            }
        };
        ArrayNode results = Driver.json().createArrayNode();
        for (JsonNode r : request.get("requests")) {
            try {
                PlacementSpec spec = new PlacementSpec(0, r.get("partitions").asInt(), (short) r.get("rf").asInt());
                TopicAssignment placed = placer.place(spec, cluster);
                List<List<Integer>> ordered = new ArrayList<>();
                for (PartitionAssignment a : placed.assignments()) {
                    ordered.add(a.replicas());
                }
                results.add(replicas(ordered));
            } catch (Throwable e) {
                results.add(errorEntry(e));
            }
        }
        return results;
    }

    private static Optional<String> rack(JsonNode broker) {
        JsonNode rack = broker.get("rack");
        return rack == null || rack.isNull() ? Optional.empty() : Optional.of(rack.asText());
    }

    private static ObjectNode replicas(List<List<Integer>> ordered) {
        ObjectNode entry = Driver.json().createObjectNode();
        ArrayNode all = entry.putArray("replicas");
        for (List<Integer> partition : ordered) {
            ArrayNode one = all.addArray();
            partition.forEach(one::add);
        }
        return entry;
    }

    private static ObjectNode errorEntry(Throwable e) {
        ObjectNode entry = Driver.json().createObjectNode();
        entry.set("error", Driver.error(e));
        return entry;
    }

    private static synchronized void loadAdminUtils() throws Exception {
        if (adminUtils != null) {
            return;
        }
        String path = System.getProperty("oracle.adminutils.jar");
        if (path == null) {
            File classes = new File(Driver.class.getProtectionDomain().getCodeSource().getLocation().toURI());
            path = new File(classes.getParentFile(), "adminutils/kafka-server-common-adminutils.jar").getPath();
        }
        URLClassLoader loader = new URLClassLoader(new URL[] {new File(path).toURI().toURL()},
            Driver.class.getClassLoader());
        adminUtils = Class.forName("org.apache.kafka.admin.AdminUtils", true, loader);
        Class<?> metadata = Class.forName("org.apache.kafka.admin.BrokerMetadata", true, loader);
        brokerMetadata = metadata.getConstructor(int.class, Optional.class);
        assign = adminUtils.getMethod("assignReplicasToBrokers", Collection.class, int.class, int.class, int.class,
            int.class);
    }

    /** Kafka's server-common test MockRandom (a 64-bit LCG), rewritten here: the test jar is not published for use. */
    static final class MockRandom extends Random {
        private long state;

        MockRandom(long state) {
            this.state = state;
        }

        @Override
        protected int next(int bits) {
            state = state * 2862933555777941757L + 3037000493L;
            return (int) (state >>> (64 - bits));
        }
    }
}
