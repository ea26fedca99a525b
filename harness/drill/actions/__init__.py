"""The nemesis and the operator's moves: one module per kind of timeline step (``do:``).

A new fault is a step model in ``harness/drill/schema.py`` (the drill file's format), one
module here with its ``Action`` (how to check it, carry it out and undo it), and its line in
``registry.py``.
"""
