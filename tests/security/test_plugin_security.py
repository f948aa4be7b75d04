"""The pytest plugin's ``rebalance_lab`` fixture takes the security options from its marker like any other."""

from __future__ import annotations

import pytest

from rebalance_lab.api import Emulator
from tests.security.wire import Wire, plain_token


@pytest.mark.rebalance_lab(listener="SASL_PLAINTEXT", sasl_mechanisms=["PLAIN"], users=["alice:alice-secret"])
def test_a_marker_gives_the_fixtures_emulator_a_sasl_listener(rebalance_lab: Emulator) -> None:
    with Wire.connect(rebalance_lab.bootstrap_servers) as wire:
        assert wire.handshake("PLAIN").mechanisms == ["PLAIN"]
        assert wire.authenticate(plain_token("alice", "alice-secret")).error_code == 0


def test_lists_given_for_mechanisms_and_users_are_kept_as_tuples() -> None:
    from rebalance_lab.api import make_config

    config = make_config(listener="SASL_PLAINTEXT", sasl_mechanisms=["PLAIN"], users=["a:b"])
    assert (config.sasl_mechanisms, config.users) == (("PLAIN",), ("a:b",))
    hash(config)
