"""Java ``HashMap`` order and ``String.hashCode``, which live in :mod:`rebalance_lab.protocol.java_hashmap`.

Moved down to ``protocol/`` with the assignors' value types (the consumer protocol's
(de)serialisers order topics as Java's HashMap does); this name stays for the assignors.
"""

from __future__ import annotations

from rebalance_lab.protocol.java_hashmap import (
    JavaHashMap,
    UnsupportedJavaOrder,
    java_hash_order,
    java_str_key,
    native_order_is_java,
    string_hash,
    string_hash_order,
    table_size_for,
    to_int32,
    topic_partition_hash,
)

__all__ = [
    "JavaHashMap", "UnsupportedJavaOrder", "java_hash_order", "java_str_key", "native_order_is_java", "string_hash",
    "string_hash_order", "table_size_for", "to_int32", "topic_partition_hash",
]
