"""AWS list prices the bench and the cost model (costs.py) turn Hookline's counts into dollars with.

Region us-east-1, on-demand list prices, written down on PRICES_WRITTEN. This machine reaches no AWS
pricing page: the ElastiCache Serverless rates and minimums were checked that day against a public page
quoting AWS's (SERVERLESS_SOURCE); the others are as the author knew them from the pages named beside
them. Check them against those pages before relying on the dollars. Free tiers, savings plans and
reserved nodes are left out, and so is data transfer out to the internet (the same for every
configuration; 100 GB a month are free).
"""

from __future__ import annotations

PRICES_WRITTEN = "2026-12-05"
REGION = "us-east-1"

# AWS Lambda, x86_64: per GB-second of duration (first 6 billion GB-s a month) and per request.
# https://aws.amazon.com/lambda/pricing/
LAMBDA_PER_GB_S = 0.0000166667
LAMBDA_PER_REQUEST = 0.20 / 1e6

# DynamoDB standard table class. On-demand (TableBilling=OnDemand): per write and per read request unit.
# Provisioned (TableBilling=Provisioned): per write and per read capacity unit-hour.
# https://aws.amazon.com/dynamodb/pricing/on-demand/ and /provisioned/
DYNAMODB_PER_WRU = 0.625 / 1e6
DYNAMODB_PER_RRU = 0.125 / 1e6
DYNAMODB_PER_WCU_HOUR = 0.00065
DYNAMODB_PER_RCU_HOUR = 0.00013

# ElastiCache, Redis OSS engine (template.yaml's replication groups), per node-hour.
# https://aws.amazon.com/elasticache/pricing/
ELASTICACHE_NODE_HOUR_BY_TYPE = {
    "cache.t4g.micro": 0.016,
    "cache.t4g.small": 0.032,
    "cache.t4g.medium": 0.065,
}
# cache.t4g.small, template.yaml's RedisNodeType default.
ELASTICACHE_NODE_HOUR = ELASTICACHE_NODE_HOUR_BY_TYPE["cache.t4g.small"]

# ElastiCache Serverless (CacheKind=Serverless), by ServerlessEngine: data stored per GB-hour, metered at
# no less than the minimum whatever the cache holds, and ElastiCache Processing Units (ECPUs) per command
# (one ECPU per KB transferred by a simple command; commands using more vCPU time, such as Lua scripts,
# use more). https://aws.amazon.com/elasticache/pricing/ ("Serverless").
SERVERLESS_SOURCE = (
    "https://www.usage.ai/blogs/aws/database-savings-plans/elasticache/serverless-pricing/ "
    "(us-east-1 rates quoting AWS; read 2026-12-05)"
)
SERVERLESS_PER_GB_HOUR = {"valkey": 0.084, "redis": 0.125}
SERVERLESS_MIN_GB = {"valkey": 0.1, "redis": 1.0}
SERVERLESS_PER_ECPU = {"valkey": 0.0023 / 1e6, "redis": 0.0034 / 1e6}

# API Gateway REST API, per request (first 333 million a month). https://aws.amazon.com/api-gateway/pricing/
API_GATEWAY_PER_REQUEST = 3.50 / 1e6
# API Gateway HTTP API (template.yaml's ApiKind=Http), per request (first 300 million a month; $0.90 for
# the next 700 million). Source: https://aws.amazon.com/api-gateway/pricing/ as remembered, matched on
# 2026-12-05 against stored third-party summaries of that page (no network here to read it). An HTTP API
# meters each started 512 KB of a request as one request (from memory), so a batch submit of up to 5 MB may
# count as up to 10; costs.py prices one request per submit.
API_GATEWAY_HTTP_PER_REQUEST = 1.00 / 1e6

# Egress=NatGateway: per hour and per GB it processes. https://aws.amazon.com/vpc/pricing/
NAT_GATEWAY_HOUR = 0.045
NAT_GATEWAY_PER_GB = 0.045
# Every public IPv4 address (the NAT gateway's and the NAT instance's Elastic IP), per hour.
# https://aws.amazon.com/vpc/pricing/ ("Public IPv4 Address")
PUBLIC_IPV4_HOUR = 0.005
# Egress=NatInstance: the instance per hour (Linux, on-demand) and its gp3 root volume per GB-month.
# https://aws.amazon.com/ec2/pricing/on-demand/ and https://aws.amazon.com/ebs/pricing/
EC2_HOUR_BY_TYPE = {"t4g.nano": 0.0042, "t4g.micro": 0.0084}
EBS_GP3_PER_GB_MONTH = 0.08

# CloudWatch: a standard-resolution alarm per month, a dashboard per month (an account's first three are
# free). https://aws.amazon.com/cloudwatch/pricing/
CLOUDWATCH_ALARM_MONTH = 0.10
CLOUDWATCH_DASHBOARD_MONTH = 3.00

# EventBridge Scheduler, per invocation (14 million a month are free; left out below).
# https://aws.amazon.com/eventbridge/pricing/
SCHEDULER_PER_INVOCATION = 1.00 / 1e6

# Managed services that schedule HTTP callbacks themselves, for comparison (the bench report prints them):
# (name, $ per million, what is counted, source). None of them needs a cache, a VPC or NAT.
MANAGED_SERVICES = (
    (
        "Google Cloud Tasks",
        0.40,
        "operations (the first million a month free)",
        "https://cloud.google.com/tasks/pricing",
    ),
    (
        "Amazon EventBridge Scheduler",
        1.00,
        "invocations (the first 14 million a month free)",
        "https://aws.amazon.com/eventbridge/pricing/",
    ),
    (
        "Upstash QStash",
        10.00,
        "messages, pay-as-you-go at about $1 per 100,000",
        "https://upstash.com/pricing/qstash",
    ),
)
