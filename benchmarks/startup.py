"""Benchmark: how soon a new ``rebalance-lab serve`` process accepts a JoinGroup, its memory then, and its imports.

    .venv/bin/python benchmarks/startup.py [--runs 5] [--top 10] [--compare OTHER_CHECKOUT] [--callgrind]

Prints (issue 22 item 3; goal: ready in <= 100 ms, median of 5 starts, under 40 MiB):

* per start, the time from launching the process to the first JoinGroup it answers with a member of
  generation 1 (JoinGroup v5: MEMBER_ID_REQUIRED, the join again with the id, answered when the zero
  initial delay expires; connection attempts every 1 ms until the port listens), the CPU time the server
  process had used by then (all its threads, /proc schedstat; and its main thread's alone: with the early
  shell, the path to the answer, the import thread running while it waits) and its resident memory then; min and
  median of each; beside each start, in turn, a bare ``python -c pass`` (wall and CPU): on a loaded machine
  the ratio to it says more than the milliseconds, and the load average is printed with the figures;
* with ``--compare DIR`` (e.g. ``git worktree add /tmp/before HEAD~3``), the same starts of the package in
  DIR, alternating with this one's, so that both see the same load;
* beside each start, a bare asyncio server's (``import asyncio``, listen, one answer): the floor of any
  asyncio server on this interpreter;
* one more start under ``python -X importtime``: the ``rebalance_lab`` modules serve imported, the ten
  costliest (cumulative, with their own time), and the total import time;
* one more start with ``--log-level INFO``: serve's warm-up once it listens (rebalance_lab/warm_up.py): its
  steps, CPU and longest step, i.e. the longest a request arriving meanwhile waits for it;
* one more start like the measured ones, with ``--log-level INFO``, until its early shell hands over to the
  asyncio shell (coordinator/early_serve.py): how many requests the early shell answered before asyncio was ready
  (3 or more: both JoinGroups were its own), when it handed over (ms after listening) and how long the import
  thread took; per checkout with ``--compare``;
* with ``--callgrind``, one more start per checkout under valgrind's callgrind (threads counted apart): the
  instructions of serve's main thread from its launch to its first accepted JoinGroup (``callgrind_control``
  dumps the counts once the answer is read). Deterministic to about 1% where the CPU times above swing 30-50% with
  the machine's load, so a change of a few percent shows; ``python -c pass`` under callgrind beside it.

Every start reads bytecode from a cache the first, unreported start fills (``PYTHONPYCACHEPREFIX`` in a
temporary directory), as an installed package does: with ``PYTHONDONTWRITEBYTECODE`` set (some sandboxes set
it) each start would otherwise compile every module again and measure the compiler.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from rebalance_lab.protocol import codec

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:  # tests.support is imported from the repository root
    sys.path.insert(0, str(REPO_ROOT))
from tests.support.blocking_frames import read_exactly, read_frame  # noqa: E402

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
    return codec.decode_response(JOIN, JOIN_V, read_frame(sock))


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


def process_cpu_s(pid: int) -> float:
    """CPU time of every thread of the process so far (schedstat: nanoseconds on a CPU)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        with open(task / "schedstat") as stat:
            total += int(stat.read().split()[0])
    return total / 1e9


def main_thread_cpu_s(pid: int) -> float:
    """CPU time of the process's main thread so far: with an early shell, the path to the first answer (serve's
    import thread runs while the main thread waits for requests, and waits while it serves them)."""
    with open(f"/proc/{pid}/task/{pid}/schedstat") as stat:
        return int(stat.read().split()[0]) / 1e9


@dataclass(frozen=True)
class Start:
    wall_s: float
    cpu_s: float
    rss_mib: float
    stderr: str
    main_cpu_s: float = float("nan")


