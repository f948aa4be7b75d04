"""Durability for ``serve --data-dir DIR``: append-only segment files and their recovery.

Imported only when a data directory is given, so a memory-only emulator starts as fast as before.
The layout follows Kafka's log directory (``UnifiedLog``/``LogSegment``):

* ``<topic>-<partition>/`` per partition: ``partition.metadata`` (the topic id) and segment files
  named by the base offset of their first batch (``00000000000000000000.log``), holding the record
  batches exactly as Kafka's segments do (magic v2, as the producer sent them, offsets assigned);
* ``__cluster_metadata-0/``: the topics (names, ids, partitions, configs), records of our own format;
* ``__consumer_offsets-0/``: committed offsets and group metadata, records of our own format,
  compacted at start-up and when it outgrows its live state;
* ``log-start-offset-checkpoint``: the start offsets DeleteRecords raised, in Kafka's format.

``service.install`` loads everything into a fresh world and then writes every change as it
happens; :mod:`.segments` holds the file format, the flush policy and the recovery of torn tails.
"""
