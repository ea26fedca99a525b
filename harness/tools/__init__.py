"""Tools built on drills: sweep, calibrate, bench, existing-cluster plan and cleanup, doctor, up, the Compose file renderer."""
