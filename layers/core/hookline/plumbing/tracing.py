"""What the functions' X-Ray tracing patches: the modules whose calls are worth a subsegment each."""

from __future__ import annotations

# botocore only: each boto3 call (the API's queries, key lookups, the reaper's scans) gets a subsegment.
# http.client stays unpatched on purpose: it carries the JSON client's DynamoDB calls, several per job on the
# hot path, and patched it opens three subsegments a call (send, response, read), each sent to the daemon
# as it ends (Powertools streams every subsegment), a cost of the same order as the call's own
# (docs/performance.md). Powertools' default (patch_all) leaves http.client alone too
# today, as an indirect dependency of botocore; naming the module keeps it so, and patches nothing unused.
TRACED_MODULES = ("botocore",)
