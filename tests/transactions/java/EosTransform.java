// Consume-transform-produce with exactly-once, the Java client (kafka-clients 4.4.0), run by
// tests/transactions/test_eos_clients.py with Java's source launcher:
//   java -cp <kafka-clients classpath> EosTransform.java BOOTSTRAP SOURCE SINK GROUP TXN_ID RECORDS [GROUP_PROTOCOL]
// One transaction of 5 "aborted-N" records is aborted first; then each batch of input records is
// transformed ("in-" -> "out-") and committed with the consumer's offsets in the same transaction.
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class EosTransform {
    public static void main(String[] args) {
        String bootstrap = args[0], source = args[1], sink = args[2], group = args[3], txnId = args[4];
        int records = Integer.parseInt(args[5]);
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("transactional.id", txnId);
        Properties c = new Properties();
        c.put("bootstrap.servers", bootstrap);
        c.put("group.id", group);
        c.put("enable.auto.commit", "false");
        c.put("auto.offset.reset", "earliest");
        c.put("isolation.level", "read_committed");
        if (args.length > 6) c.put("group.protocol", args[6]);  // "consumer": a KIP-848 member's epoch is checked
        try (KafkaProducer<byte[], byte[]> producer =
                 new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer());
             KafkaConsumer<byte[], byte[]> consumer =
                 new KafkaConsumer<>(c, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            producer.initTransactions();
            producer.beginTransaction();
            for (int i = 0; i < 5; i++) {
                producer.send(new ProducerRecord<>(sink, "x".getBytes(), ("aborted-" + i).getBytes()));
            }
            producer.flush();
            producer.abortTransaction();
            consumer.subscribe(List.of(source));
            int done = 0;
            long deadline = System.currentTimeMillis() + 60_000;
            while (done < records && System.currentTimeMillis() < deadline) {
                ConsumerRecords<byte[], byte[]> batch = consumer.poll(Duration.ofMillis(500));
                if (batch.isEmpty()) continue;
                producer.beginTransaction();
                Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                for (ConsumerRecord<byte[], byte[]> r : batch) {
                    String value = new String(r.value()).replace("in-", "out-");
                    producer.send(new ProducerRecord<>(sink, r.key(), value.getBytes()));
                    offsets.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                    done++;
                }
                producer.sendOffsetsToTransaction(offsets, consumer.groupMetadata());
                producer.commitTransaction();
            }
            System.out.println("transformed " + done);
        }
    }
}
