"""The inputs of benchmarks/replay_scale.py: the seeded simulation of G groups and the files written from it.

The simulation is described in replay_scale's docstring (step 1). :func:`write_inputs` streams it to the files
(step 2) in bounded memory, so that 10**7 events over 100,000 groups can be written as well as 10**6:

1. **Simulate in chunks** of :data:`CHUNK_GROUPS` groups, on a pool of processes (both cores). Each chunk's events
   are split by the broker leading the group's ``__consumer_offsets`` partition, sorted by time (stably: a group's
   own order, and the groups' order, survive equal times) and spilled to a *run* file per broker, in pickled frames
   of :data:`FRAME_EVENTS` events; the records a dump shows are spilled again per offsets partition.
2. **Merge** each broker's runs in chunk order (``heapq.merge`` is stable: at equal times the earlier run's event
   comes first) into one time-ordered stream, which the renderers turn into the hourly ``server.log`` files; each
   partition's runs likewise into its dump. The brokers and partitions are rendered on the same pool.

Every group's random stream is seeded by its index, chunk boundaries do not depend on the number of processes, and
the merge order is the order the in-memory writer sorted in: the files are the same byte for byte whatever the
number of processes or the chunk size, and the same as sorting every broker's events at once would write.
"""

from __future__ import annotations

import heapq
import json
import multiprocessing
import os
import pickle
import random
import resource
import shutil
import sys
import time
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import partial
from operator import itemgetter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from rebalance_lab.clients.assignors import (  # noqa: E402
    ClusterView,
    GroupSubscription,
    Subscription,
    TopicPartition,
    get_assignor,
)
from rebalance_lab.coordinator.routing import partition_for  # noqa: E402

BASE_MS = 1_790_000_000_000  # 2026-09-21, a day of production
DAY_MS = 86_400_000
ASSIGNORS = (("range", 0.35), ("cooperative-sticky", 0.30), ("roundrobin", 0.15), ("sticky", 0.20))
PARTITION_COUNTS = (6, 8, 12, 16, 24, 32, 48)
TOPIC_POOL = 400
STORM_SHARE = 0.02  # groups in a crash loop
STATIC_SHARE = 0.25  # groups whose members all have a group.instance.id
BROKERS = 8  # server.log files: brokers 0-3 run the Java coordinator (4.x), 4-7 the Scala one (3.x)
OFFSETS_PARTITIONS = 50


# --- generation -----------------------------------------------------------------------------------------------------

@dataclass
class Member:
    member_id: str
    client_id: str
    host: str
    instance_id: str | None
    assignment: tuple[TopicPartition, ...] = ()
    # The generation it last took part in, or -1: what its next subscription carries as generationId. Java's
    # ConsumerCoordinator sends it under every protocol; an eager member just owns nothing any more by then.
    generation: int = -1


