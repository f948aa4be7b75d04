"""The users a SASL listener knows: ``--user NAME:PASSWORD`` and ``--users-file`` (PLAIN and SCRAM).

Kafka keeps PLAIN passwords in the listener's JAAS configuration (``user_NAME="PASSWORD"``) and SCRAM
credentials in the cluster metadata (salt, stored key, server key, iterations: ``ScramCredential``).
Here both come from one list of names and passwords; the SCRAM credentials are derived at start with
4096 iterations, the default of ``kafka-storage format --add-scram`` and ``kafka-configs``, and the
minimum Kafka's ``ScramMechanism`` accepts.

File format (``--users-file``): either JSON, an object ``{"alice": "alice-secret", ...}``, or lines
``NAME:PASSWORD`` (the first ``:`` separates; blank lines and lines starting with ``#`` are skipped).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import scramp


SCRAM_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")
SCRAM_ITERATIONS = 4096

# (salt, stored key, server key, iterations): what scramp's server asks for, and Kafka's ScramCredential
ScramCredential = tuple[bytes, bytes, bytes, int]


class UsersError(ValueError):
    """A ``--user`` value or a users file that cannot be read (the message says where and why)."""


def parse_user(spec: str) -> tuple[str, str]:
    """``NAME:PASSWORD`` -> (name, password); the password may contain ``:``."""
    name, sep, password = spec.partition(":")
    if not sep or not name or not password:
        raise UsersError(f"user {spec!r} is not NAME:PASSWORD (both non-empty)")
    return name, password


def read_users_file(path: str | os.PathLike[str]) -> list[tuple[str, str]]:
    """The (name, password) pairs of a users file, JSON or ``NAME:PASSWORD`` lines."""
    try:  # open, not pathlib: serve's listeners import this module at start, and nothing else there needs pathlib
        with open(path, encoding="utf-8") as file:
            text = file.read()
    except OSError as exc:
        raise UsersError(f"cannot read users file {path}: {exc.strerror or exc}") from exc
    if text.lstrip().startswith("{"):
        return _json_users(path, text)
    users: list[tuple[str, str]] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            users.append(parse_user(line.strip()))
        except UsersError as exc:
            raise UsersError(f"{path}, line {number}: {exc}") from None
    return users


def _json_users(path: str | os.PathLike[str], text: str) -> list[tuple[str, str]]:
    import json  # here: serve imports this module at every start, and json only for a users file (issue 22)

    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsersError(f"users file {path} is not valid JSON: {exc}") from None
    if not isinstance(data, dict) or not all(isinstance(k, str) and isinstance(v, str) and k and v
                                             for k, v in data.items()):
        raise UsersError(f"users file {path}: expected a JSON object of non-empty name -> password strings")
    return list(data.items())


@dataclass(frozen=True)
class UserStore:
    """Passwords for PLAIN, derived credentials for SCRAM (only for the mechanisms enabled)."""

    passwords: Mapping[str, str]
    scram: Mapping[str, Mapping[str, ScramCredential]] = field(default_factory=dict)  # mechanism -> user -> cred

    @classmethod
    def build(cls, users: Iterable[tuple[str, str]], mechanisms: Iterable[str]) -> UserStore:
        passwords = dict(users)
        scram: dict[str, dict[str, ScramCredential]] = {}
        for mechanism in mechanisms:
            if mechanism in SCRAM_MECHANISMS:
                from scramp import ScramMechanism  # only a serve with SCRAM users needs it (start-up: issue 22)

                m = ScramMechanism(mechanism)
                scram[mechanism] = {
                    name: _credential(m, password) for name, password in passwords.items()
                }
        return cls(passwords, scram)

    def check_password(self, name: str, password: str) -> bool:
        known = self.passwords.get(name)
        return known is not None and known == password

    def scram_credential(self, mechanism: str, name: str) -> ScramCredential | None:
        return self.scram.get(mechanism, {}).get(name)


def _credential(mechanism: scramp.ScramMechanism, password: str) -> ScramCredential:
    salt, stored_key, server_key, iterations = mechanism.make_auth_info(password, iteration_count=SCRAM_ITERATIONS)
    return salt, stored_key, server_key, iterations
