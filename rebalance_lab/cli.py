"""The ``rebalance-lab`` command line."""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import sys
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, NoReturn

# The package's modules are imported where used: ``serve`` first routes dataclasses' compiler through the
# compiled-methods cache (dataclass_cache.py), and every dataclass of the package is made after that (issue 22).
from rebalance_lab import dataclass_cache, deferred_imports

if TYPE_CHECKING:
    import asyncio

    from rebalance_lab.config import ConsumerGroupConfig, EmulatorConfig
    from rebalance_lab.coordinator.early_serve import EarlyServe
    from rebalance_lab.coordinator.server import EmulatorServer
    from rebalance_lab.warm_up import WarmUp

EXIT_USAGE = 2
_gc_paused_for_start = False  # main paused the cyclic collector for a serve process's start (resumed by _serve)


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr and exit code 2."""

    _printing = False

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see --help)\n")

    def _get_formatter(self) -> argparse.HelpFormatter:
        # The terminal's width only for help and usage printed: argparse asks shutil for it (importing shutil with
        # bz2, lzma and zlib, ~3% of serve's start) for every formatter, also those of add_argument's metavar check
        # and of add_subparsers' "rebalance-lab" prog, which wrap no text (issue 22)
        if self._printing:
            return super()._get_formatter()
        return argparse.HelpFormatter(prog=self.prog, width=80)  # its text, if any, is the short prog alone

    @contextlib.contextmanager
    def _printed(self) -> Iterator[None]:
        self._printing = True
        try:
            yield
        finally:
            self._printing = False

    def format_usage(self) -> str:
        with self._printed():
            return super().format_usage()

    def format_help(self) -> str:
        with self._printed():
            return super().format_help()


def _topic(value: str) -> tuple[str, int]:
    """NAME[:PARTITIONS]; the name is checked first and as Kafka checks it (Topic.validate), so the error
    blames the part that is wrong."""
    from rebalance_lab.coordinator.cluster import validate_topic_name
    from rebalance_lab.protocol.errors import KafkaError

    name, _, count = value.partition(":")
    if not name:
        raise argparse.ArgumentTypeError(f"a topic needs a name before the colon: {value!r} (expected "
                                         "NAME[:PARTITIONS])")
    try:
        validate_topic_name(name)
    except KafkaError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    try:
        partitions = int(count) if count else 1
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected NAME[:PARTITIONS], got {value!r}") from None
    if partitions <= 0:
        raise argparse.ArgumentTypeError(f"expected NAME[:PARTITIONS] with PARTITIONS > 0, got {value!r}")
    return name, partitions


def _positive(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {value!r}") from None
    if number <= 0:
        raise argparse.ArgumentTypeError(f"expected a number above 0, got {number}")
    return number


def _non_negative(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {value!r}") from None
    if number < 0:
        raise argparse.ArgumentTypeError(f"expected a number of 0 or more, got {number}")
    return number


def _port(value: str) -> int:
    number = _non_negative(value)
    if number > 65535:
        raise argparse.ArgumentTypeError(f"a port is at most 65535, got {number}")
    return number


def _add_serve(sub: argparse._SubParsersAction[_Parser]) -> None:
    from rebalance_lab.config import JOIN_RACES, Flavor
    from rebalance_lab.security import options as security_options

    serve = sub.add_parser(
        "serve",
        help="run the emulator: a Kafka-protocol server with an emulated cluster and group coordinator",
        description="Run the emulator until interrupted (Ctrl-C stops it cleanly). Prints the bootstrap "
        "address clients should use. Defaults follow Kafka's broker defaults unless noted.",
    )
    net = serve.add_argument_group("network and cluster")
    net.add_argument("--host", default="127.0.0.1", help="address to listen on (default: %(default)s)")
    net.add_argument("--port", type=_port, default=9092,
                     help="port of broker 0; broker i listens on PORT+i; 0 picks free ports (default: %(default)s)")
    net.add_argument("--advertised-host",
                     help="host given to clients in Metadata and FindCoordinator, e.g. the name a container is "
                     "reached by (default: --host)")
    net.add_argument("--advertised-port", type=_port,
                     help="port given to clients for broker 0; broker i advertises PORT+i, e.g. a container's "
                     "published port (default: the port it listens on)")
    net.add_argument("--brokers", type=_positive, default=1, help="number of emulated brokers (default: 1)")
    net.add_argument("--racks", default="", help="comma-separated rack per broker, e.g. a,b,c (default: none)")
    net.add_argument("--cluster-id", default="rebalance-lab-cluster",
                     help="cluster id in Metadata (default: %(default)s)")
    net.add_argument("--flavor", choices=[f.value for f in Flavor], default=Flavor.KAFKA_4.value,
                     help="which coordinator to imitate: kafka-4 (Java, default) or kafka-3 (Scala)")
    net.add_argument("--api-versions", default="codec",
                     help="ApiVersions table: 'codec' (every version we can serve, default), a preset "
                     "('kafka-4', 'kafka-3'), or a JSON file of {api: [min, max]}")
    net.add_argument("--max-request-bytes", type=_positive, default=104_857_600,
                     help="largest request frame accepted (socket.request.max.bytes, default: %(default)s)")
    net.add_argument("--connections-max-idle-ms", type=int, default=600_000, metavar="MS",
                     help="close a connection idle this long; a request waiting for its answer counts as "
                     "activity; negative: never (connections.max.idle.ms, default: %(default)s)")
    topics = serve.add_argument_group("topics")
    topics.add_argument("--topic", action="append", type=_topic, default=[], metavar="NAME[:PARTITIONS]",
                        help="create a topic at start-up (repeatable)")
    topics.add_argument("--num-partitions", type=_positive, default=1,
                        help="partitions of auto-created topics (num.partitions, default: 1)")
    topics.add_argument("--placement", choices=["auto", "striped", "adminutils"], default="auto",
                        help="replica placer: KRaft's StripedReplicaPlacer or AdminUtils; auto picks striped for "
                        "kafka-4 and adminutils for kafka-3 (default: auto)")
    topics.add_argument("--no-auto-create-topics", action="store_true",
                        help="do not create unknown topics on Metadata (auto.create.topics.enable=false)")
    groups = serve.add_argument_group("group coordinator")
    groups.add_argument("--initial-rebalance-delay-ms", type=_non_negative, default=3000,
                        help="group.initial.rebalance.delay.ms (default: 3000, Kafka's default)")
    groups.add_argument("--join-race", choices=JOIN_RACES, default="sampled",
                        help="with a zero initial delay, whether members rejoining at the same time share generation "
                        "1: sampled (as often as on a real broker, seeded by --seed), separate (never: the first "
                        "rejoin completes it alone), together (always: it waits for every member handed an id); "
                        "default: sampled")
    groups.add_argument("--min-session-timeout-ms", type=_non_negative, default=6000,
                        help="group.min.session.timeout.ms: the shortest session a member may ask for "
                        "(default: %(default)s)")
    groups.add_argument("--max-session-timeout-ms", type=_non_negative, default=1_800_000,
                        help="group.max.session.timeout.ms: the longest session a member may ask for "
                        "(default: %(default)s)")
    groups.add_argument("--group-max-size", type=_positive, default=2_147_483_647,
                        help="group.max.size: members per classic group (default: %(default)s)")
    groups.add_argument("--offsets-topic-partitions", type=_positive, default=50,
                        help="offsets.topic.num.partitions: decides each group's coordinator (default: 50)")
    _add_consumer_group_options(serve)
    security_options.add_arguments(serve)
    authz = serve.add_argument_group("authorization (Kafka's StandardAuthorizer)")
    authz.add_argument("--acl-file", metavar="PATH",
                       help='enforce the ACLs of a JSON file {"acls": [...]} (README, "Authorization"); admin '
                            "clients may change them with CreateAcls/DeleteAcls. Without it: no authorizer")
    authz.add_argument("--super-user", action="append", default=[], metavar="PRINCIPAL",
                       help="super.users: a principal allowed everything, e.g. User:admin (repeatable)")
    authz.add_argument("--allow-everyone-if-no-acl-found", action="store_true",
                       help="allow.everyone.if.no.acl.found: a resource without any ACL is open to everyone")
    durable = serve.add_argument_group("durability")
    durable.add_argument("--data-dir", metavar="DIR",
                         help="keep topics, partition logs, committed offsets and groups in DIR (append-only "
                         "segments) so they survive a restart or a kill -9; default: memory only")
    durable.add_argument("--flush-messages", type=_positive, metavar="N",
                         help="flush.messages: fsync after every N messages (default: never; the OS page cache "
                         "keeps written data across a process crash, Kafka's default)")
    durable.add_argument("--flush-ms", type=_positive, metavar="MS",
                         help="flush.ms: fsync written data at least every MS milliseconds (default: never)")
    out = serve.add_argument_group("observing")
    out.add_argument("--record", metavar="FILE", help="write every coordinator event as JSON Lines to FILE")
    out.add_argument("--explain", action="store_true", help="narrate each rebalance step on standard output")
    out.add_argument("--seed", type=int, help="make member ids and placement reproducible")
    out.add_argument("--log-level", default="WARNING", choices=["DEBUG", "INFO", "WARNING", "ERROR"],
                     help="the emulator's own log lines on standard error (default: %(default)s)")
    out.add_argument("--no-warm-up", action="store_true",
                     help="import each API's handler on its first request only; by default serve imports those of a "
                     "client's first minute (and their message classes) right after it listens, a small step per "
                     "event-loop turn, while it waits for requests")
    out.add_argument("--no-early-shell", action="store_true",
                     help="answer no request before asyncio is imported; by default a plain serve (PLAINTEXT, no "
                     "--control-port, --data-dir, --record or --explain) answers its first clients while it imports "
                     "asyncio")
    ctl = serve.add_argument_group("control (testing toolkit)")
    ctl.add_argument("--control-port", type=_port, metavar="PORT",
                     help="serve the HTTP/JSON control endpoint (inspection, faults) on PORT; off by default")
    ctl.add_argument("--control-host", default="127.0.0.1",
                     help="loopback address for --control-port (default: %(default)s; other hosts are refused)")
    ctl.add_argument("--control-token", metavar="TOKEN", default=os.environ.get("REBALANCE_LAB_CONTROL_TOKEN"),
                     help="require 'Authorization: Bearer TOKEN' on every control request (default: the "
                          "REBALANCE_LAB_CONTROL_TOKEN environment variable; none when unset)")
    ctl.add_argument("--manual-clock", action="store_true",
                     help="coordinator timers fire only when time is advanced (POST /advance, or the buttons of "
                          "the live page at the control endpoint's /); needs --control-port")
    ctl.add_argument("--history-limit", type=_non_negative, default=1_000, metavar="N",
                     help="generations (KIP-848: group epochs) kept per group for GET /groups/ID/history, oldest "
                          "dropped first (default: %(default)s; 0 keeps none)")
    ctl.add_argument("--history-total-limit", type=_non_negative, default=10_000, metavar="N",
                     help="history entries kept across all groups (default: %(default)s)")


def _add_consumer_group_options(serve: _Parser) -> None:
    """``group.consumer.*`` (KIP-848 groups, flavor kafka-4), with Kafka 4.4.0's defaults and bounds."""
    cg = serve.add_argument_group("consumer groups (KIP-848, group.protocol=consumer; kafka-4 flavor)")
    for name, default in (("session-timeout-ms", 45_000), ("min-session-timeout-ms", 45_000),
                          ("max-session-timeout-ms", 60_000), ("heartbeat-interval-ms", 5_000),
                          ("min-heartbeat-interval-ms", 5_000), ("max-heartbeat-interval-ms", 15_000),
                          ("assignment-interval-ms", 1_000)):
        cg.add_argument(f"--consumer-{name}", type=_non_negative, default=default,
                        help=f"group.consumer.{name.replace('-', '.')} (default: %(default)s)")
    cg.add_argument("--consumer-max-size", type=_positive, default=2_147_483_647,
                    help="group.consumer.max.size: members per consumer group (default: %(default)s)")
    cg.add_argument("--consumer-assignors", default="uniform,range",
                    help="group.consumer.assignors: server assignors, the first is the default (default: %(default)s)")
    cg.add_argument("--consumer-migration-policy", default="bidirectional",
                    help="group.consumer.migration.policy: bidirectional, upgrade, downgrade or disabled "
                         "(default: %(default)s)")


