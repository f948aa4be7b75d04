"""Benchmark: how soon a new ``rebalance-lab serve`` process accepts a JoinGroup, its memory then, and its imports.

    .venv/bin/python benchmarks/startup.py [--runs 5] [--top 10]

Prints (issue 22 item 3; goal: ready in <= 100 ms, median of 5 starts, under 40 MiB):

* per start, the time from launching the process to the first JoinGroup it answers with a member of
  generation 1 (JoinGroup v5: MEMBER_ID_REQUIRED, the join again with the id, answered when the zero
  initial delay expires; connection attempts every 1 ms until the port listens), and the server's
  resident memory (VmRSS) at that moment; then min and median;
* one more start under ``python -X importtime``: the ``rebalance_lab`` modules serve imported, the ten
  costliest (cumulative, with their own time), and the total import time.
"""

from __future__ import annotations

import argparse
import re
import socket
import statistics
import struct
import subprocess
import sys
import time
from pathlib import Path

from rebalance_lab.protocol import codec

JOIN, JOIN_V, MEMBER_ID_REQUIRED = 11, 5, 79
SERVE = ["serve", "--port", "0", "--initial-rebalance-delay-ms", "0", "--join-race", "separate"]


def _join_request(member_id: str, correlation: int) -> bytes:
    protocol = codec.data_class(codec.request_type(JOIN), "JoinGroupRequestProtocol")
    request = codec.new_request(JOIN, JOIN_V, group_id="startup", session_timeout_ms=10_000,
                                rebalance_timeout_ms=10_000, member_id=member_id, group_instance_id=None,
                                protocol_type="consumer", protocols=[protocol(name="range", metadata=b"")])
    return codec.encode_request(request, correlation, "startup-bench")  # type: ignore[no-any-return]


def _call(sock: socket.socket, frame: bytes) -> object:
    sock.sendall(frame)
    size = struct.unpack(">i", _read(sock, 4))[0]
    return codec.decode_response(JOIN, JOIN_V, _read(sock, size))


def _read(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ConnectionError("the server closed the connection")
        data += chunk
    return data


def _connect(port: int, proc: subprocess.Popen[str], started: float) -> socket.socket:
    while True:
        try:
            return socket.create_connection(("127.0.0.1", port), timeout=10)
        except OSError:
            if proc.poll() is not None:
                raise RuntimeError(f"rebalance-lab serve exited with {proc.returncode}") from None
            if time.perf_counter() - started > 30:
                raise RuntimeError("rebalance-lab serve did not listen within 30 s") from None
            time.sleep(0.001)


def _rss_mib(pid: int) -> float:
    match = re.search(r"VmRSS:\s+(\d+) kB", Path(f"/proc/{pid}/status").read_text())
    return int(match.group(1)) / 1024 if match else float("nan")


def one_start(port: int, python_flags: tuple[str, ...] = ()) -> tuple[float, float, str]:
    """(seconds to the first accepted JoinGroup, RSS MiB then, the process's stderr)."""
    cmd = [sys.executable, *python_flags, "-c", "from rebalance_lab.cli import main; main()", *SERVE]
    cmd[cmd.index("0")] = str(port)
    frames = (_join_request("", 1), lambda member: _join_request(member, 2))
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        with _connect(port, proc, started) as sock:
            first = _call(sock, frames[0])
            if first.error_code != MEMBER_ID_REQUIRED:  # type: ignore[attr-defined]
                raise RuntimeError(f"first JoinGroup answered {first.error_code}")  # type: ignore[attr-defined]
            joined = _call(sock, frames[1](first.member_id))  # type: ignore[attr-defined]
            if joined.error_code != 0 or joined.generation_id != 1:  # type: ignore[attr-defined]
                raise RuntimeError(f"JoinGroup answered {joined.error_code}")  # type: ignore[attr-defined]
        elapsed = time.perf_counter() - started
        rss = _rss_mib(proc.pid)
    finally:
        proc.terminate()
        _out, err = proc.communicate(timeout=10)
    return elapsed, rss, err


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def import_table(stderr: str, top: int) -> list[str]:
    """``-X importtime`` lines -> the costliest rebalance_lab modules (cumulative) and the total."""
    rows = []
    for line in stderr.splitlines():
        match = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|(\s*)(\S+)", line)
        if match:
            rows.append((int(match.group(1)), int(match.group(2)), len(match.group(3)), match.group(4)))
    total = sum(own for own, _cum, _depth, _name in rows) / 1000
    ours = sorted((r for r in rows if r[3].startswith("rebalance_lab")), key=lambda r: -r[1])
    lines = [f"imports: {len(rows)} modules in {total:.0f} ms of import time, {len(ours)} of them rebalance_lab's"]
    lines += [f"  {cum / 1000:7.1f} ms cumulative {own / 1000:6.1f} ms own  {name}"
              for own, cum, _depth, name in ours[:top]]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--top", type=int, default=10)
    args = parser.parse_args()
    one_start(_free_port())  # warm the file cache and the bytecode cache once, unreported
    times, rss = [], []
    for run in range(args.runs):
        elapsed, mib, _err = one_start(_free_port())
        times.append(elapsed)
        rss.append(mib)
        print(f"start {run + 1}: first accepted JoinGroup after {elapsed * 1000:6.1f} ms, RSS {mib:5.1f} MiB",
              flush=True)
    print(f"start -> first accepted JoinGroup: min {min(times) * 1000:.1f} ms, median "
          f"{statistics.median(times) * 1000:.1f} ms over {args.runs} starts (goal <= 100 ms); RSS median "
          f"{statistics.median(rss):.1f} MiB (goal < 40 MiB)")
    _elapsed, _mib, err = one_start(_free_port(), ("-X", "importtime"))
    print("\n".join(import_table(err, args.top)))


if __name__ == "__main__":
    main()