@dataclass
class Group:
    """One simulated group; ``emit`` appends canonical rows (ts in epoch ms, as the renderers take)."""

    group_id: str
    assignor: str
    topics: dict[str, int]
    static: bool
    storm: bool
    rng: random.Random
    now: int
    members: list[Member] = field(default_factory=list)
    generation: int = 0
    events: list[dict[str, Any]] = field(default_factory=list)
    clients: int = 0
    evidence: int = 0  # events a production source records (not the per-member rejoins, see the docstring)

    def emit(self, event_type: str, **columns: Any) -> None:
        if columns.get("reason_code") != "member_metadata_change":
            self.evidence += 1
        row = {"schema_version": "rbl-event/1", "source": "emulator", "ts_kind": "emulated",
               "cluster_id": "default", "group_id": self.group_id, "group_kind": "classic",
               "event_type": event_type, "ts": self.now, **columns}
        self.events.append({k: v for k, v in row.items() if v is not None})

    def tick(self, low_ms: float, high_ms: float) -> None:
        self.now += int(self.rng.uniform(low_ms, high_ms))

    # -- members ---------------------------------------------------------------------------------

    def new_member(self) -> Member:
        self.clients += 1
        client = f"consumer-{self.group_id}-{self.clients}"
        instance = f"{self.group_id}-instance-{self.clients}" if self.static else None
        member_id = f"{client}-{uuid.UUID(int=self.rng.getrandbits(128), version=4)}"
        host = f"/10.{self.rng.randrange(256)}.{self.rng.randrange(256)}.{self.rng.randrange(1, 255)}"
        return Member(member_id, client, host, instance)

    def _subscription(self, member: Member) -> dict[str, Any]:
        owned = self._owned(member)
        return {"topics": sorted(self.topics), "owned": owned, "generation": member.generation}

    def _owned(self, member: Member) -> list[dict[str, Any]]:
        return [{"topic": t, "partition": p} for t, p in self._owned_tps(member)]

    def _owned_tps(self, member: Member) -> tuple[TopicPartition, ...]:
        if self.assignor != "cooperative-sticky":
            return ()  # eager members revoke everything before they rejoin
        return member.assignment

    def join_new(self, member: Member) -> None:
        """A new member: KIP-394's id round trip for a dynamic one, then it is added."""
        common = {"member_id": member.member_id, "client_id": member.client_id, "client_host": member.host,
                  "session_timeout_ms": 45_000, "supported_protocols": [self.assignor]}
        if member.instance_id is None:
            self.emit("MEMBER_JOIN_REQUEST", **common, reason_raw="member id required",
                      reason_code="member_id_required")
            self.tick(1, 30)
        self.emit("MEMBER_JOINED", **common, group_instance_id=member.instance_id, protocol_type="consumer",
                  rebalance_timeout_ms=300_000, generation=self.generation,
                  subscription=self._subscription(member))
        self.members.append(member)

    # -- one generation --------------------------------------------------------------------------

    def prepare(self, reason_raw: str, reason_code: str) -> None:
        self.emit("REBALANCE_PREPARE", reason_raw=reason_raw, reason_code=reason_code,
                  prev_generation=self.generation, generation=self.generation + 1)

    def complete(self, join_low_ms: float = 200, join_high_ms: float = 3_000) -> None:
        """Everybody rejoins, the join completes, the leader syncs, the generation is stored."""
        for member in self.members:
            self.tick(join_low_ms / len(self.members), join_high_ms / len(self.members))
            self.emit("MEMBER_JOIN_REQUEST", member_id=member.member_id, group_instance_id=member.instance_id,
                      supported_protocols=[self.assignor], generation=self.generation,
                      reason_code="member_metadata_change")
        self.generation += 1
        leader = self.members[0].member_id
        n_static = sum(m.instance_id is not None for m in self.members)
        self.emit("JOIN_COMPLETE", generation=self.generation, prev_generation=self.generation - 1,
                  protocol_type="consumer", protocol=self.assignor, leader_id=leader,
                  supported_protocols=[self.assignor], n_members=len(self.members), n_static=n_static)
        snapshot_members = self._assign()
        self.tick(5, 60)
        self.emit("SYNC_LEADER_ASSIGNMENT", generation=self.generation, leader_id=leader, protocol=self.assignor,
                  n_members=len(self.members))
        self.emit("GENERATION_SNAPSHOT", generation=self.generation, protocol_type="consumer",
                  protocol=self.assignor, leader_id=leader, n_members=len(self.members), n_static=n_static,
                  members=snapshot_members)
        if self.assignor == "cooperative-sticky" and self._withheld():
            self.follow_up()

    def _assign(self) -> list[dict[str, Any]]:
        subscriptions = {
            m.member_id: Subscription(tuple(sorted(self.topics)), owned_partitions=tuple(self._owned_tps(m)),
                                      generation_id=m.generation if m.generation >= 0 else None,
                                      group_instance_id=m.instance_id)
            for m in self.members
        }
        result = get_assignor(self.assignor).assign(ClusterView.of_counts(self.topics),
                                                    GroupSubscription(subscriptions))
        rows = []
        for m in self.members:
            owned = self._owned(m)
            joined_with = m.generation
            m.assignment = tuple(result[m.member_id].partitions)
            m.generation = self.generation
            rows.append({"member_id": m.member_id, "group_instance_id": m.instance_id, "client_id": m.client_id,
                         "client_host": m.host, "session_timeout_ms": 45_000, "rebalance_timeout_ms": 300_000,
                         "topics": sorted(self.topics), "owned": owned, "generation": joined_with,
                         "assignment": [{"topic": t, "partition": p} for t, p in m.assignment]})
        return rows

    def _withheld(self) -> bool:
        assigned = sum(len(m.assignment) for m in self.members)
        return assigned < sum(self.topics.values())

    def follow_up(self) -> None:
        """KIP-429: members that gave partitions up rejoin at once; the leader's rejoin starts the round."""
        self.tick(5, 40)
        leader = self.members[0].member_id
        self.prepare(f"Leader {leader} re-joining group during Stable; client reason: revoked partitions "
                     "(KIP-429)", "leader_rejoin")
        self.complete(join_low_ms=10, join_high_ms=200)


