"""The JoinGroup handler reads each distinct protocol list once: members sending the same bytes share one tuple of
values (issue 22), while a different list, the other wire form and the generic codec's bodies get their own."""

from __future__ import annotations

from typing import Any

from rebalance_lab.config import EmulatorConfig, GroupConfig
from rebalance_lab.coordinator.classic.messages import ProtocolEntry
from rebalance_lab.coordinator.clock import ManualClock
from rebalance_lab.coordinator.cluster import BrokerInfo
from rebalance_lab.coordinator.handlers import join_group
from rebalance_lab.coordinator.handlers.base import RequestContext
from rebalance_lab.coordinator.world import World
from rebalance_lab.protocol import codec

_PROTOCOL = codec.data_class(codec.request_type(join_group.API_KEY), "JoinGroupRequestProtocol")


def _body(version: int, member_id: str, protocols: list[tuple[str, bytes]], generic: bool = False) -> Any:
    request = codec.new_request(join_group.API_KEY, version, group_id="g", session_timeout_ms=10_000,
                                rebalance_timeout_ms=20_000, member_id=member_id, group_instance_id=None,
                                protocol_type="consumer", reason=None,
                                protocols=[_PROTOCOL(name=n, metadata=m) for n, m in protocols])
    payload = codec.encode_request(request, 7, "c")[4:]
    decoded = codec.decode_request_generic(payload) if generic else codec.decode_request(payload)
    return decoded.body


def _input(version: int, body: Any) -> Any:
    world = World(EmulatorConfig(port=0, group=GroupConfig(join_race="separate")),
                  [BrokerInfo(0, "127.0.0.1", 9092, None)], ManualClock(0))
    ctx = RequestContext(join_group.API_KEY, version, 7, "c", "/127.0.0.1", 1, world.nodes[0], world)
    return join_group.to_input(ctx, body)


def test_members_sending_the_same_protocol_bytes_share_one_tuple_of_values() -> None:
    offered = [("range", b"\x00\x01sub"), ("roundrobin", b"\x00\x01sub")]
    for version in (5, 9):
        first = _input(version, _body(version, "m1", offered)).protocols
        second = _input(version, _body(version, "m2", offered)).protocols
        assert first == (ProtocolEntry("range", b"\x00\x01sub"), ProtocolEntry("roundrobin", b"\x00\x01sub"))
        assert second is first


def test_another_list_another_form_and_generic_bodies_get_their_own_values() -> None:
    offered = [("range", b"\x00\x01sub")]
    classic = _input(5, _body(5, "m", offered)).protocols
    compact = _input(9, _body(9, "m", offered)).protocols
    assert compact == classic and compact is not classic  # the same list, read from the other form's bytes
    changed = _input(5, _body(5, "m", [("range", b"\x00\x01other")])).protocols
    assert changed == (ProtocolEntry("range", b"\x00\x01other"),)
    generic = _input(5, _body(5, "m", offered, generic=True)).protocols
    assert generic == classic and generic is not classic  # no key: made from the body as before


def test_the_fast_codec_keys_a_join_by_its_protocol_array_bytes() -> None:
    body = _body(9, "m", [("range", b"x")])
    assert body.protocols_key == b"\x06range\x02x\x00"  # compact name, compact bytes, no tagged fields
    assert _body(5, "m", [("range", b"x")]).protocols_key == b"\x00\x05range\x00\x00\x00\x01x"