def child_env(pycache: str, source: str | None = None) -> dict[str, str]:
    """The children's environment: bytecode cached in ``pycache``; ``source``'s package first on the path."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = pycache
    if source is not None:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (source, env.get("PYTHONPATH")) if p)
    return env


def one_start(port: int, python_flags: tuple[str, ...] = (), env: dict[str, str] | None = None,
              serve_flags: tuple[str, ...] = (), after: tuple[str, ...] = ()) -> Start:
    """One ``serve`` process, from its launch to its first accepted JoinGroup (then, with ``after``, until a line
    of its standard error holds one of those words)."""
    cmd = [sys.executable, *python_flags, "-c", "from rebalance_lab.cli import main; main()", *SERVE, *serve_flags]
    cmd[cmd.index("0")] = str(port)
    frames = (_join_request("", 1), lambda member: _join_request(member, 2))
    started = time.perf_counter()
    # run from a folder without a rebalance_lab package: ``-c`` puts the working directory first on sys.path
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env,
                            cwd=tempfile.gettempdir())
    seen = ""
    try:
        with _connect(port, proc, started) as sock:
            first = _call(sock, frames[0])
            if first.error_code != MEMBER_ID_REQUIRED:  # type: ignore[attr-defined]
                raise RuntimeError(f"first JoinGroup answered {first.error_code}")  # type: ignore[attr-defined]
            joined = _call(sock, frames[1](first.member_id))  # type: ignore[attr-defined]
            if joined.error_code != 0 or joined.generation_id != 1:  # type: ignore[attr-defined]
                raise RuntimeError(f"JoinGroup answered {joined.error_code}")  # type: ignore[attr-defined]
        elapsed = time.perf_counter() - started
        cpu, rss, main_cpu = process_cpu_s(proc.pid), _rss_mib(proc.pid), main_thread_cpu_s(proc.pid)
        if after:
            seen = _wait_for_line(proc, *after)
    finally:
        proc.terminate()
        _out, err = proc.communicate(timeout=10)
    return Start(elapsed, cpu, rss, seen + err, main_cpu)


def _wait_for_line(proc: subprocess.Popen[str], *marks: str) -> str:
    """Standard error up to the first line holding one of ``marks`` (or to its end)."""
    assert proc.stderr is not None
    lines = []
    for line in proc.stderr:
        lines.append(line)
        if any(mark in line for mark in marks):
            break
    return "".join(lines)


def early_shell_line(env: dict[str, str]) -> str:
    """What the early shell did in a start like the measured ones (its INFO line at the handoff): the requests it
    answered before asyncio was ready (the JoinGroups, if it answered them), and when it handed over."""
    # the warm-up's line comes after the handoff, and in a checkout without an early shell
    err = one_start(_free_port(), env=env, serve_flags=("--log-level", "INFO"),
                    after=("early shell:", "warm-up done")).stderr
    for line in err.splitlines():
        if "early shell: " in line:
            return line.split("early shell: ", 1)[1].strip()
    return "no early shell (this checkout has none, or serve stopped first)"


# The floor of any asyncio server in Python: the interpreter, ``import asyncio``, a listening socket and one
# answer (about 60% of serve's instructions to its first JoinGroup are this: callgrind, issue 22)
_FLOOR = """
import asyncio, sys
async def answer(reader, writer):
    await reader.readexactly(4)
    writer.write(b"pong")
    await writer.drain()
    writer.close()
async def main():
    await asyncio.start_server(answer, "127.0.0.1", int(sys.argv[1]))
    await asyncio.Event().wait()
asyncio.run(main())
"""


def asyncio_floor(port: int, env: dict[str, str]) -> tuple[float, float]:
    """(wall, CPU) seconds from launching a bare asyncio server to its first answer."""
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", _FLOOR, str(port)], env=env, cwd=tempfile.gettempdir(), text=True)
    try:
        with _connect(port, proc, started) as sock:
            sock.sendall(b"ping")
            read_exactly(sock, 4)
        return time.perf_counter() - started, process_cpu_s(proc.pid)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def warm_up_line(env: dict[str, str]) -> str:
    """The INFO line a serve process logs when its warm-up is done (read from its standard error)."""
    cmd = [sys.executable, "-c", "from rebalance_lab.cli import main; main()", *SERVE, "--log-level", "INFO"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env,
                            cwd=tempfile.gettempdir())
    try:
        assert proc.stderr is not None
        for line in proc.stderr:
            if "warm-up done" in line:
                return line.split("warm-up done", 1)[1].strip(" :\n")
        return "no warm-up line (serve ended, or this checkout has no warm-up)"
    finally:
        proc.terminate()
        proc.communicate(timeout=10)


def bare_python(env: dict[str, str]) -> tuple[float, float]:
    """(wall, CPU) seconds of ``python -c pass``: the interpreter's own start at this moment's load."""
    before = os.times()
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True, env=env)
    wall = time.perf_counter() - started
    after = os.times()
    return wall, (after.children_user - before.children_user) + (after.children_system - before.children_system)


def _callgrind_total(out: str, pid: int, thread: str) -> int | None:
    """The instructions in callgrind's dump of ``thread`` ("01": the main thread; first part), if written yet."""
    try:
        with open(os.path.join(out, f"cg.{pid}.1-{thread}")) as dump:
            match = re.search(r"^(?:summary|totals): (\d+)", dump.read(), re.M)
    except OSError:
        return None
    return int(match.group(1)) if match else None


def callgrind_main_thread(env: dict[str, str]) -> int:
    """Instructions of serve's main thread from launch to its first accepted JoinGroup, under callgrind."""
    env = {**env, "PYTHONHASHSEED": "0"}  # the same dict and set layouts in every run
    port = _free_port()
    with tempfile.TemporaryDirectory(prefix="startup-callgrind-") as out:
        cmd = ["valgrind", "--tool=callgrind", "--separate-threads=yes", f"--callgrind-out-file={out}/cg.%p",
               sys.executable, "-c", "from rebalance_lab.cli import main; main()", *SERVE]
        cmd[cmd.index("0")] = str(port)
        started = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, text=True,
                                cwd=tempfile.gettempdir())
        try:
            with _connect(port, proc, started) as sock:
                first = _call(sock, _join_request("", 1))
                _call(sock, _join_request(first.member_id, 2))  # type: ignore[attr-defined]
                subprocess.run(["callgrind_control", "--dump", str(proc.pid)], check=True, capture_output=True)
            deadline = time.perf_counter() + 60
            while (total := _callgrind_total(out, proc.pid, "01")) is None and time.perf_counter() < deadline:
                time.sleep(0.05)
        finally:
            proc.kill()
            proc.wait(timeout=30)
        if total is None:
            raise RuntimeError("callgrind wrote no dump of serve's main thread")
        return total


