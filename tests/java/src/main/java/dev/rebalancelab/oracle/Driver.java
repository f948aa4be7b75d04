package dev.rebalancelab.oracle;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;

/**
 * JSON-lines oracle: one case per input line, one answer per output line, in order.
 *
 * <p>Every answer echoes the case's {@code "id"} and holds either {@code "result"} or
 * {@code "error": {"type", "message"}} (the Java exception Kafka's code threw). The process is
 * long-lived so that thousands of cases cost one JVM start. Kinds: {@code murmur2},
 * {@code partition}, {@code roundrobin_partitioner}, {@code hashmap_order}, {@code adminutils},
 * {@code striped}, {@code assign}, {@code assign_timed}, {@code server_assign},
 * {@code server_assign_timed}, {@code timeline_order}. The case formats are documented in tests/java_oracle.py.
 */
public final class Driver {
    private static final ObjectMapper JSON = new ObjectMapper();

    private Driver() {
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        BufferedWriter out = new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8), 1 << 16);
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            out.write(JSON.writeValueAsString(answer(line)));
            out.write('\n');
            // Flush only when the caller has nothing more queued: batches stream, single calls don't wait.
            if (!in.ready()) {
                out.flush();
            }
        }
        out.flush();
    }

    static ObjectNode answer(String line) {
        ObjectNode reply = JSON.createObjectNode();
        JsonNode request;
        try {
            request = JSON.readTree(line);
        } catch (Exception e) {
            reply.set("error", error(e));
            return reply;
        }
        reply.set("id", request.get("id"));
        try {
            reply.set("result", dispatch(request));
        } catch (Throwable e) {
            reply.set("error", error(e));
        }
        return reply;
    }

    private static JsonNode dispatch(JsonNode request) throws Exception {
        String kind = request.path("kind").asText();
        switch (kind) {
            case "murmur2":
                return Partitioning.murmur2(request);
            case "partition":
                return Partitioning.partitionForKey(request);
            case "roundrobin_partitioner":
                return Partitioning.roundRobin(request);
            case "hashmap_order":
                return hashMapOrder(request);
            case "adminutils":
                return Placement.adminUtils(request);
            case "striped":
                return Placement.striped(request);
            case "assign":
                return Assign.assign(request);
            case "assign_timed":
                return Assign.assignTimed(request);
            case "server_assign":
                return ServerAssign.assign(request);
            case "server_assign_timed":
                return ServerAssign.assignTimed(request);
            case "timeline_order":
                return ServerAssign.timelineOrder(request);
            case "ping":
                return JSON.getNodeFactory().textNode("pong");
            default:
                throw new IllegalArgumentException("unknown kind: " + kind);
        }
    }

    /** Iteration order of a default HashMap after put(key) in the given order. */
    private static JsonNode hashMapOrder(JsonNode request) {
        Map<String, Boolean> map = new HashMap<>();
        for (JsonNode key : request.get("keys")) {
            map.put(key.asText(), Boolean.TRUE);
        }
        ArrayNode result = JSON.createArrayNode();
        map.keySet().forEach(result::add);
        return result;
    }

    static ObjectNode error(Throwable e) {
        Throwable cause = e;
        // Reflection wraps AdminUtils' exceptions; report the one Kafka threw.
        while (cause instanceof java.lang.reflect.InvocationTargetException && cause.getCause() != null) {
            cause = cause.getCause();
        }
        ObjectNode node = JSON.createObjectNode();
        node.put("type", cause.getClass().getSimpleName());
        node.put("message", cause.getMessage());
        return node;
    }

    static ObjectMapper json() {
        return JSON;
    }
}
