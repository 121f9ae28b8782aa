"""AWS list prices the bench turns Hookline's measured per-job counts into dollars with.

Region us-east-1, on-demand list prices as the author knew them, written down on 2026-12-03 without
looking them up (this machine reaches no network): check them against the AWS pricing pages before
relying on the dollars. Free tiers, savings plans and reserved nodes are left out.
"""

from __future__ import annotations

PRICES_WRITTEN = "2026-12-03"
REGION = "us-east-1"

# AWS Lambda, x86_64: per GB-second of duration (first 6 billion GB-s a month) and per request.
LAMBDA_PER_GB_S = 0.0000166667
LAMBDA_PER_REQUEST = 0.20 / 1e6
# DynamoDB on-demand (the tables are PAY_PER_REQUEST): per write and per read request unit.
DYNAMODB_PER_WRU = 0.625 / 1e6
DYNAMODB_PER_RRU = 0.125 / 1e6
# ElastiCache for Redis, cache.t4g.small (template.yaml's RedisNodeType default), per node-hour.
ELASTICACHE_NODE_HOUR = 0.032
# API Gateway REST API, per request (first 333 million a month).
API_GATEWAY_PER_REQUEST = 3.50 / 1e6
# API Gateway HTTP API (template.yaml's ApiKind=Http), per request (first 300 million a month; $0.90 for
# the next 700 million). Source: https://aws.amazon.com/api-gateway/pricing/ as remembered, matched on
# 2026-12-05 against stored third-party summaries of that page (no network here to read it). An HTTP API
# meters each started 512 KB of a request as one request (from memory), so a batch submit of up to 5 MB may
# count as up to 10; costs.py prices one request per submit.
API_GATEWAY_HTTP_PER_REQUEST = 1.00 / 1e6
# NAT gateway, per hour (the executors' way out to callback URLs); its per-GB charge is left out.
NAT_GATEWAY_HOUR = 0.045
# EventBridge Scheduler, per invocation (14 million a month are free; left out below).
SCHEDULER_PER_INVOCATION = 1.00 / 1e6