def _trigger(group: Group) -> None:
    """The next thing that happens to the group; most of them start a rebalance."""
    rng, size = group.rng, len(group.members)
    roll = rng.random()
    if group.storm:
        _crash_loop(group)
    elif group.static and roll < 0.3:
        _static_restart(group)
    elif size < 10 and (size <= 3 or roll < 0.45):
        member = group.new_member()
        group.join_new(member)
        group.prepare(f"Adding new member {member.member_id} with group instance id {member.instance_id or 'null'}; "
                      "client reason: not provided", "member_join")
        group.complete()
    elif roll < 0.8:
        _leave(group, group.members[rng.randrange(size)])
    else:
        _expire(group, group.members[rng.randrange(size)])


def _leave(group: Group, member: Member) -> None:
    _remove(group, member, "MEMBER_LEFT", "member_leave",
            f"explicit `LeaveGroup` request for ({member.member_id}) members.")


def _expire(group: Group, member: Member) -> None:
    _remove(group, member, "MEMBER_SESSION_EXPIRED", "session_timeout",
            f"removing member {member.member_id} on heartbeat expiration.")


def _remove(group: Group, member: Member, event_type: str, reason_code: str, reason_raw: str) -> None:
    """A member gone (LeaveGroup or session expiry) and the rebalance it triggers."""
    group.members.remove(member)
    group.emit(event_type, member_id=member.member_id, group_instance_id=member.instance_id,
               reason_code=reason_code, leader_id=group.members[0].member_id)
    group.prepare(reason_raw, reason_code)
    group.complete()


def _static_restart(group: Group) -> None:
    """KIP-345: a static member back within its session timeout gets a new id and no rebalance."""
    old = group.members[group.rng.randrange(1, len(group.members))]  # not the leader (that would rejoin)
    new_id = f"{old.client_id}-{uuid.UUID(int=group.rng.getrandbits(128), version=4)}"
    group.emit("STATIC_MEMBER_REPLACED", member_id=new_id, group_instance_id=old.instance_id,
               supported_protocols=[group.assignor], generation=group.generation,
               leader_id=group.members[0].member_id, raw=f"replaced {old.member_id}")
    old.member_id = new_id


def _crash_loop(group: Group) -> None:
    """A member that crashes right after it is assigned: expiry, then it joins again with a new id."""
    victim = group.members[-1]
    group.tick(45_000, 50_000)
    _expire(group, victim)
    group.tick(2_000, 10_000)
    member = group.new_member()
    group.join_new(member)
    group.prepare(f"Adding new member {member.member_id} with group instance id null; client reason: not provided",
                  "member_join")
    group.complete()