def _consumer_group_config(args: argparse.Namespace) -> ConsumerGroupConfig:
    """Raises ConsumerGroupConfigError (a ValueError) with Kafka's start-up message for a bad combination."""
    from rebalance_lab.config import ConsumerGroupConfig

    return ConsumerGroupConfig(
        session_timeout_ms=args.consumer_session_timeout_ms,
        min_session_timeout_ms=args.consumer_min_session_timeout_ms,
        max_session_timeout_ms=args.consumer_max_session_timeout_ms,
        heartbeat_interval_ms=args.consumer_heartbeat_interval_ms,
        min_heartbeat_interval_ms=args.consumer_min_heartbeat_interval_ms,
        max_heartbeat_interval_ms=args.consumer_max_heartbeat_interval_ms,
        assignment_interval_ms=args.consumer_assignment_interval_ms,
        max_size=args.consumer_max_size,
        assignors=tuple(a.strip() for a in args.consumer_assignors.split(",") if a.strip()),
        migration_policy=args.consumer_migration_policy,
    )


def build_parser(serve_only: bool = False) -> _Parser:
    """Every command's parser; with ``serve_only`` only serve's, so that serve imports none of the other
    commands' modules (replay, diagram, play, the export formats: start-up, issue 22)."""
    parser = _Parser(
        prog="rebalance-lab",
        description="A protocol-level emulator of Apache Kafka's consumer group coordinator.",
    )
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    _add_serve(sub)
    if serve_only:
        return parser
    from rebalance_lab.observe.diagram_cli import add_diagram_parser
    from rebalance_lab.play_cli import add_play_parser
    from rebalance_lab.replay.cli import add_replay_parser

    demo = sub.add_parser(
        "demo", help="play a rebalance end to end with real Kafka clients, narrated (the main job)",
        description="Start the emulator and real kafka-python consumers; watch a vote pick the assignor, "
        "a member leave, a member crash and expire, and a static member restart without a rebalance.",
    )
    demo.add_argument("--record", default="demo-recording.jsonl", metavar="FILE",
                      help="where the coordinator's recording is written (default: %(default)s)")
    demo.add_argument("--replay-out", default="demo-replay", metavar="DIR",
                      help="where the replay of the recording writes its tables and report.html "
                      "(default: %(default)s)")
    demo.add_argument("--no-replay", action="store_true", help="stop after the emulator part (no replay)")
    demo.add_argument("--no-open", action="store_true", help="do not open the replay's report in a browser")
    _add_diff(sub)
    _add_export(sub)
    add_replay_parser(sub)
    add_diagram_parser(sub)
    add_play_parser(sub)
    return parser


