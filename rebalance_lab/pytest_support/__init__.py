"""Helpers of the pytest plugin (:mod:`rebalance_lab.pytest_plugin`): the failure report section, the marker
checks and the codec's warnings."""
