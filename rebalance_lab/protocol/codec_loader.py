"""Load kafka-python's wire codec without its client (a start-up time optimisation).

``import kafka.protocol`` runs ``kafka/__init__.py`` first, which imports the whole
client (admin, networking, consumer, producer): about 100 ms of the emulator's
start-up. A ``rebalance-lab serve`` process never uses the client, so before the
codec is imported it registers a bare ``kafka`` package whose ``__path__`` points
at the installed one: submodules load normally, the client is never loaded.

Only for processes that will not import the kafka-python client afterwards (the
client would find the bare package); in-process users skip this.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
import types


def load_codec_only() -> bool:
    """Register the bare ``kafka`` package; False if kafka was already imported or not found."""
    if "kafka" in sys.modules:
        return False
    spec = importlib.util.find_spec("kafka")
    if spec is None or spec.submodule_search_locations is None:
        return False
    _register_bare("kafka", spec)
    # kafka.protocol.admin's __init__ loads every admin API (ACLs, configs, quotas, ...); the codec
    # needs only its topics and groups modules.
    admin = importlib.util.find_spec("kafka.protocol.admin")
    if admin is not None and admin.submodule_search_locations is not None:
        _register_bare("kafka.protocol.admin", admin)
    return True


def _register_bare(name: str, spec: importlib.machinery.ModuleSpec) -> None:
    package = types.ModuleType(name)
    package.__path__ = list(spec.submodule_search_locations or [])
    package.__spec__ = spec
    sys.modules[name] = package
