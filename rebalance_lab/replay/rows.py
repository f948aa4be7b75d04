"""Rows of a derived table kept as tuples in the table's column order, read as row dicts.

``partition_moves`` has a row for every partition that changed owner: about 300 per group
in the 1M-event benchmark, more than all the other tables together. An 11-key dict is a
large allocation (past the small-object allocator) where a tuple of 11 is a small one, and
Arrow converts tuples to a struct array faster than dicts
(:func:`rebalance_lab.replay.tables.to_arrow`). Readers still see row dicts: iterating,
indexing, ``==`` and ``repr`` behave as for the list of dicts the tuples stand for.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, overload


class TupleRows(Sequence[dict[str, Any]]):
    """Rows as tuples of the values of ``columns``, in that order."""

    __slots__ = ("columns", "tuples")

    def __init__(self, columns: Sequence[str], tuples: list[tuple[Any, ...]] | None = None) -> None:
        self.columns = tuple(columns)
        self.tuples: list[tuple[Any, ...]] = tuples if tuples is not None else []

    def empty(self) -> TupleRows:
        return TupleRows(self.columns)

    def extend(self, rows: Iterable[dict[str, Any]]) -> None:
        """Append ``rows``: another :class:`TupleRows` of the same columns, or row dicts."""
        if isinstance(rows, TupleRows):
            if rows.columns != self.columns:
                raise ValueError(f"columns differ: {rows.columns} != {self.columns}")
            self.tuples.extend(rows.tuples)
            return
        columns = self.columns
        self.tuples.extend(tuple(row.get(name) for name in columns) for row in rows)

    def __len__(self) -> int:
        return len(self.tuples)

    @overload
    def __getitem__(self, index: int) -> dict[str, Any]: ...

    @overload
    def __getitem__(self, index: slice) -> list[dict[str, Any]]: ...

    def __getitem__(self, index: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if isinstance(index, slice):
            return [dict(zip(self.columns, values, strict=True)) for values in self.tuples[index]]
        return dict(zip(self.columns, self.tuples[index], strict=True))

    def __iter__(self) -> Iterator[dict[str, Any]]:
        columns = self.columns
        for values in self.tuples:
            yield dict(zip(columns, values, strict=True))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, TupleRows):
            return self.columns == other.columns and self.tuples == other.tuples
        if isinstance(other, Sequence):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable, like the list it stands for

    def __repr__(self) -> str:
        return repr(list(self))
