"""``rebalance-lab serve`` is ready for a JoinGroup without importing what that does not need (issue 22).

A real ``serve`` process answers ApiVersions, FindCoordinator and a JoinGroup (MEMBER_ID_REQUIRED, then the
join with the id: generation 1); then, on SIGUSR1, it prints the modules it has imported and how many codec
message classes it has made. Start-up time is what those imports cost (benchmarks/startup.py measures it);
this test fails as soon as one of the packages below is imported on that path again.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rebalance_lab.protocol import codec
from tests.support.blocking_frames import read_frame

# The dump runs in the serve process's main thread (Python signal handlers do), between two loop turns.
_WRAPPER = """
import signal, sys

def _dump(_signum, _frame):
    from rebalance_lab.protocol import codec
    built = codec._message_class.cache_info().currsize
    print("MODULES", " ".join(sorted(sys.modules)), flush=True)
    print("CLASSES", built, flush=True)
    import gc
    print("GC", gc.isenabled(), gc.get_freeze_count(), flush=True)

signal.signal(signal.SIGUSR1, _dump)
from rebalance_lab.cli import main
sys.exit(main())
"""
# --no-warm-up: these tests see what serve's start and each request import, not what it makes once it listens
# (tests/unit/test_warm_up.py)
SERVE = ["serve", "--port", "0", "--initial-rebalance-delay-ms", "0", "--join-race", "separate", "--no-warm-up"]

# Packages serve must not import before its first JoinGroup with the default options.
NOT_IMPORTED = (
    "rebalance_lab.observe",  # --record, --explain, export
    "rebalance_lab.replay", "pyspark",
    "rebalance_lab.control",  # --control-port
    "rebalance_lab.faults",
    "rebalance_lab.storage",  # --data-dir
    "rebalance_lab.scenarios", "rebalance_lab.api", "rebalance_lab.demo", "rebalance_lab.play_cli", "yaml", "kafka",
    "rebalance_lab.coordinator.consumer",  # KIP-848: made on the first consumer-group request
    "rebalance_lab.coordinator.classic.conversion", "rebalance_lab.clients.assignors",
    "rebalance_lab.coordinator.transactions",
    "importlib.resources", "tempfile", "zipfile",
    "pathlib", "urllib", "ipaddress",  # os.path instead; setuptools' editable finder (./dev installs a .pth)
    "shutil", "bz2", "lzma",  # argparse asks shutil for the terminal's width only to print help
    "rebalance_lab.security.sasl",  # a SASL listener's first connection
    "ssl", "_ssl",  # OpenSSL: a TLS listener's context only (asyncio is imported without it: cli._import_asyncio)
    "datetime",  # a recording's timestamps only (coordinator/records.py)
)
# The handler modules the requests above use; every other handler is imported on its API's first request.
HANDLERS_USED = {"api_versions", "find_coordinator", "join_group", "base", "errors_response", "authz"}


JOIN, FIND_COORDINATOR, API_VERSIONS, MEMBER_ID_REQUIRED = 11, 10, 18, 79
Served = tuple[set[str], int, tuple[bool, int]]  # modules, codec classes made, (collector enabled, frozen objects)


def _call(sock: socket.socket, api_key: int, version: int, correlation: int, **fields: Any) -> Any:
    sock.sendall(codec.encode_request(codec.new_request(api_key, version, **fields), correlation, "imports-test"))
    return codec.decode_response(api_key, version, read_frame(sock))


def _join_group(sock: socket.socket, member_id: str, correlation: int) -> Any:
    protocol = codec.data_class(codec.request_type(JOIN), "JoinGroupRequestProtocol")
    return _call(sock, JOIN, 5, correlation, group_id="g", session_timeout_ms=10_000, rebalance_timeout_ms=10_000,
                 member_id=member_id, group_instance_id=None, protocol_type="consumer",
                 protocols=[protocol(name="range", metadata=b"")])


def _first_join(address: tuple[str, int]) -> int:
    """ApiVersions, FindCoordinator, JoinGroup twice (MEMBER_ID_REQUIRED, then with the id): the generation."""
    with socket.create_connection(address, timeout=30) as sock:
        assert _call(sock, API_VERSIONS, 3, 1, client_software_name="t", client_software_version="1").error_code == 0
        assert _call(sock, FIND_COORDINATOR, 3, 2, key="g", key_type=0).error_code == 0
        first = _join_group(sock, "", 3)
        assert first.error_code == MEMBER_ID_REQUIRED
        joined = _join_group(sock, first.member_id, 4)
        assert joined.error_code == 0
        return int(joined.generation_id)


def _handed_over(proc: subprocess.Popen[str]) -> str:
    """Wait for the INFO line the early shell logs when asyncio's shell has taken over (coordinator/early_serve.py):
    what serve imports is then all it imports to serve the requests above, whichever shell answered them."""
    assert proc.stderr is not None
    for line in proc.stderr:
        if "early shell: " in line:
            return line
    raise AssertionError("serve ended without handing over from its early shell")


@contextlib.contextmanager
def _serve(wrapper: str, *extra: str, env: dict[str, str] | None = None) \
        -> Iterator[tuple[subprocess.Popen[str], tuple[str, int]]]:
    """A serve process under ``wrapper`` (from a folder of no package: ``-c`` puts the working directory first on
    sys.path), its first broker's address, and its end."""
    proc = subprocess.Popen([sys.executable, "-c", wrapper, *SERVE, *extra], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=tempfile.gettempdir(), env=env)
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert "bootstrap servers: " in first, (first, proc.stderr.read() if proc.stderr else "")
        host, port = first.rsplit(" ", 1)[1].strip().rsplit(":", 1)
        yield proc, (host, int(port))
    finally:
        proc.terminate()
        proc.communicate(timeout=30)


