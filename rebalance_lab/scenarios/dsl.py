"""The Python form of a scenario: a builder whose methods mirror the YAML actions.

    scenario = (
        ScenarioBuilder("two-step-join", group="g", topics={"t": 3})
        .member("a", protocols=["range"], topics=["t"])
        .join("a", expect="MEMBER_ID_REQUIRED")
        .join("a")
        .sync("a", assignments={"a": {"t": [0, 1, 2]}})
        .build()
    )

It produces exactly what :func:`rebalance_lab.scenarios.loader.load_scenario` produces
from the equivalent YAML.
"""

from __future__ import annotations

from typing import Any

from rebalance_lab.scenarios.consumer_model import consumer_from_dict, consumers_from_dict
from rebalance_lab.scenarios.loader import member_from_dict
from rebalance_lab.scenarios.model import ConsumerSpec, MemberSpec, Scenario, Step


class ScenarioBuilder:
    def __init__(self, name: str, *, group: str = "g", **settings: Any) -> None:
        self._name = name
        self._group = group
        self._settings = settings
        self._members: dict[str, MemberSpec] = {}
        self._consumers: dict[str, ConsumerSpec] = {}
        self._steps: list[Step] = []

    def member(self, alias: str, **spec: Any) -> ScenarioBuilder:
        """Same keys as a YAML member: client_id, protocols, topics, group_instance_id, ..."""
        self._members[alias] = member_from_dict(alias, spec, self._group)
        return self

    def consumer(self, alias: str, **spec: Any) -> ScenarioBuilder:
        """A KIP-848 member's join values, as a YAML ``consumers:`` entry (topics, regex, instance_id, ...)."""
        self._consumers[alias] = consumer_from_dict(alias, spec, self._group)
        return self

    def step(self, action: str, *members: str, **options: Any) -> ScenarioBuilder:
        self._steps.append(Step(action, tuple(members), options))
        return self

    def join(self, *members: str, **options: Any) -> ScenarioBuilder:
        return self.step("join", *members, **options)

    def sync(self, *members: str, **options: Any) -> ScenarioBuilder:
        return self.step("sync", *members, **options)

    def heartbeat(self, *members: str, **options: Any) -> ScenarioBuilder:
        return self.step("heartbeat", *members, **options)

    def leave(self, *members: str, **options: Any) -> ScenarioBuilder:
        return self.step("leave", *members, **options)

    def leave_batch(self, identities: list[Any], **options: Any) -> ScenarioBuilder:
        return self.step("leave_batch", identities=identities, **options)

    def commit(self, member: str | None = None, **options: Any) -> ScenarioBuilder:
        return self.step("commit", *((member,) if member else ()), **options)

    def fetch(self, member: str | None = None, **options: Any) -> ScenarioBuilder:
        return self.step("fetch", *((member,) if member else ()), **options)

    def describe(self, *groups: str, **options: Any) -> ScenarioBuilder:
        return self.step("describe", groups=list(groups) or [self._group], **options)

    def list_groups(self, **options: Any) -> ScenarioBuilder:
        return self.step("list", **options)

    def delete(self, *groups: str, **options: Any) -> ScenarioBuilder:
        return self.step("delete", groups=list(groups) or [self._group], **options)

    def find_coordinator(self, key: str | None = None, **options: Any) -> ScenarioBuilder:
        return self.step("find_coordinator", key=key or self._group, **options)

    def await_(self, *members: str, **options: Any) -> ScenarioBuilder:
        return self.step("await", *members, **options)

    def wait_ms(self, ms: int) -> ScenarioBuilder:
        return self.step("wait_ms", ms=ms)

    def close(self, *members: str) -> ScenarioBuilder:
        return self.step("close", *members)

    def cg_heartbeat(self, *members: str, **options: Any) -> ScenarioBuilder:
        return self.step("cg_heartbeat", *members, **options)

    def cg_describe(self, *groups: str, **options: Any) -> ScenarioBuilder:
        return self.step("cg_describe", groups=list(groups) or [self._group], **options)

    def create_topic(self, topic: str, partitions: int, **options: Any) -> ScenarioBuilder:
        return self.step("create_topic", topic=topic, partitions=partitions, **options)

    def create_partitions(self, topic: str, count: int, **options: Any) -> ScenarioBuilder:
        return self.step("create_partitions", topic=topic, count=count, **options)

    def delete_topic(self, topic: str, **options: Any) -> ScenarioBuilder:
        return self.step("delete_topic", topic=topic, **options)

    def api_versions(self, *keys: int) -> ScenarioBuilder:
        return self.step("api_versions", keys=list(keys))

    def build(self) -> Scenario:
        steps = tuple(self._steps)
        consumers = {**consumers_from_dict({}, steps, self._group), **self._consumers}
        return Scenario(
            name=self._name, group=self._group, members=dict(self._members), steps=steps, consumers=consumers,
            **self._settings,
        ).validate()
