"""The JSON data files' cache (rebalance_lab/protocol/json_cache.py, issue 22 start-up): the values json.load gives,
read back by a second process without json, and never stale, damaged or another interpreter's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from rebalance_lab.protocol import codec, json_cache

_SCHEMAS = Path(codec.__file__).parent / "schemas" / "kafka_messages.json"
# Loads a file through the cache in a fresh interpreter: whether json was imported, and the value (as JSON text).
_SCRIPT = """
import sys
from rebalance_lab.protocol import json_cache
value = json_cache.load(sys.argv[1])
imported = "json" in sys.modules
import json
print(imported, json.dumps(value))
"""


def _load(path: Path, pycache: Path, *extra_env: tuple[str, str]) -> tuple[bool, object]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update({"PYTHONPYCACHEPREFIX": str(pycache), **dict(extra_env)})
    out = subprocess.run([sys.executable, "-c", _SCRIPT, str(path)], env=env, capture_output=True, text=True,
                         check=True).stdout
    imported, text = out.split(" ", 1)
    return imported == "True", json.loads(text)


def test_a_second_process_reads_the_schemas_json_load_gives_without_importing_json(tmp_path: Path) -> None:
    expected = json.loads(_SCHEMAS.read_text(encoding="utf-8"))
    first, second = _load(_SCHEMAS, tmp_path), _load(_SCHEMAS, tmp_path)
    assert first == (True, expected)  # parsed, and kept
    assert second == (False, expected)  # read back: no json imported
    assert list(second[1]) == list(expected)  # in the file's order (API_NAMES, the codec's tables)


def test_a_changed_file_is_parsed_again(tmp_path: Path) -> None:
    data = tmp_path / "data.json"
    data.write_text('{"a": [1, 2.5, null, true, "x"]}', encoding="utf-8")
    assert _load(data, tmp_path / "cache") == (True, {"a": [1, 2.5, None, True, "x"]})
    data.write_text('{"a": [1, 2.5, null, false, "x", {"b": -1}]}', encoding="utf-8")  # another size and time
    assert _load(data, tmp_path / "cache") == (True, {"a": [1, 2.5, None, False, "x", {"b": -1}]})
    assert _load(data, tmp_path / "cache")[0] is False


def test_a_damaged_or_foreign_cache_is_ignored_and_nothing_is_written_when_bytecode_is_not(tmp_path: Path) -> None:
    data = tmp_path / "data.json"
    data.write_text('{"k": "v"}', encoding="utf-8")
    assert _load(data, tmp_path / "none", ("PYTHONDONTWRITEBYTECODE", "1")) == (True, {"k": "v"})
    assert not list((tmp_path / "none").rglob("*.pyc"))
    _load(data, tmp_path / "cache")
    (cached,) = (tmp_path / "cache").rglob("data.json*.pyc")
    content = cached.read_bytes()
    cached.write_bytes(content[:len(content) // 2])
    assert _load(data, tmp_path / "cache") == (True, {"k": "v"})
    cached.write_bytes(b"\x00\x00\r\n" + cached.read_bytes()[4:])  # another interpreter's magic number
    assert _load(data, tmp_path / "cache") == (True, {"k": "v"})


def test_the_codec_reads_its_schemas_through_the_cache(tmp_path: Path) -> None:
    # the same values in this process as a plain json.load (the codec's tables are made from them)
    assert json_cache.load(str(_SCHEMAS)) == json.loads(_SCHEMAS.read_text(encoding="utf-8"))
    assert codec.API_NAMES[11] == "JoinGroup" and codec.codec_version_range(11) == (0, 9)
