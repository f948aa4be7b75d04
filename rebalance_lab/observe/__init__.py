"""Observers of the coordinator's records: the JSON Lines recorder and the narrator."""
