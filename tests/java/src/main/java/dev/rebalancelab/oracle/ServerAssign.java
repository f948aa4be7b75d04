package dev.rebalancelab.oracle;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.utils.internals.LogContext;
import org.apache.kafka.coordinator.common.runtime.CoordinatorMetadataImage;
import org.apache.kafka.coordinator.group.api.assignor.ConsumerGroupPartitionAssignor;
import org.apache.kafka.coordinator.group.api.assignor.GroupAssignment;
import org.apache.kafka.coordinator.group.api.assignor.MemberAssignment;
import org.apache.kafka.coordinator.group.api.assignor.SubscribedTopicDescriber;
import org.apache.kafka.coordinator.group.api.assignor.SubscriptionType;
import org.apache.kafka.coordinator.group.assignor.RangeAssignor;
import org.apache.kafka.coordinator.group.assignor.UniformAssignor;
import org.apache.kafka.coordinator.group.generated.ConsumerGroupTargetAssignmentMemberValue;
import org.apache.kafka.coordinator.group.modern.Assignment;
import org.apache.kafka.coordinator.group.modern.GroupSpecImpl;
import org.apache.kafka.coordinator.group.modern.MemberSubscriptionAndAssignmentImpl;
import org.apache.kafka.coordinator.group.modern.TopicIds;
import org.apache.kafka.timeline.SnapshotRegistry;
import org.apache.kafka.timeline.TimelineHashMap;

