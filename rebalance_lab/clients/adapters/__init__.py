"""Our Java-identical assignors as plug-ins for the Python Kafka clients.

* :mod:`.kafka_python` - kafka-python 3.x (``range``, ``roundrobin``, ``sticky``,
  ``cooperative-sticky``): ``kafka_python_assignor(name)`` and ``KafkaPython*Assignor``.
* :mod:`.aiokafka` - aiokafka (``range``, ``roundrobin``, ``sticky``; eager only):
  ``aiokafka_assignor(name)`` and ``Aiokafka*Assignor``.

The client libraries are imported only when one of those names is first used, so
``rebalance_lab`` never needs them installed.
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "kafka_python_assignor": "kafka_python",
    "KafkaPythonAssignor": "kafka_python",
    "KafkaPythonRangeAssignor": "kafka_python",
    "KafkaPythonRoundRobinAssignor": "kafka_python",
    "KafkaPythonStickyAssignor": "kafka_python",
    "KafkaPythonCooperativeStickyAssignor": "kafka_python",
    "aiokafka_assignor": "aiokafka",
    "AiokafkaAssignor": "aiokafka",
    "AiokafkaRangeAssignor": "aiokafka",
    "AiokafkaRoundRobinAssignor": "aiokafka",
    "AiokafkaStickyAssignor": "aiokafka",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