def _first_generation(group: Group, size: int) -> None:
    group.emit("GROUP_EMPTY", generation=0, reason_raw="group created by join", reason_code="group_created")
    first = group.new_member()
    group.join_new(first)
    group.prepare(f"Adding new member {first.member_id} with group instance id {first.instance_id or 'null'}; "
                  "client reason: not provided", "member_join")
    for _ in range(size - 1):
        group.tick(10, 600)
        group.join_new(group.new_member())
    group.complete()


def simulate_group(index: int, seed: int, budget: int, topics: dict[str, int]) -> list[dict[str, Any]]:
    """One group's events until it has used ``budget`` of them or a few more (its last trigger's), so the run
    has at least the events asked for."""
    rng = random.Random(seed * 1_000_003 + index)
    names = rng.sample(sorted(topics), rng.randint(1, 3))
    assignor = rng.choices([a for a, _ in ASSIGNORS], [w for _, w in ASSIGNORS])[0]
    group = Group(group_id=f"svc-{index % 997:03d}-group-{index:05d}", assignor=assignor,
                  topics={t: topics[t] for t in names}, static=rng.random() < STATIC_SHARE,
                  storm=rng.random() < STORM_SHARE, rng=rng, now=BASE_MS + rng.randrange(DAY_MS // 4))
    _first_generation(group, rng.randint(3, 10))
    pause_ms = 30_000 if group.storm else 20 * 60_000
    while group.evidence < budget:
        group.tick(0.2 * pause_ms, 1.8 * pause_ms)
        _trigger(group)
    return group.events


def topic_pool(seed: int) -> dict[str, int]:
    rng = random.Random(seed)
    return {f"topic-{k:03d}": rng.choice(PARTITION_COUNTS) for k in range(TOPIC_POOL)}


def budgets(n_events: int, n_groups: int, seed: int) -> list[int]:
    """Events per group: around the mean, heavier for a few, summing to ``n_events``."""
    rng = random.Random(seed + 7)
    weights = [rng.lognormvariate(0, 0.5) for _ in range(n_groups)]
    scale = n_events / sum(weights)
    return [max(12, round(w * scale)) for w in weights]


def generate(n_events: int, n_groups: int, seed: int) -> Iterator[list[dict[str, Any]]]:
    topics = topic_pool(seed)
    for index, budget in enumerate(budgets(n_events, n_groups, seed)):
        yield simulate_group(index, seed, budget, topics)


# --- inputs ---------------------------------------------------------------------------------------------------------

CHUNK_GROUPS = 500  # groups simulated at once by one process: ~100 MB of event dicts at 100 events a group
FRAME_EVENTS = 500  # events per pickled frame of a run file: what a merge holds per run
WRITER = "writer.pid"  # the process writing the inputs, until inputs.json says they are complete
DUMPED = ("GENERATION_SNAPSHOT", "GROUP_EMPTY", "GROUP_DEAD")  # the events a dump's GroupMetadata records show


def _coordinator(group_id: str) -> tuple[int, int]:
    """(offsets partition, broker): Kafka's hash rule, partition leaders spread over the brokers."""
    partition = partition_for(group_id, OFFSETS_PARTITIONS)
    return partition, partition % BROKERS


def write_inputs(work: Path, n_events: int, n_groups: int, seed: int, mode: str, *, workers: int | None = None,
                 chunk_groups: int = CHUNK_GROUPS) -> tuple[list[Path], dict[str, int]]:
    """The input files (reused when ``work`` already holds them) and what was generated, written by ``workers``
    processes (default: one per core) from chunks of ``chunk_groups`` groups; neither changes a byte."""
    marker = work / "inputs.json"
    if marker.exists():
        saved = json.loads(marker.read_text())
        return [Path(p) for p in saved["files"]], saved["counts"]
    _refuse_if_being_written(work)
    shutil.rmtree(work, ignore_errors=True)
    (work / "inputs").mkdir(parents=True)
    (work / WRITER).write_text(str(os.getpid()))
    runs = work / "runs"
    runs.mkdir()
    begun = time.perf_counter()
    shares = budgets(n_events, n_groups, seed)
    chunks = [(start, shares[start:start + chunk_groups]) for start in range(0, n_groups, chunk_groups)]
    counts = {"evidence": 0, "rows": 0, "generations": 0}
    # fork: the children inherit sys.path and the imported modules, and need nothing pickled but the arguments
    with multiprocessing.get_context("fork").Pool(workers or os.cpu_count() or 1) as pool:
        simulate = partial(_simulate_chunk, runs, seed, topic_pool(seed), mode == "rendered")
        for chunk_counts in pool.imap_unordered(simulate, enumerate(chunks)):
            for key, value in chunk_counts.items():
                counts[key] += value
        simulated = time.perf_counter() - begun
        n_runs = len(chunks)
        tasks = [("broker", b) for b in range(BROKERS)]
        tasks += [("dump", p) for p in range(OFFSETS_PARTITIONS)] if mode == "rendered" else []
        written = dict(pool.imap_unordered(partial(_write_task, work, runs, n_runs, mode), tasks))
    files = [f for task in tasks for f in written[task]]  # brokers in order, then dumps by partition
    shutil.rmtree(runs)
    marker.write_text(json.dumps({"files": [str(p) for p in files], "counts": counts}))
    (work / WRITER).unlink()
    peak_mb = max(resource.getrusage(who).ru_maxrss for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    print(f"generated in {time.perf_counter() - begun:.1f} s ({simulated:.1f} s simulating {len(chunks)} chunk(s) "
          f"of {chunk_groups} groups, then the merge and render) on {workers or os.cpu_count()} process(es); "
          f"peak RSS of one process {peak_mb / 1024:.0f} MB")
    return files, counts


def _refuse_if_being_written(work: Path) -> None:
    """A second run asking for the same inputs while a first still writes them (1e7 takes tens of minutes) would
    delete the first's files and start again: it stops instead."""
    try:
        pid = int((work / WRITER).read_text())
    except (OSError, ValueError):
        return  # no writer
    try:
        if pid <= 0:
            return
        os.kill(pid, 0)
    except ProcessLookupError:
        return  # it died: what it left is removed and written again
    except PermissionError:
        pass  # alive, another user's
    raise SystemExit(f"{work} is being written by process {pid}: wait until {work / 'inputs.json'} exists")


def _simulate_chunk(runs: Path, seed: int, topics: dict[str, int], dumps: bool,
                    chunk: tuple[int, tuple[int, list[int]]]) -> dict[str, int]:
    """One chunk of groups simulated and spilled as sorted runs: ``runs/broker-B/NNNNN`` and (for rendered
    inputs) ``runs/dump-P/NNNNN``, NNNNN the chunk's number, which is the merge order."""
    number, (start, shares) = chunk
    per_broker: dict[int, list[dict[str, Any]]] = {}
    counts = {"evidence": 0, "rows": 0, "generations": 0}
    for index, budget in enumerate(shares, start):
        events = simulate_group(index, seed, budget, topics)
        counts["rows"] += len(events)
        counts["evidence"] += sum(e.get("reason_code") != "member_metadata_change" for e in events)
        counts["generations"] += sum(e["event_type"] == "GENERATION_SNAPSHOT" for e in events)
        per_broker.setdefault(_coordinator(events[0]["group_id"])[1], []).extend(events)
    for broker, events in per_broker.items():
        ordered = _in_time_order(events)
        _spill(runs / f"broker-{broker}" / f"{number:05d}", ordered)
        if dumps:
            per_partition: dict[int, list[dict[str, Any]]] = {}
            for event in ordered:
                if event["event_type"] in DUMPED:
                    per_partition.setdefault(_coordinator(event["group_id"])[0], []).append(event)
            for partition, records in per_partition.items():
                _spill(runs / f"dump-{partition}" / f"{number:05d}", records)
    return counts


def _in_time_order(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(events, key=lambda e: e["ts"])  # stable: a group's own order survives equal times


def _spill(path: Path, events: list[dict[str, Any]]) -> None:
    path.parent.mkdir(exist_ok=True)
    with path.open("wb") as out:
        for begin in range(0, len(events), FRAME_EVENTS):
            pickle.dump(events[begin:begin + FRAME_EVENTS], out, protocol=pickle.HIGHEST_PROTOCOL)


def _read_run(path: Path) -> Iterator[dict[str, Any]]:
    with path.open("rb") as run:
        while True:
            try:
                frame = pickle.load(run)
            except EOFError:
                return
            yield from frame


def merged(directory: Path) -> Iterator[dict[str, Any]]:
    """The runs of ``directory`` as one stream in time order; at equal times, in the runs' (the chunks') order."""
    paths = sorted(directory.iterdir()) if directory.exists() else []
    return heapq.merge(*(_read_run(p) for p in paths), key=itemgetter("ts"))


def _write_task(work: Path, runs: Path, n_runs: int, mode: str, task: tuple[str, int]
                ) -> tuple[tuple[str, int], list[Path]]:
    """One broker's server.log files (or JSON Lines file), or one offsets partition's dump, from its runs."""
    from rebalance_lab.observe.formats import render

    kind, number = task
    events = merged(runs / f"{kind}-{number}")
    inputs = work / "inputs"
    if kind == "dump":
        if not (runs / f"dump-{number}").exists():
            return task, []  # no group of this run lives on the partition
        path = inputs / f"__consumer_offsets-{number}.dump.txt"
        _write_lines(path, render(events, "dump-log", offsets_partitions=OFFSETS_PARTITIONS))
        return task, [path]
    if not (runs / f"broker-{number}").exists():
        return task, []
    if mode == "jsonl":
        path = inputs / f"broker-{number}.jsonl"
        _write_jsonl(path, events)
        return task, [path]
    # Each broker's server.log rotated hourly, as Kafka's log4j configuration does (server.log.YYYY-MM-DD-HH), and
    # one dump per __consumer_offsets partition, as kafka-dump-log --files is run per segment
    flavour = "broker-log-java" if number < BROKERS // 2 else "broker-log-scala"
    return task, _write_hourly(inputs / f"broker-{number}", render(events, flavour, broker_id=number, noise=True))


def _write_lines(path: Path, lines: Iterable[str]) -> None:
    with path.open("w") as out:
        for line in lines:
            out.write(line + "\n")


def _write_hourly(directory: Path, lines: Iterator[str]) -> list[Path]:
    """Lines split by the hour of their ``[yyyy-MM-dd HH:mm:ss,SSS]`` stamp; a line without one stays with the last."""
    directory.mkdir(parents=True, exist_ok=True)
    files: list[Path] = []
    hour = ""
    out = None
    try:
        for line in lines:
            stamp = line[1:14] if line.startswith("[") and line[11:12] == " " else hour
            if stamp != hour or out is None:
                if out is not None:
                    out.close()
                hour = stamp
                path = directory / f"server.log.{stamp.replace(' ', '-') or 'unstamped'}"
                files.append(path)
                out = path.open("a")
            out.write(line + "\n")
    finally:
        if out is not None:
            out.close()
    return sorted(set(files))


def _write_jsonl(path: Path, events: Iterable[dict[str, Any]]) -> None:
    from rebalance_lab.replay.events import write_jsonl

    rows = ({**e, "ts": e["ts"] * 1000, "seq": seq} for seq, e in enumerate(events, 1))
    with path.open("w") as out:
        write_jsonl(rows, out)
