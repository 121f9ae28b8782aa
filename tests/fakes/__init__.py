"""In-memory fakes of every port in hookline.ports, with the real adapters' semantics.

One module per port group: redis_memory (the Redis data model) with due, stream, limiters, cron, rebuild
and index (the Lua scripts over it); tables with jobs and schedules (DynamoDB's conditional writes and
transactions); keys, callbacks, metrics; faults (failure injection on the Nth call, cancelled transactions).
tests/contract runs the same cases against these and the real adapters, so a fake that drifts from its
adapter fails there. clock holds FrozenClock, the clock a test moves by hand.
"""
