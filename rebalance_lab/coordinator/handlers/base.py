"""What every API handler module receives and may return.

A handler module declares ``API_KEY`` and a ``handle(ctx, request)`` function
(STYLE.md principle 7). ``handle`` returns one of:

* a response body (built with :func:`rebalance_lab.protocol.codec.new_response`);
* a :class:`Parked` reply, resolved later by a sans-I/O component (JoinGroup and
  SyncGroup responses wait for the rest of the group);
* an awaitable of a response body (long-polling Fetch);
* a :class:`Stepped` reply: the work in steps, for a request whose work grows with its size.

Raising :class:`~rebalance_lab.protocol.errors.KafkaError` turns the whole
request into that error (see ``errors_response.py``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rebalance_lab.coordinator.world import BrokerNode, World


@dataclass
class Parked:
    """A reply that will be produced later, possibly by another request or a timer.

    The sans-I/O code calls :meth:`resolve` once; the server shell registers
    :attr:`on_resolve` to write the response on the connection that asked.
    """

    value: Any = None
    done: bool = False
    on_resolve: Callable[[Any], None] | None = field(default=None, repr=False)

    def resolve(self, response: Any) -> None:
        if self.done:
            return
        self.value = response
        self.done = True
        callback, self.on_resolve = self.on_resolve, None
        if callback is not None:
            # Dropped first: the shell's callback holds this reply (the arrival path's closure), a cycle that
            # left ~10 objects of every parked JoinGroup/SyncGroup to the cyclic collector (issue 22)
            callback(response)


@dataclass(frozen=True)
class Stepped:
    """A reply computed in steps, so one big request never holds the server's loop (issue 17, defect 1).

    ``steps`` yields between chunks of work and returns the response body. The server runs a few
    milliseconds of steps at a time and lets other connections in between (Kafka's request handler
    threads serve other requests meanwhile). Every state change happens inside a step, on the loop,
    so the world is consistent whenever another request looks at it.
    """

    steps: Generator[None, None, Any]

    def run(self) -> Any:
        """All steps at once (for callers that have no loop to yield to, and for small requests)."""
        while True:
            try:
                next(self.steps)
            except StopIteration as done:
                return done.value


# Not frozen: a frozen dataclass sets each of its ten fields through object.__setattr__, ~5 us a request (as much
# as a heartbeat's whole decoding); handlers only read a context. Slotted: one is made per request.
@dataclass(slots=True)
class RequestContext:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str
    client_host: str  # as Java's InetAddress.toString(): "/127.0.0.1"
    connection_id: int
    broker: BrokerNode
    world: World
    # The authenticated principal of the connection (Kafka's KafkaPrincipal as "User:NAME"). A PLAINTEXT or
    # SSL-without-client-certificate listener authenticates everyone as ANONYMOUS, as Kafka does.
    principal: str = "User:ANONYMOUS"
    listener: str = "PLAINTEXT"  # the security protocol of the listener the request came in on


HandlerResult = Any | Parked | Stepped | Awaitable[Any]
Handler = Callable[[RequestContext, Any], HandlerResult]
