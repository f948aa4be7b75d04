"""The replay's most made objects are built by compiled code in the compiled build (issue 20 performance).

A dataclass in a module mypyc compiles is a native class, but the ``__init__`` the dataclass decorator generates
at import is interpreted Python (~1.7 us a call); :class:`~rebalance_lab.replay.generation.Member` and
:class:`~rebalance_lab.replay.whatif.SimMember` (about 1.5 of them a replayed event), and the what-if's rounds,
episodes and the sticky assignors' step-0 result write theirs out.
"""

from __future__ import annotations

import dataclasses

from rebalance_lab.clients.assignors.abstract_sticky import Ownership
from rebalance_lab.replay.episodes import Episode, Facts
from rebalance_lab.replay.generation import Member
from rebalance_lab.replay.whatif import EpisodeInput, SimMember, _Outcome
from tests.support.compiled_build import require_build, run_script

_INITS = """
import json, types
from rebalance_lab import compiled
from rebalance_lab.clients.assignors.abstract_sticky import Ownership
from rebalance_lab.replay.episodes import Episode, Facts
from rebalance_lab.replay.generation import Member
from rebalance_lab.replay.whatif import EpisodeInput, Round, SimMember, _Outcome
made = (Member, SimMember, Round, EpisodeInput, _Outcome, Episode, Facts, Ownership)
print(json.dumps({"status": compiled.status(),
                  "python": [c.__name__ for c in made if isinstance(c.__init__, types.FunctionType)]}))
"""


def test_a_member_keeps_the_dataclass_fields_defaults_equality_and_identity_key() -> None:
    member = Member("m-1", None, "client", session_timeout_ms=45_000, topics=("t",))
    assert member.key == "m-1" and member.rack_id is None and member.owned_cache is None
    assert Member("m-2", "instance-a").key == "instance-a"
    assert Member("m-3", "instance-a", key="given").key == "given"
    assert member == Member("m-1", None, "client", None, None, 45_000, ("t",), None, None, None, "m-1", None)
    assert member != dataclasses.replace(member, client_id="other")
    assert dataclasses.replace(member, group_instance_id="i").key == "m-1"  # replace passes the key it had
    assert [f.name for f in dataclasses.fields(Member)][-2:] == ["key", "owned_cache"]
    simulated = SimMember((("t", 0),), 3, 4, "k")
    assert repr(simulated) == "SimMember(received=(('t', 0),), assigned_gen=3, joined_gen=4, key='k')"


def test_the_compiled_build_makes_members_without_interpreted_code() -> None:
    require_build()
    found = run_script(_INITS)
    assert found == {"status": "compiled", "python": []}


def test_the_written_out_defaults_are_the_declared_ones_and_fresh_per_object() -> None:
    for cls in (Ownership, _Outcome):
        first, second = cls(), cls()
        assert first == second and dataclasses.asdict(first) == {
            f.name: f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
            for f in dataclasses.fields(cls)}
        for f in dataclasses.fields(cls):
            if f.default_factory is not dataclasses.MISSING:
                assert getattr(first, f.name) is not getattr(second, f.name), f.name
    episode = Episode(3, [])
    assert (episode.before, episode.before_known, episode.storm_id) == (None, False, None)
    assert EpisodeInput(episode, Facts(None, None, None, None, None, None, None, None), {}).unknown == {}