@pytest.fixture(scope="module")
def serve_after_a_join() -> Iterator[Served]:
    with _serve(_WRAPPER, "--log-level", "INFO") as (proc, address):
        assert proc.stdout is not None
        assert _first_join(address) == 1
        _handed_over(proc)
        proc.send_signal(signal.SIGUSR1)
        modules = proc.stdout.readline().split()
        classes = proc.stdout.readline().split()
        collector = proc.stdout.readline().split()
        assert modules[0] == "MODULES" and classes[0] == "CLASSES" and collector[0] == "GC"
        yield set(modules[1:]), int(classes[1]), (collector[1] == "True", int(collector[2]))


def _imported(modules: set[str], package: str) -> list[str]:
    return sorted(m for m in modules if m == package or m.startswith(package + "."))


@pytest.mark.parametrize("package", NOT_IMPORTED)
def test_serve_accepts_its_first_join_group_without_importing(serve_after_a_join: Served,
                                                              package: str) -> None:
    modules, _classes, _collector = serve_after_a_join
    assert _imported(modules, package) == []


def test_serve_imports_only_the_handlers_of_the_apis_it_was_asked(serve_after_a_join: Served) -> None:
    modules, _classes, _collector = serve_after_a_join
    prefix = "rebalance_lab.coordinator.handlers."
    assert {m.removeprefix(prefix) for m in modules if m.startswith(prefix)} <= HANDLERS_USED


def test_serve_makes_the_message_classes_of_the_apis_it_was_asked_only(serve_after_a_join: Served) \
        -> None:
    _modules, classes, _collector = serve_after_a_join
    # ApiVersions, FindCoordinator and JoinGroup: a request and a response class each, of the codec's ~60 APIs
    assert classes <= 6 < len(list(codec._REQUESTS))


def test_serve_collects_cycles_again_after_its_start_with_the_start_ups_objects_frozen(
        serve_after_a_join: Served) -> None:
    """The cyclic collector is paused while serve starts (its ~250 modules and the world are no garbage) and
    resumes once the brokers listen, with what start-up made in the permanent generation."""
    _modules, _classes, (enabled, frozen) = serve_after_a_join
    assert enabled
    assert frozen > 10_000