import java.util.AbstractSet;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * The KIP-848 server-side assignors of kafka-group-coordinator 4.4.0, fed as the broker feeds them.
 *
 * <pre>
 * {"kind": "server_assign", "assignor": "uniform" | "range", "subscription_type": "HOMOGENEOUS" | "HETEROGENEOUS",
 *  "topics": [{"id": kafka uuid string, "name", "partitions": n, "racks": [[rack, ...] per partition] | absent}],
 *  "members": [{"id", "instance_id": str|null, "rack": str|null,
 *               "topics": [names, in the request's order; unknown names allowed],
 *               "unknown_topic_ids": [kafka uuid strings] | absent,
 *               "assignment": [[topic id, [partitions in record order]], ...]}]}
 * -> {member id: [[topic id, [partitions]], ...]} in the order of the record the broker would write
 *    (the output map's and sets' iteration order); members the assignor left out are absent.
 * </pre>
 *
 * Members are put into a fresh HashMap in the given order, as TargetAssignmentBuilder.build does; a
 * member's subscription is Kafka's own TopicIds over {@code new HashSet<>(names)} (what ConsumerGroupMember
 * keeps), and its current target is {@code Assignment.fromRecord} of the record, as the coordinator
 * replays it. {@code unknown_topic_ids} are ids the metadata lacks, iterated after the names' ids: TopicIds
 * never yields those, so only this oracle can reach the assignors' missing-topic errors.
 *
 * <p>{"kind": "timeline_order", "ops": [["put" | "remove", key], ...]} -> the keys of a
 * {@code TimelineHashMap<String, ?>(registry, 0)} (a consumer group's member map) in iteration order.
 */
final class ServerAssign {
    private ServerAssign() {
    }

    static JsonNode assign(JsonNode request) {
        return toJson(run(request, 1, null));
    }

    /**
     * {"kind": "server_assign_timed", ...the fields of "server_assign"..., "repeat": n}
     * -> {"nanos": [n times of {@code assignor.assign(groupSpec, describer)}], "members": member count of the last
     * answer}. The group spec is built once (the assignors do not change it); JSON and building are not timed.
     */
    static JsonNode assignTimed(JsonNode request) {
        ArrayNode nanos = Driver.json().createArrayNode();
        GroupAssignment last = run(request, request.path("repeat").asInt(1), nanos);
        ObjectNode out = Driver.json().createObjectNode();
        out.set("nanos", nanos);
        out.put("members", last.members().size());
        return out;
    }

    private static GroupAssignment run(JsonNode request, int repeat, ArrayNode nanos) {
        Map<Uuid, JsonNode> topicsById = new HashMap<>();
        Map<String, Uuid> idsByName = new HashMap<>();
        for (JsonNode topic : request.get("topics")) {
            Uuid id = Uuid.fromString(topic.get("id").asText());
            topicsById.put(id, topic);
            idsByName.put(topic.get("name").asText(), id);
        }
        TopicIds.TopicResolver resolver = new Resolver(topicsById, idsByName);
        Map<String, MemberSubscriptionAndAssignmentImpl> memberSpecs = new HashMap<>();
        Map<Uuid, Map<Integer, String>> inverted = new HashMap<>();
        for (JsonNode member : request.get("members")) {
            String memberId = member.get("id").asText();
            Assignment target = Assignment.fromRecord(record(member.get("assignment")));
            target.partitions().forEach((topicId, partitions) -> partitions.forEach(
                p -> inverted.computeIfAbsent(topicId, k -> new HashMap<>()).put(p, memberId)));
            memberSpecs.put(memberId, new MemberSubscriptionAndAssignmentImpl(
                Optional.ofNullable(text(member, "rack")),
                Optional.ofNullable(text(member, "instance_id")),
                subscription(member, resolver),
                target));
        }
        SubscriptionType type = SubscriptionType.valueOf(request.get("subscription_type").asText());
        GroupSpecImpl spec = new GroupSpecImpl(Collections.unmodifiableMap(memberSpecs), type, inverted);
        Describer describer = new Describer(topicsById);
        GroupAssignment result = null;
        for (int i = 0; i < repeat; i++) {
            ConsumerGroupPartitionAssignor assignor = newAssignor(request.get("assignor").asText());
            long start = System.nanoTime();
            result = assignor.assign(spec, describer);
            if (nanos != null) {
                nanos.add(System.nanoTime() - start);
            }
        }
        return result;
    }

    static JsonNode timelineOrder(JsonNode request) {
        TimelineHashMap<String, Boolean> map = new TimelineHashMap<>(new SnapshotRegistry(new LogContext()), 0);
        for (JsonNode op : request.get("ops")) {
            String key = op.get(1).asText();
            if ("put".equals(op.get(0).asText())) {
                map.put(key, Boolean.TRUE);
            } else {
                map.remove(key);
            }
        }
        ArrayNode keys = Driver.json().createArrayNode();
        map.keySet().forEach(keys::add);
        return keys;
    }

    private static ConsumerGroupPartitionAssignor newAssignor(String name) {
        switch (name) {
            case "uniform":
                return new UniformAssignor();
            case "range":
                return new RangeAssignor();
            default:
                throw new IllegalArgumentException("unknown server assignor: " + name);
        }
    }

    private static ConsumerGroupTargetAssignmentMemberValue record(JsonNode assignment) {
        List<ConsumerGroupTargetAssignmentMemberValue.TopicPartition> topics = new ArrayList<>();
        for (JsonNode entry : assignment) {
            List<Integer> partitions = new ArrayList<>();
            entry.get(1).forEach(p -> partitions.add(p.asInt()));
            topics.add(new ConsumerGroupTargetAssignmentMemberValue.TopicPartition()
                .setTopicId(Uuid.fromString(entry.get(0).asText()))
                .setPartitions(partitions));
        }
        return new ConsumerGroupTargetAssignmentMemberValue().setTopicPartitions(topics);
    }

    private static Set<Uuid> subscription(JsonNode member, TopicIds.TopicResolver resolver) {
        List<String> names = new ArrayList<>();
        member.get("topics").forEach(n -> names.add(n.asText()));
        TopicIds topicIds = new TopicIds(new HashSet<>(names), resolver);
        List<Uuid> unknown = new ArrayList<>();
        member.path("unknown_topic_ids").forEach(id -> unknown.add(Uuid.fromString(id.asText())));
        return unknown.isEmpty() ? topicIds : new WithUnknown(topicIds, unknown);
    }

    private static String text(JsonNode node, String field) {
        JsonNode value = node.get(field);
        return value == null || value.isNull() ? null : value.asText();
    }

    private static JsonNode toJson(GroupAssignment result) {
        ObjectNode out = Driver.json().createObjectNode();
        for (Map.Entry<String, MemberAssignment> member : result.members().entrySet()) {
            ArrayNode topics = out.putArray(member.getKey());
            for (Map.Entry<Uuid, Set<Integer>> topic : member.getValue().partitions().entrySet()) {
                ArrayNode entry = topics.addArray();
                entry.add(topic.getKey().toString());
                ArrayNode partitions = entry.addArray();
                new ArrayList<>(topic.getValue()).forEach(partitions::add);
            }
        }
        return out;
    }

    /** TopicIds' resolver over the case's topics (the broker's reads the metadata image). */
    private record Resolver(Map<Uuid, JsonNode> topicsById, Map<String, Uuid> idsByName)
        implements TopicIds.TopicResolver {
        @Override
        public CoordinatorMetadataImage image() {
            return CoordinatorMetadataImage.EMPTY;
        }

        @Override
        public String name(Uuid id) {
            JsonNode topic = topicsById.get(id);
            return topic == null ? null : topic.get("name").asText();
        }

        @Override
        public Uuid id(String name) {
            return idsByName.get(name);
        }

        @Override
        public void clear() {
        }
    }

    /** SubscribedTopicDescriberImpl's answers: -1 partitions for a missing topic, the partition's racks. */
    private record Describer(Map<Uuid, JsonNode> topicsById) implements SubscribedTopicDescriber {
        @Override
        public int numPartitions(Uuid topicId) {
            JsonNode topic = topicsById.get(topicId);
            return topic == null ? -1 : topic.get("partitions").asInt();
        }

        @Override
        public Set<String> racksForPartition(Uuid topicId, int partition) {
            JsonNode topic = topicsById.get(topicId);
            JsonNode racks = topic == null ? null : topic.path("racks").get(partition);
            Set<String> result = new HashSet<>();
            if (racks != null) {
                racks.forEach(r -> result.add(r.asText()));
            }
            return result;
        }
    }

    /** A subscription holding ids the metadata lacks, after the resolvable ones. */
    private static final class WithUnknown extends AbstractSet<Uuid> {
        private final TopicIds known;
        private final List<Uuid> unknown;

        WithUnknown(TopicIds known, List<Uuid> unknown) {
            this.known = known;
            this.unknown = unknown;
        }

        @Override
        public Iterator<Uuid> iterator() {
            List<Uuid> all = new ArrayList<>();
            known.forEach(all::add);
            all.addAll(unknown);
            return all.iterator();
        }

        @Override
        public int size() {
            return known.size() + unknown.size();
        }

        @Override
        public boolean contains(Object o) {
            return known.contains(o) || unknown.contains(o);
        }
    }
}
