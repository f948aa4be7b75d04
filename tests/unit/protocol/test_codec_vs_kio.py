"""Golden bytes: our codec seam and kio, an independent codec, agree byte for byte.

For every API and version the emulator can advertise, kio builds a fully
populated request and response; our seam must decode kio's bytes and re-encode
exactly the same bytes (requests are what the server decodes; responses are
what it encodes).
"""

from __future__ import annotations

import struct

import pytest

from rebalance_lab.coordinator.handlers import load_handlers
from rebalance_lab.protocol import codec
from tests.unit.protocol import kio_oracle

# Versions kio cannot express the way Kafka's JSON does (none known today); listed, not hidden.
_KIO_GAPS: set[tuple[int, int]] = set()


def _advertisable() -> list[tuple[int, int]]:
    cases = []
    for key in sorted(load_handlers()):
        bounds = codec.codec_version_range(key)
        assert bounds is not None
        cases += [(key, v) for v in range(bounds[0], bounds[1] + 1) if (key, v) not in _KIO_GAPS]
    return cases


CASES = _advertisable()


def _ids(case: tuple[int, int]) -> str:
    return f"{codec.API_NAMES[case[0]]}-v{case[1]}"


@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_a_request_kio_encodes_decodes_and_reencodes_to_the_same_bytes(case: tuple[int, int]) -> None:
    api_key, version = case
    body = kio_oracle.encode(kio_oracle.populate_case(kio_oracle.message_type(api_key, version, "request")))
    flexible = codec.is_flexible(api_key, version)
    header = struct.pack(">hhih", api_key, version, 77, 3) + b"kio" + (b"\x00" if flexible else b"")
    decoded = codec.decode_request(header + body)
    assert (decoded.api_key, decoded.api_version, decoded.correlation_id, decoded.client_id) == (
        api_key, version, 77, "kio",
    )
    assert codec.encode_body(decoded.body, version) == body


@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_a_response_our_codec_encodes_is_read_back_identically_by_kio(case: tuple[int, int]) -> None:
    api_key, version = case
    kio_type = kio_oracle.message_type(api_key, version, "response")
    body = kio_oracle.encode(kio_oracle.populate_case(kio_type))
    ours = codec.decode_body(codec.response_type(api_key), version, body)
    encoded = codec.encode_body(ours, version)
    assert encoded == body
    parsed, consumed = kio_oracle.decode(kio_type, encoded)
    assert consumed == len(encoded)
    assert kio_oracle.encode(parsed) == encoded


def test_every_advertised_api_is_cross_checked() -> None:
    covered = {key for key, _ in CASES}
    assert covered == set(load_handlers())
