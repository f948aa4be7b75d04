"""``AssignorError``, apart from :mod:`.common` so that :mod:`.common` can be compiled (issue 20).

mypyc does not compile a class that subclasses a built-in exception: this module stays Python, and
the compiled modules raise its class as they would any other.
"""

from __future__ import annotations


class AssignorError(RuntimeError):
    """An input on which Kafka's Java assignor throws; ``java_exception`` names the Java class."""

    def __init__(self, java_exception: str, message: str) -> None:
        super().__init__(f"{java_exception}: {message}")
        self.java_exception = java_exception