# Records the modules serve's main thread imports first (the early shell's path to its first answers); the import
# thread's (asyncio and the asyncio shell) are not its path (coordinator/early_serve.py).
_MAIN_THREAD_WRAPPER = """
import _signal as signal, sys, threading

class _Record:
    first = []
    def find_spec(self, name, path=None, target=None):
        if threading.current_thread() is threading.main_thread():
            self.first.append(name)
        return None

sys.meta_path.insert(0, _Record())
signal.signal(signal.SIGUSR1, lambda *_: print("MAIN", " ".join(_Record.first), flush=True))
from rebalance_lab.cli import main
sys.exit(main())
"""
# What the main thread need not import before it answers: inspect and what it imports (~10-15 ms of CPU), which
# dataclasses imports only to call inspect.signature (rebalance_lab/dataclass_cache.py); traceback and what it
# imports, which logging imports to format exceptions, and platform, which uuid asks for the system's name once
# (rebalance_lab/deferred_imports.py); and the classic coordinator's modules for DescribeGroups, ListGroups and
# DeleteGroups, operator actions, --data-dir, a loading partition and a pending SyncGroup's deadline, imported where
# the classic coordinator (coordinator/classic/coordinator.py) first uses them
NOT_ON_THE_MAIN_THREAD = ("inspect", "ast", "dis", "opcode", "traceback", "linecache", "tokenize", "textwrap",
                          "platform", *(f"rebalance_lab.coordinator.classic.{name}"
                                        for name in ("describe", "admin", "restore", "loading", "expiry",
                                                     "admin_messages")),  # describe's nine values (issue 22)
                          "rebalance_lab.protocol.assignment_types",  # java_hashmap names it in an annotation only
                          # its Signals, Handlers and Sigmasks enums: the early phase sets its handlers through _signal
                          "signal")


def test_serves_main_thread_answers_its_first_join_group_without_importing_what_it_does_not_use() -> None:
    with _serve(_MAIN_THREAD_WRAPPER) as (proc, address):
        assert proc.stdout is not None
        assert _first_join(address) == 1
        proc.send_signal(signal.SIGUSR1)
        line = proc.stdout.readline().split()
    assert line[0] == "MAIN" and "rebalance_lab.coordinator.handlers.join_group" in line[1:]
    assert [m for m in NOT_ON_THE_MAIN_THREAD if m in line[1:]] == []


# What the main thread need not import when an earlier start left its caches (bytecode, dataclass methods, the
# schemas: json_cache.py), as every start after an installed package's first does: json, whose parser read Kafka's
# message schemas at every start
NOT_ON_THE_MAIN_THREAD_WITH_CACHES = ("json", "json.decoder", "json.scanner", "json.encoder")


