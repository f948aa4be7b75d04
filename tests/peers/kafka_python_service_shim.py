"""Stands in for kafka-python's ``test/service.py``, which its 3.0.12 sdist does not ship.

The sdist's ``test/integration/fixtures.py`` imports ``ExternalService`` and ``SpawnedService`` from it.
With ``KAFKA_URI`` set the fixtures only build an ``ExternalService`` (a broker already running: the
emulator); spawning a broker is what this harness never asks for, so ``SpawnedService`` refuses.
"""


class ExternalService:
    """A broker that runs elsewhere: nothing to start, stop or dump."""

    def __init__(self, host: str, port: int) -> None:
        self.host = host
        self.port = port

    def dump_logs(self) -> None:
        return None

    def stop(self) -> None:
        return None


class SpawnedService:
    """Spawning Kafka or ZooKeeper is outside this harness: the suite must target the emulator."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        raise RuntimeError("the peer harness runs kafka-python's suite against the emulator only (KAFKA_URI)")
