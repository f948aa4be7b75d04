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

import os
from functools import cache
from typing import Any

_FILES = {"kafka-4": "kafka4.json", "kafka-3": "kafka3.json"}


@cache
def load(flavor: str) -> dict[str, Any]:
    """The data of a flavor ("kafka-4" or "kafka-3")."""
    # read beside this module, not through importlib.resources, whose import (tempfile, zipfile, shutil, bz2,
    # lzma) every serve paid at start-up (issue 22); pip installs packages unzipped. json imported here: serve's
    # start imports this module but reads no flavor's data before its first DescribeConfigs
    import json

    with open(os.path.join(os.path.dirname(__file__), _FILES[flavor]), encoding="utf-8") as file:
        data: dict[str, Any] = json.load(file)
    return data
