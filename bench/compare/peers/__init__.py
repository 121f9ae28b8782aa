"""The peers: each module says how to start its workers and how to enqueue jobs now or at a due time.

A peer is an object with `name`, `worker_commands()` (argv lists, each one worker process, run with the
environment `worker_env()` returns) and `submit(jobs)`, where jobs are (id, due wall time in s or None).
Workers are configured alike: 2 processes of 8 threads (or 16 async jobs for arq), the same post().
"""
