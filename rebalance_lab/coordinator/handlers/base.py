"""What every API handler module receives and may return.

A handler module declares ``API_KEY`` and a ``handle(ctx, request)`` function
(STYLE.md principle 7). ``handle`` returns one of:

* a response body (built with :func:`rebalance_lab.protocol.codec.new_response`);
* a :class:`Parked` reply, resolved later by a sans-I/O component (JoinGroup and
  SyncGroup responses wait for the rest of the group);
* an awaitable of a response body (long-polling Fetch).

Raising :class:`~rebalance_lab.protocol.errors.KafkaError` turns the whole
request into that error (see ``errors_response.py``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
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
        if self.on_resolve is not None:
            self.on_resolve(response)


@dataclass(frozen=True)
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


HandlerResult = Any | Parked | Awaitable[Any]
Handler = Callable[[RequestContext, Any], HandlerResult]
