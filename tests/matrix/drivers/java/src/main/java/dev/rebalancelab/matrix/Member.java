package dev.rebalancelab.matrix;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.RangeAssignor;
import org.apache.kafka.clients.consumer.RoundRobinAssignor;
import org.apache.kafka.clients.consumer.StickyAssignor;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * Matrix driver for the Java KafkaConsumer: one consumer-group member, classic protocol or, with
 * {@code --group-protocol consumer}, KIP-848 (the broker assigns with the server assignor named by
 * {@code --assignor}, uniform or range, and owns the session timeout and heartbeat interval).
 *
 * <p>It joins the group, prints what it is assigned and every record it consumes to stdout as JSON
 * lines, and leaves the group cleanly ({@code close()} sends LeaveGroup) when a line "close" arrives on
 * stdin or stdin ends. A crash is the test SIGKILLing this JVM.
 *
 * <pre>
 * java -cp ... dev.rebalancelab.matrix.Member --bootstrap HOST:PORT --topic T --group G --member a \
 *     --session-timeout-ms 6000 --heartbeat-ms 500 [--assignor cooperative-sticky] [--group-protocol classic]
 * </pre>
 */
public final class Member {
    private Member() {
    }

    private static synchronized void emit(String json) {
        System.out.println(json);
        System.out.flush();
    }

    private static String partitions(Collection<TopicPartition> tps) {
        List<Integer> ps = new ArrayList<>();
        for (TopicPartition tp : tps) {
            ps.add(tp.partition());
        }
        ps.sort(null);
        return ps.toString().replace(" ", "");
    }

    private static String assignorClass(String name) {
        switch (name) {
            case "cooperative-sticky":
                return CooperativeStickyAssignor.class.getName();
            case "sticky":
                return StickyAssignor.class.getName();
            case "range":
                return RangeAssignor.class.getName();
            case "roundrobin":
                return RoundRobinAssignor.class.getName();
            default:
                throw new IllegalArgumentException("unknown assignor " + name);
        }
    }

    /** The version kafka-clients was built as (the resource its own AppInfoParser reads). */
    private static String kafkaVersion() throws java.io.IOException {
        Properties props = new Properties();
        try (java.io.InputStream in = KafkaConsumer.class.getResourceAsStream("/kafka/kafka-version.properties")) {
            if (in != null) {
                props.load(in);
            }
        }
        return props.getProperty("version", "unknown");
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> opts = new HashMap<>();
        opts.put("assignor", "cooperative-sticky");
        opts.put("session-timeout-ms", "6000");
        opts.put("heartbeat-ms", "500");
        for (int i = 0; i + 1 < args.length; i += 2) {
            opts.put(args[i].replaceFirst("^--", ""), args[i + 1]);
        }
        String topic = opts.get("topic");
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, opts.get("bootstrap"));
        props.put(ConsumerConfig.GROUP_ID_CONFIG, opts.get("group"));
        props.put(ConsumerConfig.CLIENT_ID_CONFIG, "matrix-java-" + opts.get("member"));
        String protocol = opts.getOrDefault("group-protocol", "classic");
        props.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol);
        if (protocol.equals("consumer")) {
            // KIP-848: the client may not set the assignment strategy, session timeout or heartbeat
            // interval (ConsumerConfig rejects them); it only names the broker's assignor.
            props.put(ConsumerConfig.GROUP_REMOTE_ASSIGNOR_CONFIG, opts.get("assignor"));
        } else {
            props.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, assignorClass(opts.get("assignor")));
            props.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, opts.get("session-timeout-ms"));
            props.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, opts.get("heartbeat-ms"));
        }
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, "500");
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());

        KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props);
        emit("{\"event\":\"started\",\"client\":\"java\",\"version\":\"" + kafkaVersion()
                + "\",\"assignor\":\"" + opts.get("assignor") + "\",\"group_protocol\":\"" + protocol + "\"}");

        AtomicBoolean closing = new AtomicBoolean(false);
        Thread stdin = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                String line;
                while ((line = in.readLine()) != null && !line.trim().equals("close")) {
                    // wait for "close" or end of input
                }
            } catch (Exception e) {
                // treat a broken stdin as "close"
            }
            closing.set(true);
            consumer.wakeup();
        }, "stdin");
        stdin.setDaemon(true);
        stdin.start();

        consumer.subscribe(List.of(topic), new ConsumerRebalanceListener() {
            @Override
            public void onPartitionsRevoked(Collection<TopicPartition> tps) {
                emit("{\"event\":\"revoked\",\"partitions\":" + partitions(tps) + "}");
            }

            @Override
            public void onPartitionsAssigned(Collection<TopicPartition> tps) {
                emit("{\"event\":\"assigned\",\"partitions\":" + partitions(tps) + "}");
            }

            @Override
            public void onPartitionsLost(Collection<TopicPartition> tps) {
                emit("{\"event\":\"lost\",\"partitions\":" + partitions(tps) + "}");
            }
        });
        try {
            while (!closing.get()) {
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(200));
                if (records.isEmpty()) {
                    continue;
                }
                StringBuilder sb = new StringBuilder("{\"event\":\"records\",\"records\":[");
                boolean first = true;
                for (ConsumerRecord<byte[], byte[]> r : records) {
                    sb.append(first ? "" : ",").append('[').append(r.partition()).append(',').append(r.offset())
                            .append(']');
                    first = false;
                }
                emit(sb.append("]}").toString());
            }
        } catch (WakeupException e) {
            // close requested
        } finally {
            consumer.close(); // commits (auto-commit) and sends LeaveGroup
        }
        emit("{\"event\":\"closed\"}");
    }
}