def test_serves_main_thread_imports_no_json_once_a_start_has_cached_the_schemas(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(tmp_path)
    lines = []
    for _start in range(2):  # the first start writes the caches, the second reads them
        with _serve(_MAIN_THREAD_WRAPPER, env=env) as (proc, address):
            assert proc.stdout is not None
            assert _first_join(address) == 1
            proc.send_signal(signal.SIGUSR1)
            lines.append(proc.stdout.readline().split())
    assert "json" in lines[0]  # parsed the schemas: the test sees the import when there is one
    assert lines[1][0] == "MAIN" and "rebalance_lab.coordinator.handlers.join_group" in lines[1][1:]
    assert [m for m in NOT_ON_THE_MAIN_THREAD_WITH_CACHES if m in lines[1][1:]] == []


def test_dataclasses_imported_by_the_cache_first_still_make_signatures_and_docstrings() -> None:
    """dataclasses' inspect is imported on its first use: a class made then has its usual docstring."""
    code = ("import sys; from rebalance_lab import dataclass_cache; assert 'inspect' not in sys.modules\n"
            "import dataclasses\n@dataclasses.dataclass\nclass P:\n    x: int = 1\n"
            "print(P.__doc__, dataclasses.inspect.signature(P))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=tempfile.gettempdir())
    assert out.stdout.split() == ["P(x:", "int", "=", "1)", "(x:", "int", "=", "1)", "->", "None"]


def test_the_handler_table_says_what_each_handler_module_declares() -> None:
    import importlib

    from rebalance_lab.coordinator import handlers

    for name, key in handlers.HANDLERS.items():
        module = importlib.import_module(f"rebalance_lab.coordinator.handlers.{name}")
        assert (module.API_KEY, getattr(module, "VERSIONS", None)) == (key, handlers.NARROWED.get(name)), name
        handlers.HandlerSpec(key, (0, 0), name).load()  # raises if the declarations and the table disagree


def test_a_handler_whose_declarations_disagree_with_the_table_does_not_load() -> None:
    from rebalance_lab.coordinator import handlers

    with pytest.raises(RuntimeError, match="join_group declares"):
        handlers.HandlerSpec(12, (0, 4), "join_group").load()


OFFSET_COMMIT, OFFSET_FETCH, LIST_GROUPS = 8, 9, 16


def _classic_offsets_and_listing(address: tuple[str, int]) -> None:
    """What a classic consumer group's member and an admin do first: commit, fetch, list the groups."""
    commit, fetch = codec.request_type(OFFSET_COMMIT), codec.request_type(OFFSET_FETCH)
    with socket.create_connection(address, timeout=30) as sock:
        partition = codec.data_class(commit, "OffsetCommitRequestPartition")(partition_index=0, committed_offset=5)
        topic = codec.data_class(commit, "OffsetCommitRequestTopic")(name="t", partitions=[partition])
        _call(sock, OFFSET_COMMIT, 8, 1, group_id="h", topics=[topic])
        group = codec.data_class(fetch, "OffsetFetchRequestGroup")(group_id="h", topics=None)
        assert _call(sock, OFFSET_FETCH, 8, 2, groups=[group]).groups[0].error_code == 0
        assert _call(sock, LIST_GROUPS, 4, 3).error_code == 0


def test_a_classic_groups_offsets_and_listing_do_not_make_the_kip848_coordinator() -> None:
    """OffsetCommit, OffsetFetch and ListGroups ask whether a group id is a KIP-848 consumer group; before any
    consumer group exists the answer is no, without importing that coordinator (about 55 modules, a first
    commit's ~0.1 s)."""
    with _serve(_WRAPPER) as (proc, address):
        assert proc.stdout is not None
        _classic_offsets_and_listing(address)
        proc.send_signal(signal.SIGUSR1)
        modules = set(proc.stdout.readline().split()[1:])
    assert "rebalance_lab.coordinator.handlers.offset_commit" in modules
    assert _imported(modules, "rebalance_lab.coordinator.consumer") == []


CREATE_TOPICS = 19


def test_a_first_create_topics_loads_no_client_assignor() -> None:
    """CreateTopics answers in Java HashSet order (protocol/java_hashmap.py); the assignors' package, which
    re-exports it, loads every assignor (~60 ms of a fresh serve's first CreateTopics)."""
    with _serve(_WRAPPER) as (proc, address):
        assert proc.stdout is not None
        topic = codec.data_class(codec.request_type(CREATE_TOPICS), "CreatableTopic")(
            name="orders", num_partitions=3, replication_factor=1, assignments=[], configs=[])
        with socket.create_connection(address, timeout=30) as sock:
            answer = _call(sock, CREATE_TOPICS, 7, 1, topics=[topic], timeout_ms=1000, validate_only=False)
        assert [t.error_code for t in answer.topics] == [0]
        proc.send_signal(signal.SIGUSR1)
        modules = set(proc.stdout.readline().split()[1:])
    assert "rebalance_lab.coordinator.handlers.create_topics" in modules
    assert _imported(modules, "rebalance_lab.clients.assignors") == []


def test_the_first_crc32c_loads_the_extension_without_importlib_metadata() -> None:
    """crc32c's package reads its version through importlib.metadata on import (~100 million instructions on a
    fresh serve's first Produce); record_batch loads its C extension alone, with the same checksums."""
    script = ("import sys\nfrom rebalance_lab.coordinator import record_batch\n"
              "crc = record_batch._fast()\n"
              "print(crc is not None and crc(b'123456789') == 0xE3069283, record_batch.crc32c(b'kafka'),"
              " 'importlib.metadata' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                          cwd=tempfile.gettempdir())
    import crc32c

    assert done.stdout.split() == ["True", str(crc32c.crc32c(b"kafka")), "False"]


def test_a_serve_with_a_tls_listener_loads_ssl_and_answers_over_tls_and_plaintext(tmp_path: Path) -> None:
    """Only a plain serve imports asyncio without ``ssl``: with an SSL listener beside the PLAINTEXT one, both
    answer (the TLS handshake through asyncio's SSL transport)."""
    import ssl

    from tests.support.secure_broker import Pki

    pki = Pki.create(tmp_path)
    proc = subprocess.Popen([sys.executable, "-c", _WRAPPER, *SERVE, "--additional-listener", "SSL:0",
                             "--ssl-certfile", pki.cert_file, "--ssl-keyfile", pki.key_file],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tempfile.gettempdir())
    try:
        assert proc.stdout is not None
        plain, tls = (proc.stdout.readline().rsplit(" ", 1)[1].strip().rsplit(":", 1) for _ in range(2))
        context = ssl.create_default_context(cafile=pki.ca_file)
        with context.wrap_socket(socket.create_connection((tls[0], int(tls[1])), timeout=30),
                                 server_hostname="127.0.0.1") as sock:
            assert _call(sock, API_VERSIONS, 3, 1, client_software_name="t", client_software_version="1"
                         ).error_code == 0
        with socket.create_connection((plain[0], int(plain[1])), timeout=30) as sock:
            assert _call(sock, API_VERSIONS, 3, 1, client_software_name="t", client_software_version="1"
                         ).error_code == 0
        proc.send_signal(signal.SIGUSR1)
        modules = set(proc.stdout.readline().split()[1:])
    finally:
        proc.terminate()
        proc.communicate(timeout=30)
    assert "ssl" in modules


_EARLY_JOIN = """
import socket, struct, sys, threading
from rebalance_lab.config import EmulatorConfig, GroupConfig
from rebalance_lab.coordinator.early import EarlyShell
from rebalance_lab.coordinator.request_core import RequestCore
from rebalance_lab.protocol import codec

config = EmulatorConfig(port=0, group=GroupConfig(initial_rebalance_delay_ms=20, join_race="separate"))
shell = EarlyShell.listening(RequestCore(config))
address = shell.listeners[0][0].getsockname()[:2]
protocol = codec.data_class(codec.request_type(11), "JoinGroupRequestProtocol")
generations = []

def call(sock, api_key, version, correlation, **fields):
    sock.sendall(codec.encode_request(codec.new_request(api_key, version, **fields), correlation, "t"))
    size = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))[0]
    return codec.decode_response(api_key, version, sock.recv(size, socket.MSG_WAITALL))

def client():  # a thread of socket calls only: the early shell serves on the main thread
    with socket.create_connection(address) as sock:
        call(sock, 18, 3, 1, client_software_name="t", client_software_version="1")
        call(sock, 3, 12, 2, topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False)
        call(sock, 10, 4, 3, key_type=0, coordinator_keys=["g"])
        join = dict(group_id="g", session_timeout_ms=10000, rebalance_timeout_ms=10000, group_instance_id=None,
                    protocol_type="consumer", protocols=[protocol(name="range", metadata=b"")])
        member = call(sock, 11, 5, 4, member_id="", **join).member_id
        generation = call(sock, 11, 5, 5, member_id=member, **join).generation_id
        call(sock, 14, 3, 6, group_id="g", generation_id=generation, member_id=member, group_instance_id=None,
             assignments=[])
        call(sock, 12, 3, 7, group_id="g", generation_id=generation, member_id=member, group_instance_id=None)
        generations.append(generation)
    shell.wake()

threading.Thread(target=client, daemon=True).start()
shell.run(lambda: bool(generations))
print(generations[0], shell.answered, "asyncio" in sys.modules, "ssl" in sys.modules)
"""


def test_the_early_shell_answers_a_consumers_first_requests_without_asyncio_imported() -> None:
    """What the early shell and the handlers of a consumer's first requests import leaves asyncio (~60-70 ms of a
    start's CPU) to serve's import thread: generation 1 reached, 7 requests answered, asyncio never imported."""
    done = subprocess.run([sys.executable, "-c", _EARLY_JOIN], capture_output=True, text=True, timeout=60,
                          cwd=tempfile.gettempdir())
    assert done.stdout.split() == ["1", "7", "False", "False"], done.stderr


_IMPORTED_BY = """
import sys
from rebalance_lab import cli
from rebalance_lab.config import EmulatorConfig
from rebalance_lab.coordinator import early_serve
before = set(sys.modules)
if sys.argv[1] == "thread":
    cli._import_asyncio_shell(EmulatorConfig())
else:
    from rebalance_lab.coordinator.early import EARLY_APIS
    from rebalance_lab.coordinator.handlers import load_handlers
    handlers = load_handlers()
    for api_key in EARLY_APIS:
        handlers[api_key].handle
print(" ".join(sorted(set(sys.modules) - before)))
"""


def test_the_import_thread_and_the_early_shells_handlers_import_no_module_in_common() -> None:
    """serve's import thread (asyncio and its shell) and the early loop (the handlers of the APIs it serves, on their
    first request) run at once: a module both import could be handed half made to one of them (importlib's
    deadlock detection), so whatever both need is imported before the thread starts (early_serve.py)."""
    def imported(side: str) -> set[str]:
        done = subprocess.run([sys.executable, "-c", _IMPORTED_BY, side], capture_output=True, text=True, check=True,
                              timeout=60, cwd=tempfile.gettempdir())
        return set(done.stdout.split())

    thread, early = imported("thread"), imported("early")
    assert "asyncio" in thread and "rebalance_lab.coordinator.handlers.join_group" in early
    assert thread & early == set()
