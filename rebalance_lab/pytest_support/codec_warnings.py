"""Keep the wire codec's own DeprecationWarnings out of a user's test run, and nobody else's.

kafka-python's codec, the runtime codec until issue 21, loads its JSON schemas with
``importlib.resources.read_text``, deprecated since Python 3.11: importing it warned 226 times in a
user's run. The warnings are the codec's business, not the user's, so the plugin ignores them, by
module: while it imports the emulator (the import that loads the codec), and afterwards through
pytest's ``filterwarnings`` for the modules of a third-party codec that import loaded. Since the
codec is our own (``protocol/schema_codec.py``) that import loads none, and nothing is filtered; a
kafka-python the user's tests import is their client, and its warnings are theirs to see. A
DeprecationWarning from the user's own code, or from any other library, always shows.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

# module (regex, as in filterwarnings) of each codec the emulator may load, by its top-level package
_CODEC_MODULES = {"kafka": r"kafka\.protocol(\.|$)", "kio": r"kio(\.|$)"}
# importlib's own deprecation is raised inside read_text, so it names importlib, not the caller
_READ_TEXT_MODULE = r"importlib\.resources\._legacy$"


@contextmanager
def quiet_codec_import() -> Iterator[list[str]]:
    """Import the emulator inside this block; yields the filters for the codecs the block loaded."""
    loaded: list[str] = []
    with warnings.catch_warnings():
        for module in (*_CODEC_MODULES.values(), _READ_TEXT_MODULE):
            warnings.filterwarnings("ignore", category=DeprecationWarning, module=module)
        yield loaded
    loaded.extend(module for package, module in _CODEC_MODULES.items() if package in sys.modules)


def ini_filters(codec_modules: list[str]) -> list[str]:
    """``filterwarnings`` lines ignoring DeprecationWarnings of these codec modules only."""
    return [f"ignore::DeprecationWarning:{module}" for module in codec_modules]
