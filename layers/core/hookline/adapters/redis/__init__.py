"""The Redis adapters: live indexes, the ready stream, limiters and the cron index, one Lua script a step."""
