"""Drill files: their model, their validation (with file/line/field errors), and the engine that runs them."""