def callgrind_bare_python(env: dict[str, str]) -> int:
    """Instructions of ``python -c pass`` under callgrind: the interpreter's own share of a start."""
    done = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, "-c",
                           "pass"], env={**env, "PYTHONHASHSEED": "0"}, capture_output=True, text=True, check=True)
    match = re.search(r"Collected : (\d+)", done.stderr)
    if match is None:
        raise RuntimeError("callgrind printed no count for python -c pass")
    return int(match.group(1))


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


def _load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def _floor_summary(floor: list[tuple[float, float]]) -> str:
    wall, cpu = [f[0] * 1000 for f in floor], [f[1] * 1000 for f in floor]
    return (f"bare asyncio server -> first answer: min {min(wall):.1f} ms, median {statistics.median(wall):.1f} ms; "
            f"CPU min {min(cpu):.1f} ms, median {statistics.median(cpu):.1f} ms (the floor of an asyncio server)")


def _summary(label: str, starts: list[Start], bare: list[tuple[float, float]]) -> str:
    wall, cpu = [s.wall_s * 1000 for s in starts], [s.cpu_s * 1000 for s in starts]
    bare_wall, bare_cpu = statistics.median(b[0] * 1000 for b in bare), statistics.median(b[1] * 1000 for b in bare)
    rss = statistics.median(s.rss_mib for s in starts)
    main = [s.main_cpu_s * 1000 for s in starts]
    return (f"{label}start -> first accepted JoinGroup: min {min(wall):.1f} ms, median "
            f"{statistics.median(wall):.1f} ms over {len(starts)} starts (goal <= 100 ms); server CPU min "
            f"{min(cpu):.1f} ms, median {statistics.median(cpu):.1f} ms (main thread min {min(main):.1f} ms, median "
            f"{statistics.median(main):.1f} ms); RSS median {rss:.1f} MiB "
            f"(goal < 40 MiB); python -c pass median {bare_wall:.1f} ms wall, {bare_cpu:.0f} ms CPU; {_load()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--top", type=int, default=10)
    parser.add_argument("--compare", metavar="DIR", help="also start the rebalance_lab package in DIR, in turns")
    parser.add_argument("--callgrind", action="store_true",
                        help="also count the main thread's instructions to the first answer (valgrind's callgrind)")
    args = parser.parse_args()
    if args.callgrind and (shutil.which("valgrind") is None or shutil.which("callgrind_control") is None):
        parser.error("--callgrind needs valgrind and callgrind_control on PATH")
    with tempfile.TemporaryDirectory(prefix="startup-pycache-") as pycache:
        trees = {"": child_env(pycache)}
        if args.compare:
            trees[f"[{args.compare}] "] = child_env(pycache + "-compare", str(Path(args.compare).resolve()))
        for env in trees.values():
            one_start(_free_port(), env=env)  # fills the bytecode cache (and the file cache), unreported
        starts: dict[str, list[Start]] = {label: [] for label in trees}
        bare: list[tuple[float, float]] = []
        floor: list[tuple[float, float]] = []
        asyncio_floor(_free_port(), trees[""])  # its bytecode cached too, unreported
        for run in range(args.runs):
            floor.append(asyncio_floor(_free_port(), trees[""]))
            for label, env in trees.items():
                start = one_start(_free_port(), env=env)
                bare.append(bare_python(env))
                starts[label].append(start)
                print(f"{label}start {run + 1}: first accepted JoinGroup after {start.wall_s * 1000:6.1f} ms, server "
                      f"CPU {start.cpu_s * 1000:6.1f} ms (main thread {start.main_cpu_s * 1000:6.1f} ms), RSS "
                      f"{start.rss_mib:5.1f} MiB; python -c pass "
                      f"{bare[-1][0] * 1000:5.1f} ms; {_load()}", flush=True)
        for label in trees:
            print(_summary(label, starts[label], bare))
        print(_floor_summary(floor))
        err = one_start(_free_port(), ("-X", "importtime"), env=trees[""]).stderr
        warm_up_line(trees[""])  # its modules' bytecode and dataclass methods cached, as after any earlier run
        warm = warm_up_line(trees[""])
        early = {label: early_shell_line(env) for label, env in trees.items()}
        counted = {label: callgrind_main_thread(env) for label, env in trees.items()} if args.callgrind else {}
        bare_count = callgrind_bare_python(trees[""]) if args.callgrind else 0
    print("\n".join(import_table(err, args.top)))
    print(f"warm-up after listening: {warm}; {_load()}")
    for label, line in early.items():
        print(f"{label}early shell: {line}")
    for label, total in counted.items():
        print(f"{label}callgrind: serve's main thread to its first accepted JoinGroup {total / 1e6:.1f} M instructions "
              f"(python -c pass {bare_count / 1e6:.1f} M)")


if __name__ == "__main__":
    main()
