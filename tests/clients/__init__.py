"""Real Kafka clients (aiokafka, kafka-python, confluent-kafka) in consumer groups, against any target."""
