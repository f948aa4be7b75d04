"""A coordinator value that is a NamedTuple (ProtocolEntry, a frozen dataclass before issue 22's cuts) is stored as
its class and read back as it, and a data directory written while it was a dataclass reads the same."""

from __future__ import annotations

from rebalance_lab.coordinator.classic.messages import ProtocolEntry
from rebalance_lab.storage import values

# What the dataclass ProtocolEntry was written as (values.encode of that release)
_AS_A_DATACLASS = {"$c": "rebalance_lab.coordinator.classic.messages:ProtocolEntry",
                   "f": {"name": "range", "metadata": {"$b": "eA=="}}}


def test_a_named_tuple_value_is_written_as_a_dataclass_was_and_read_back_as_its_class() -> None:
    entry = ProtocolEntry("range", b"x")
    assert values.encode(entry) == _AS_A_DATACLASS
    read = values.loads(values.dumps((entry,)))
    assert read == (entry,) and type(read[0]) is ProtocolEntry


def test_a_value_written_while_protocol_entry_was_a_dataclass_reads_as_a_protocol_entry() -> None:
    read = values.decode(_AS_A_DATACLASS)
    assert type(read) is ProtocolEntry and read.name == "range" and read.metadata == b"x"
