"""The shell's frame buffer: frames cut out of arbitrary chunks, bad sizes and cut-short frames named."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rebalance_lab.coordinator.framing import FrameBuffer, FrameError


def _frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


@given(st.lists(st.binary(max_size=40), max_size=6), st.lists(st.integers(1, 30), min_size=1))
def test_frames_come_out_whole_and_in_order_however_the_bytes_are_chunked(
    payloads: list[bytes], cuts: list[int]
) -> None:
    stream = b"".join(_frame(p) for p in payloads)
    frames, got, pos, i = FrameBuffer(100), [], 0, 0
    while pos < len(stream):
        step = cuts[i % len(cuts)]
        frames.feed(stream[pos : pos + step])
        pos, i = pos + step, i + 1
        while (payload := frames.next_frame()) is not None:
            got.append(payload)
    frames.check_end()
    assert got == payloads


def test_a_frame_larger_than_the_limit_is_refused_before_its_body_arrives() -> None:
    frames = FrameBuffer(1024)
    frames.feed(struct.pack(">i", 1025))
    with pytest.raises(FrameError, match=r"outside 0..1024 \(socket.request.max.bytes\)"):
        frames.next_frame()


def test_a_negative_size_is_refused() -> None:
    frames = FrameBuffer(1024)
    frames.feed(struct.pack(">i", -5))
    with pytest.raises(FrameError, match="frame of -5 bytes"):
        frames.next_frame()


@pytest.mark.parametrize("tail, message", [
    (b"\x00\x00", r"truncated frame size \(2 of 4 bytes\)"),
    (struct.pack(">i", 10) + b"abc", "truncated frame: got 3 of 10 bytes"),
])
def test_a_stream_that_ends_inside_a_frame_names_what_was_cut(tail: bytes, message: str) -> None:
    frames = FrameBuffer(1024)
    frames.feed(_frame(b"whole") + tail)
    assert frames.next_frame() == b"whole"
    assert frames.next_frame() is None
    with pytest.raises(FrameError, match=message):
        frames.check_end()
