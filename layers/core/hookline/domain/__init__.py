"""The domain: jobs, schedules, their rules and errors; no I/O and no adapter."""
