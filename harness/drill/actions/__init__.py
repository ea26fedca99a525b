"""The nemesis and the operator's moves: one module per kind of timeline step (``do:``).

A new fault is a step model (its ``do:`` names and fields: the drill file's format) and an
``Action`` (how to check it, carry it out and undo it, and its ``facts``: whether it may lose or
duplicate records, stop a flow, run against a team's cluster, count as a fault on reports). A
built-in one is a module here with its line in ``registry.py``; anyone else's is one
``register_action(...)`` call, which also makes the drill file accept its step.
"""
