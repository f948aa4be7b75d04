"""The ``serve`` options of the security listeners (argparse), kept beside the code they configure."""

from __future__ import annotations

import argparse
from typing import Any

from rebalance_lab.security.listeners import SecurityProtocol
from rebalance_lab.security.mechanisms import MECHANISMS


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sec = parser.add_argument_group("security listeners")
    sec.add_argument("--listener", default="PLAINTEXT", type=str.upper, choices=[p.value for p in SecurityProtocol],
                     help="security protocol of the listener (default: %(default)s)")
    sec.add_argument("--sasl-mechanism", action="append", default=[], type=str.upper, choices=list(MECHANISMS),
                     dest="sasl_mechanisms", help="enabled SASL mechanism (repeatable; SASL listeners: default PLAIN)")
    sec.add_argument("--user", action="append", default=[], metavar="NAME:PASSWORD", dest="users",
                     help="a SASL user, for every enabled mechanism (repeatable)")
    sec.add_argument("--users-file", metavar="FILE",
                     help="SASL users: a JSON object {name: password} or NAME:PASSWORD lines")
    sec.add_argument("--ssl-certfile", metavar="PEM", help="the brokers' certificate chain (SSL, SASL_SSL)")
    sec.add_argument("--ssl-keyfile", metavar="PEM", help="the brokers' private key (default: in --ssl-certfile)")
    sec.add_argument("--additional-listener", action="append", default=[], metavar="PROTOCOL[:PORT]",
                     dest="additional_listeners",
                     help="serve this protocol too, on PORT+i for broker i (0 or none: free ports; repeatable)")
    sec.add_argument("--ssl-cafile", metavar="PEM",
                     help="CA of client certificates: clients must present one (mutual TLS, ssl.client.auth=required)")


def config_fields(args: argparse.Namespace) -> dict[str, Any]:
    """The EmulatorConfig fields of the options above."""
    return {
        "listener": args.listener, "sasl_mechanisms": tuple(args.sasl_mechanisms), "users": tuple(args.users),
        "users_file": args.users_file, "ssl_certfile": args.ssl_certfile, "ssl_keyfile": args.ssl_keyfile,
        "ssl_cafile": args.ssl_cafile, "additional_listeners": tuple(args.additional_listeners),
    }
