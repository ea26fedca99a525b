"""A drill: the drill file's schema and validation (file/line/field errors), the engine and its
actions, the replicator adapters, the checker, the results and the baseline, the run folder."""
