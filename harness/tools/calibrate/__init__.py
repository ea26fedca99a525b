"""``mirrordrill calibrate``: run a drill several times and suggest its expectations from what it measured."""
