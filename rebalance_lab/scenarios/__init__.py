"""Protocol-level scenarios (YAML or Python) run with raw requests against any broker,
producing normalised transcripts that can be diffed across brokers."""

from rebalance_lab.scenarios.compare import (
    Comparison,
    broker_settings,
    compare,
    compare_async,
    run_on_emulator,
)
from rebalance_lab.scenarios.dsl import ScenarioBuilder
from rebalance_lab.scenarios.loader import load_scenario
from rebalance_lab.scenarios.model import MemberSpec, ProtocolSpec, Scenario, ScenarioError, Step
from rebalance_lab.scenarios.runner import run_scenario, run_scenario_async
from rebalance_lab.scenarios.transcript import Entry, StepRecord, Transcript, diff_transcripts

__all__ = [
    "Comparison",
    "Entry",
    "MemberSpec",
    "ProtocolSpec",
    "Scenario",
    "ScenarioBuilder",
    "ScenarioError",
    "Step",
    "StepRecord",
    "Transcript",
    "broker_settings",
    "compare",
    "compare_async",
    "diff_transcripts",
    "load_scenario",
    "run_on_emulator",
    "run_scenario",
    "run_scenario_async",
]
