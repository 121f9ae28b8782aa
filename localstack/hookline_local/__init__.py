"""Hookline on AWS emulation, behind `hookline dev`.

The default stack: `emulator` starts ministack (through `ministack_main`, a workaround of one defect),
`deployed` runs the ready hook (localstack/ready.d) that deploys template.yaml through `deploy`, and puts a
loopback `forwarder` and a request bin (`sink`) in front. The hand-wired stack (`hookline dev --hand-wired`):
`gateway` plays API Gateway (REST API, proxy events v1), `runtime` plays the Lambda runtime, `scheduler`
plays EventBridge Scheduler, `services` starts redis-server and moto's server, and `stack` puts them together.
"""
