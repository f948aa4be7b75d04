"""What the Python matrix drivers share: their arguments, JSON-lines output and the "close" command.

Every driver (Python, Node, Java, Go) speaks the same protocol with the test: arguments
``--bootstrap --topic --group --member --session-timeout-ms --heartbeat-ms --assignor`` (and
``--group-protocol classic|consumer`` for the clients that speak KIP-848); one
JSON object per stdout line (``started``, ``assigned``/``revoked``/``lost``, ``records`` with
``[[partition, offset], ...]``, ``error``, ``closed``); a line ``close`` on stdin (or stdin
ending) asks it to leave the group cleanly and exit.
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterable
from typing import Any


def parse_args(default_assignor: str, argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--member", required=True)
    parser.add_argument("--session-timeout-ms", type=int, default=6000)
    parser.add_argument("--heartbeat-ms", type=int, default=500)
    parser.add_argument("--assignor", default=default_assignor)
    # "consumer" is KIP-848: the broker assigns (--assignor names its server assignor, uniform or range),
    # and the session timeout and heartbeat interval are the broker's, so the two options above are unused.
    parser.add_argument("--group-protocol", choices=("classic", "consumer"), default="classic")
    # The client's own log goes to stderr, which the test keeps in a file and shows on failure, after
    # asking for every thread's stack with SIGUSR1 (a wedged client shows where it waits).
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    level = os.environ.get("REBALANCE_LAB_MATRIX_LOG", "INFO").upper()
    logging.basicConfig(level=level, stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    return parser.parse_args(argv)


_lock = threading.Lock()


def emit(**fields: Any) -> None:
    line = json.dumps(fields, separators=(",", ":"))
    with _lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def emit_records(records: Iterable[tuple[int, int]]) -> None:
    batch = [[p, o] for p, o in records]
    if batch:
        emit(event="records", records=batch)


def partitions(tps: Iterable[Any]) -> list[int]:
    return sorted(tp.partition for tp in tps)


def watch_stdin(on_close: Callable[[], None]) -> threading.Thread:
    """Call ``on_close`` (from a daemon thread) when stdin says "close" or ends."""

    def run() -> None:
        for line in sys.stdin:
            if line.strip() == "close":
                break
        on_close()

    thread = threading.Thread(target=run, name="stdin", daemon=True)
    thread.start()
    return thread
