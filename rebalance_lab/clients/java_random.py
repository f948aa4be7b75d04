"""Exact ports of the JDK random number generators Kafka's placement code draws from.

Replica placement is only reproducible if every draw matches Java bit for bit, so this
module ports ``java.util.Random`` (the 48-bit linear congruential generator of the JDK,
unchanged since Java 1.0), Kafka's test ``MockRandom`` and ``Collections.shuffle``
(spec/assignors.md §9.2 "Java random number generators"). Python's ``random`` module is a
different generator and must not be used where Java output is reproduced.
"""

from __future__ import annotations

from collections.abc import MutableSequence
from typing import Protocol, TypeVar

__all__ = ["JavaRandom", "JavaRandomSource", "MockRandom", "java_shuffle", "to_int32"]

_MASK_32 = (1 << 32) - 1
_MASK_48 = (1 << 48) - 1
_MASK_64 = (1 << 64) - 1
_INT_MAX = (1 << 31) - 1

# java.util.Random: seed scrambler, multiplier and addend (JDK Random.java).
_MULTIPLIER = 0x5DEECE66D
_ADDEND = 0xB

# server-common's test MockRandom (Kafka): a 64-bit LCG with these constants.
_MOCK_MULTIPLIER = 2862933555777941757
_MOCK_ADDEND = 3037000493

T = TypeVar("T")


def to_int32(value: int) -> int:
    """Wrap an integer to Java ``int`` (two's complement, 32 bits)."""
    value &= _MASK_32
    return value - (1 << 32) if value > _INT_MAX else value


class JavaRandomSource(Protocol):
    """What the placers need: Java's ``Random.nextInt(bound)`` contract."""

    def next_int(self, bound: int) -> int: ...


class _JavaRandomBase:
    """``nextInt`` variants shared by every ``java.util.Random`` subclass.

    Subclasses only override ``next(bits)``, exactly as ``MockRandom`` does in Java, so
    ``nextInt(bound)`` (with its rejection loop) behaves identically for both.
    """

    def next(self, bits: int) -> int:
        raise NotImplementedError

    def next_int_unbounded(self) -> int:
        """Java ``nextInt()``: ``next(32)``, a signed int32."""
        return self.next(32)

    def next_int(self, bound: int) -> int:
        """Java ``nextInt(int bound)``: uniform in ``[0, bound)``.

        Powers of two take the high bits; otherwise values from the incomplete last
        ``bound``-sized block of the 31-bit range are rejected and redrawn (JDK Random.java).
        """
        if bound <= 0:
            raise ValueError("bound must be positive")
        r = self.next(31)
        m = bound - 1
        if bound & m == 0:
            return (bound * r) >> 31
        u = r
        r = u % bound
        # Java tests `u - r + m < 0`, i.e. int overflow of the sum.
        while u - r + m > _INT_MAX:
            u = self.next(31)
            r = u % bound
        return r


class JavaRandom(_JavaRandomBase):
    """``java.util.Random(seed)``: 48-bit LCG, ``next(bits)`` returns the top bits as int32."""

    def __init__(self, seed: int) -> None:
        self._seed = 0
        self.set_seed(seed)

    def set_seed(self, seed: int) -> None:
        """Java ``setSeed(long)``: the seed is scrambled with the multiplier."""
        self._seed = (seed ^ _MULTIPLIER) & _MASK_48

    def next(self, bits: int) -> int:
        self._seed = (self._seed * _MULTIPLIER + _ADDEND) & _MASK_48
        return to_int32(self._seed >> (48 - bits))


class MockRandom(_JavaRandomBase):
    """Kafka's ``org.apache.kafka.server.util.MockRandom`` (server-common tests).

    ``StripedReplicaPlacerTest`` uses it (initial state 17); supporting it lets us replay
    those tests' expectations exactly.
    """

    def __init__(self, state: int = 17) -> None:
        self._state = state & _MASK_64

    def next(self, bits: int) -> int:
        self._state = (self._state * _MOCK_MULTIPLIER + _MOCK_ADDEND) & _MASK_64
        return to_int32(self._state >> (64 - bits))


def java_shuffle(items: MutableSequence[T], rnd: JavaRandomSource) -> None:
    """``Collections.shuffle(list, rnd)`` in place: swap(i - 1, nextInt(i)) for i = size..2."""
    for i in range(len(items), 1, -1):
        j = rnd.next_int(i)
        items[i - 1], items[j] = items[j], items[i - 1]
