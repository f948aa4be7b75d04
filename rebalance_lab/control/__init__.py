"""Inspection (JSON-ready views of groups, offsets, generation history) and the HTTP control endpoint."""
