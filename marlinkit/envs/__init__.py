"""Environments: the MARLIN corridor worlds and the MAESTRO traffic network."""