def _host_port(value: str) -> str:
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) <= 65535:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {value!r}")
    return value


def _add_diff(sub: argparse._SubParsersAction[_Parser]) -> None:
    from rebalance_lab.config import Flavor

    diff = sub.add_parser(
        "diff", help="run a scenario against an in-process emulator and a broker, and print the differences",
        description="Run one scenario (YAML, see rebalance_lab/scenarios/FORMAT.md) against an in-process "
        "emulator and against the broker at HOST:PORT, and print where the normalised transcripts differ. "
        "Exit status: 0 same, 1 different, 2 usage error. The broker must run with the scenario's "
        "initial_rebalance_delay_ms and min_session_timeout_ms.",
    )
    diff.add_argument("scenario", metavar="SCENARIO", help="a scenario file (.yaml) or a packaged scenario's name")
    diff.add_argument("--against", required=True, type=_host_port, metavar="HOST:PORT",
                      help="the bootstrap address of the broker to compare with")
    diff.add_argument("--flavor", choices=[f.value for f in Flavor], default=Flavor.KAFKA_4.value,
                      help="the emulator's flavor; match the broker's release line (default: %(default)s)")
    diff.add_argument("--transcripts", action="store_true", help="also print both transcripts")


def _diff(args: argparse.Namespace) -> int:
    import yaml

    from rebalance_lab.config import Flavor
    from rebalance_lab.scenarios import ScenarioError, compare, load_scenario
    from rebalance_lab.scenarios.library import find

    try:
        scenario = load_scenario(find(args.scenario))
    except (OSError, ScenarioError, ValueError, yaml.YAMLError) as exc:
        print(f"rebalance-lab: error: cannot load scenario {args.scenario}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        comparison = compare(scenario, args.against, Flavor(args.flavor))
    except OSError as exc:
        print(f"rebalance-lab: error: cannot reach {args.against}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.transcripts:
        print(f"--- emulator ({args.flavor})\n{comparison.emulator.text()}\n--- {args.against}\n"
              f"{comparison.broker.text()}")
    for failure in comparison.broker.failures:
        print(f"note: the broker missed an expectation: {failure}")
    if comparison.same:
        print(f"{scenario.name}: same transcript on the emulator ({args.flavor}) and {args.against}")
        return 0
    print(f"{scenario.name}: the emulator ({args.flavor}) and {args.against} differ:")
    for line in comparison.diff:
        print(line)
    return 1


def _add_export(sub: argparse._SubParsersAction[_Parser]) -> None:
    from rebalance_lab.observe.formats import FORMATS

    export = sub.add_parser(
        "export", help="write a recording in a real Kafka format (broker log, dump-log, console JSON, client log)",
        description="Render the events of a recording (serve --record) as the artifacts a production cluster "
        "would have: " + "; ".join(f"{f.name}: {f.summary}" for f in FORMATS.values()) + ". Exit status: 0 "
        "written, 2 usage or input error.",
    )
    export.add_argument("recording", metavar="RECORDING.jsonl", help="a recording (JSON Lines, rbl-event/1)")
    export.add_argument("--as", dest="format", required=True, choices=list(FORMATS), metavar="FORMAT",
                        help=f"the format to write: {', '.join(FORMATS)}")
    export.add_argument("--out", required=True, metavar="FILE", help="where to write; - for standard output")
    export.add_argument("--tz", metavar="ZONE",
                        help="time zone of log timestamps, a zoneinfo name such as Europe/Berlin (default: UTC; "
                        "broker and client logs only)")
    export.add_argument("--broker-id", type=_non_negative, metavar="N",
                        help="the broker id lines name (default: each event's coordinator; broker and client logs)")
    export.add_argument("--noise", action="store_true",
                        help="interleave unrelated broker lines, to test a parser's filtering (broker logs only)")


def _export(args: argparse.Namespace) -> int:
    from rebalance_lab.observe.export import ExportError, export_file
    from rebalance_lab.observe.formats import FORMATS

    given = {"tz": args.tz, "broker_id": args.broker_id, "noise": args.noise or None}
    options = {name: value for name, value in given.items() if value is not None}
    for name in sorted(set(options) - FORMATS[args.format].options):
        print(f"rebalance-lab: error: --{name.replace('_', '-')} does not apply to {args.format}", file=sys.stderr)
        return EXIT_USAGE
    try:
        export_file(args.recording, args.format, args.out, **options)
    except ExportError as exc:
        print(f"rebalance-lab: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return 0


def _check_files(args: argparse.Namespace) -> None:
    """The files serve reads or writes, checked before any port is bound, so that the error names the file
    (a ValueError: a usage error, exit 2), not the address the emulator was about to listen on."""
    from rebalance_lab.protocol.versions import VersionTable

    VersionTable.build((), args.api_versions)  # a VersionTableError names the file and what is wrong in it
    if args.record:
        folder = os.path.dirname(os.path.abspath(args.record))  # os.path: serve imports no pathlib (issue 22)
        if not os.path.isdir(folder):
            raise ValueError(f"cannot write the recording {args.record}: there is no directory {folder}")


class _CannotListen(Exception):
    """An address serve could not listen on: a broker's or the control endpoint's (exit 2)."""

    def __init__(self, what: str, address: str, cause: OSError) -> None:
        super().__init__(f"cannot listen on {address} ({what}): {cause.strerror or cause}")


def _broker_addresses(config: EmulatorConfig) -> str:
    if config.port == 0 or config.brokers == 1:
        return f"{config.host}:{config.port}"
    return f"{config.host}:{config.port}-{config.port + config.brokers - 1}"


def config_from_args(args: argparse.Namespace) -> EmulatorConfig:
    from rebalance_lab.config import EmulatorConfig, Flavor, GroupConfig
    from rebalance_lab.security import options as security_options
    from rebalance_lab.security.additional import check as security_check
    from rebalance_lab.security.authorizer import authorizer_for

    racks = tuple(r or None for r in args.racks.split(",")) if args.racks else ()
    if args.control_port is not None:
        from rebalance_lab.control.http import check_loopback

        check_loopback(args.control_host)
    if racks and len(racks) != args.brokers:
        raise ValueError(f"--racks names {len(racks)} racks for {args.brokers} brokers")
    if args.manual_clock and args.control_port is None:
        raise ValueError("--manual-clock needs --control-port: time moves only when the endpoint advances it")
    _check_files(args)
    group = GroupConfig(
        min_session_timeout_ms=args.min_session_timeout_ms,
        max_session_timeout_ms=args.max_session_timeout_ms,
        initial_rebalance_delay_ms=args.initial_rebalance_delay_ms, join_race=args.join_race,
        max_size=args.group_max_size,
        offsets_topic_num_partitions=args.offsets_topic_partitions,
    )
    config = EmulatorConfig(
        host=args.host, port=args.port, advertised_host=args.advertised_host,
        advertised_port=args.advertised_port, brokers=args.brokers, racks=racks, cluster_id=args.cluster_id,
        flavor=Flavor(args.flavor), auto_create_topics=not args.no_auto_create_topics,
        num_partitions=args.num_partitions, topics=tuple(args.topic), placement=args.placement,
        max_request_bytes=args.max_request_bytes, connections_max_idle_ms=args.connections_max_idle_ms,
        api_versions=args.api_versions, group=group, consumer_group=_consumer_group_config(args),
        record_path=args.record, explain=args.explain,
        data_dir=args.data_dir, flush_messages=args.flush_messages, flush_ms=args.flush_ms,
        seed=args.seed, control_port=args.control_port, control_host=args.control_host,
        control_token=args.control_token or None, history_limit=args.history_limit,
        history_total_limit=args.history_total_limit,
        manual_clock=args.manual_clock,
        **security_options.config_fields(args),
        acl_file=args.acl_file, super_users=tuple(args.super_user),
        allow_everyone_if_no_acl_found=args.allow_everyone_if_no_acl_found,
    )
    # a bad ACL file or super user is a usage error (exit 2), before any port is bound
    authorizer_for(config.acl_file, config.super_users, config.allow_everyone_if_no_acl_found)
    security_check(config)  # a bad certificate, users file or combination is a usage error (exit 2)
    return config


async def _serve(config: EmulatorConfig, warm_up: bool = True, early: EarlyServe | None = None) -> None:
    import asyncio
    import signal  # here, as asyncio has: a plain serve's early phase sets its handlers through _signal

    from rebalance_lab.security.additional import bootstrap_of

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    if early is not None and early.stop_requested:  # a signal came between the early loop's end and the handlers
        stop.set()
    emulator = await _start(config, early)
    dataclass_cache.save()  # what start-up compiled, for the next start (before the first client is served)
    if _gc_paused_for_start:
        # start-up's objects (modules, classes, functions, the world) live as long as the process: kept out of
        # every later collection's walk, as the shell does with what a big request leaves (connection.py)
        gc.freeze()
        gc.enable()
    if early is not None:
        early.log_handed_over()
    control = None
    if config.control_port is not None:  # faults reach a serve process only through the endpoint
        from rebalance_lab.control import toolkit

        toolkit.install(emulator, narrate_to=sys.stdout if config.explain else None)
        try:
            control = await toolkit.start_control(emulator)
        except OSError as exc:
            await emulator.stop()
            address = f"{config.control_host}:{config.control_port}"
            raise _CannotListen("the control endpoint, --control-port", address, exc) from exc
    warming: WarmUp | None = None
    try:
        if early is None:  # the early phase printed it as soon as it listened
            _print_listening(config, emulator.bootstrap_servers)
        for spec in config.additional_listeners:  # after the first line, which scripts read for the address
            protocol = spec.partition(":")[0].upper()
            print(f"{protocol} listener; bootstrap servers: {bootstrap_of(emulator.world.services, protocol)}",
                  flush=True)
        if control is not None:
            print(f"control endpoint: {control.url}", flush=True)
            # the token itself is never printed (it may come from the environment, and logs are kept)
            token = "?token=TOKEN (your --control-token, kept as a cookie)" if config.control_token else ""
            print(f"live page: {control.url}/{token}", flush=True)
        warming = _warm_up(loop) if warm_up else None
        await stop.wait()
    finally:
        if warming is not None:
            warming.cancel()
        if control is not None:
            await control.stop()
        await emulator.stop()
        dataclass_cache.save()  # what the requests of this run compiled (the modules of their APIs)
        print("rebalance-lab stopped", flush=True)
    _check_recording(emulator)


async def _start(config: EmulatorConfig, early: EarlyServe | None) -> EmulatorServer:
    """A started emulator: the one taking over from the early shell (coordinator/early_serve.py), or a new one."""
    from rebalance_lab.coordinator.server import EmulatorServer
    from rebalance_lab.emulator import start_emulator

    if early is not None:
        return await EmulatorServer.taking_over(early.shell).take_over(early.shell)
    try:
        return await start_emulator(config)
    except OSError as exc:
        if exc.filename is not None:  # a file, not an address: let main name it
            raise
        raise _CannotListen("the brokers, --port", _broker_addresses(config), exc) from exc


def _print_listening(config: EmulatorConfig, bootstrap_servers: str) -> None:
    print(f"rebalance-lab {config.flavor.value} listening; bootstrap servers: {bootstrap_servers}", flush=True)


def _early_serve(config: EmulatorConfig) -> EarlyServe | None:
    """Listen and answer before asyncio is imported (coordinator/early_serve.py); None if serve stopped meanwhile.

    Only a plain configuration: TLS and SASL need asyncio's transports, the control endpoint is an asyncio
    server, and recording, narration and a data directory are left to the start they were built for."""
    from rebalance_lab.coordinator.early_serve import EarlyServe

    try:
        early = EarlyServe(config)
    except OSError as exc:
        if exc.filename is not None:
            raise
        raise _CannotListen("the brokers, --port", _broker_addresses(config), exc) from exc
    _print_listening(config, early.core.bootstrap_servers)
    if early.run(lambda: _import_asyncio_shell(config)):
        return early
    early.close()
    dataclass_cache.save()  # what this run compiled, for the next start (as a stop after the handoff does)
    print("rebalance-lab stopped", flush=True)
    return None


def _import_asyncio_shell(config: EmulatorConfig) -> None:
    """What the asyncio shell needs, imported in the early phase's thread (not the modules the early loop uses)."""
    _import_asyncio(config)
    import rebalance_lab.coordinator.server
    import rebalance_lab.warm_up  # noqa: F401


def _early_eligible(config: EmulatorConfig, args: argparse.Namespace) -> bool:
    return (not args.no_early_shell and config.listener == "PLAINTEXT" and not config.additional_listeners
            and config.control_port is None and config.data_dir is None and config.record_path is None
            and not config.explain and "asyncio" not in sys.modules)


def _warm_up(loop: asyncio.AbstractEventLoop) -> WarmUp:
    """What a client's first minute needs, made while serve waits for it (rebalance_lab/warm_up.py)."""
    from rebalance_lab.warm_up import WarmUp

    return WarmUp(loop).start()


def _check_recording(emulator: EmulatorServer) -> None:
    """A recording that lost events is an error of the run (exit 1), not only a log line."""
    recorder = sys.modules.get("rebalance_lab.observe.recorder")
    if recorder is None:  # never imported: nothing was recorded (and a stop need not import it to learn that)
        return
    recording = recorder.recording_of(emulator.world)
    if recording is not None and recording.failure() is not None:
        raise RuntimeError(f"the recording {recording.name} is incomplete: {recording.failure()}")


def _demo(args: argparse.Namespace) -> int:
    import importlib.util

    if importlib.util.find_spec("kafka") is None:  # an optional extra since issue 21
        print("rebalance-lab: error: the demo runs real kafka-python consumers: "
              "pip install 'rebalance-lab[clients]'", file=sys.stderr)
        return 1
    from rebalance_lab.demo import replay, run

    status = run(args.record)
    if status != 0 or args.no_replay:
        return status
    return replay(args.record, args.replay_out, open_report=not args.no_open)


def _import_asyncio(config: EmulatorConfig) -> None:
    """Import asyncio without ``ssl`` when no listener is SSL or SASL_SSL (issue 22): asyncio's modules import
    ``ssl`` at their own import, loading OpenSSL (~10% of a plain serve's start), but treat it as optional
    (``try: import ssl except ImportError: ssl = None``, for a Python built without it). A ``None`` in
    ``sys.modules`` makes that import fail, as the import system documents; it is removed at once, so anything
    importing ``ssl`` later gets the real module; only asyncio, in this process, is left without TLS, and no
    listener of this configuration asks it for TLS. Skipped when asyncio is already imported (a caller's
    process) or TLS is configured (security/tls.py then loads ``ssl`` for its context, asyncio with it)."""
    from rebalance_lab.security.listeners import any_tls

    if "asyncio" in sys.modules or "ssl" in sys.modules or any_tls(config):
        return
    sys.modules["ssl"] = None  # type: ignore[assignment]
    try:
        import asyncio  # noqa: F401
    finally:
        if "ssl" in sys.modules and sys.modules["ssl"] is None:
            del sys.modules["ssl"]


def _run_serve(parser: _Parser, args: argparse.Namespace) -> int:
    """Exit 2 for what the user gave (options, files, addresses in use), 1 for a failure of the run."""
    try:
        config = config_from_args(args)
    except ValueError as exc:
        parser.exit(EXIT_USAGE, f"rebalance-lab: error: {exc}\n")
    try:
        early = None
        if _early_eligible(config, args):
            early = _early_serve(config)
            if early is None:
                return 0  # stopped (SIGINT, SIGTERM) before asyncio was imported
        _import_asyncio(config)
        import asyncio  # here: after main paused the collector for a serve process's start

        asyncio.run(_serve(config, warm_up=not args.no_warm_up, early=early))
    except _CannotListen as exc:
        print(f"rebalance-lab: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as exc:  # a file serve was given (--data-dir, a certificate, ...), named by the error
        print(f"rebalance-lab: error: cannot use {exc.filename or 'a file'}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:  # a clear one-line reason instead of a traceback
        print(f"rebalance-lab: error: {exc}", file=sys.stderr)
        return 1
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    given = sys.argv[1:] if argv is None else list(argv)
    if given[:1] == ["serve"] and argv is None:  # the process is serve's own (not a caller's, e.g. a test)
        global _gc_paused_for_start
        # no cyclic collections while start-up imports ~250 modules and makes the world: they would find no
        # garbage and cost ~5% of the start (issue 22); collections resume once the brokers listen
        _gc_paused_for_start = gc.isenabled()
        gc.disable()
        dataclass_cache.install()
        deferred_imports.defer()  # logging without traceback, uuid without platform (not on serve's path)
        from rebalance_lab.coordinator import collector_pause

        collector_pause.serve_process()  # no cyclic collections while a big rebalance parks its requests
    parser = build_parser(serve_only=given[:1] == ["serve"])
    args = parser.parse_args(given)
    import logging  # here: serve's own process imports it through deferred_imports first

    logging.basicConfig(
        level=getattr(args, "log_level", "WARNING"), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    if args.command == "serve":
        return _run_serve(parser, args)
    if args.command == "demo":
        return _demo(args)
    if args.command == "diff":
        return _diff(args)
    if args.command == "export":
        return _export(args)
    if args.command == "replay":
        from rebalance_lab.replay.cli import run_replay

        return run_replay(args)
    if args.command == "diagram":
        from rebalance_lab.observe.diagram_cli import run_diagram

        return run_diagram(args)
    if args.command == "play":
        from rebalance_lab.play_cli import run_play

        return run_play(args)
    return EXIT_USAGE


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
