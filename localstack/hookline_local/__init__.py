"""The local stack behind `hookline dev`: the same handlers as in AWS, with local stand-ins around them.

`gateway` plays API Gateway (REST API, proxy events v1), `runtime` plays the Lambda runtime,
`scheduler` plays EventBridge Scheduler, `services` starts redis-server and moto's server, `sink` is a
request bin for trying callbacks out, and `stack` puts them together.
"""
