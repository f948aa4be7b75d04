"""What a default Kafka broker reports in DescribeConfigs, as data (one JSON file per flavor).

Each file was taken from a real broker's DescribeConfigs v4 answer (include_synonyms, a topic
without overrides, broker resource "1", the cluster default resource ""): for topics every config's
type and synonyms, for the broker every config's default value, read-only and sensitive flags and
type. Broker configs the test broker set statically are stored with the default a broker started
without them reports (their DEFAULT_CONFIG synonym); ``"static": true`` marks the few that have no
default (node.id, listeners, ...), which the emulator fills from its own configuration.
Kafka's documentation strings are not stored (FIDELITY.md).
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

_FILES = {"kafka-4": "kafka4.json", "kafka-3": "kafka3.json"}


@cache
def load(flavor: str) -> dict[str, Any]:
    """The data of a flavor ("kafka-4" or "kafka-3")."""
    text = resources.files(__name__).joinpath(_FILES[flavor]).read_text()
    data: dict[str, Any] = json.loads(text)
    return data
