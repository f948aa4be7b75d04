"""Fault injection: a sans-I/O plan the shell consults per request, and operations on the world.

``plan.py`` decides (pure: counts, matches, verdicts); ``controller.py`` applies the
decisions and the world-level faults (broker down, coordinator move, loading window,
forced rebalance, session expiry) and records every fault as a ``FAULT_INJECTED`` row.
"""

from rebalance_lab.faults.controller import SERVICE_KEY, FaultController, dispatch_with_faults, faults_of
from rebalance_lab.faults.plan import FaultPlan, RequestInfo, Verdict, api_key_of

__all__ = [
    "SERVICE_KEY", "FaultController", "FaultPlan", "RequestInfo", "Verdict", "api_key_of", "dispatch_with_faults",
    "faults_of",
]
