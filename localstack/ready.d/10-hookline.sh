#!/bin/sh
# LocalStack runs this once its services are ready (docker-compose.yml mounts this folder at
# /etc/localstack/init/ready.d and the repository at /opt/hookline). It creates Hookline's tables from
# template.yaml through localstack/create_tables.py, so there is no second copy of the schema to drift.
set -eu

HOOKLINE_SRC="${HOOKLINE_SRC:-/opt/hookline}"
# LocalStack's own interpreter has boto3 and PyYAML, which is all hookline_local.template needs.
PYTHON=/opt/code/localstack/.venv/bin/python
[ -x "$PYTHON" ] || PYTHON=python3

PYTHONPATH="$HOOKLINE_SRC/layers/core:$HOOKLINE_SRC/localstack" HOOKLINE_TEMPLATE="$HOOKLINE_SRC/template.yaml" \
    "$PYTHON" "$HOOKLINE_SRC/localstack/create_tables.py" --endpoint-url "http://localhost:4566"
