"""The peers: each module says how to start its workers and how to enqueue jobs now or at a due time.

A peer module has a `Peer` (its `name` and `worker_commands()`: argv lists, each one worker process) and
`open_sender(index)`, the bench client's sender for one client thread (client.py): `one(job_id, due_s)`
with the peer's ordinary enqueue call, `many(jobs)` with its batch enqueue. Workers are configured alike:
2 processes of 8 threads (or 16 async jobs for arq; RQ: 16 one-job processes), the same post().
"""
