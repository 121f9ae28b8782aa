#!/bin/sh
# Deploys Hookline's template.yaml once the AWS emulator is ready, through `python -m hookline_local.deploy`
# (build the layer with its makefile, package to the emulator's S3, create the stack, wait). Two callers:
#
# - LocalStack runs it from /etc/localstack/init/ready.d once its services are up (docker-compose.yml beside
#   this folder mounts the folder there and the repository at /opt/hookline);
# - `hookline dev` runs it once the embedded emulator answers its health check (ministack has no ready.d
#   outside its own container), with the variables below set to its stack.
#
# Variables (all optional):
#   HOOKLINE_SRC                the repository (default: /opt/hookline if it holds template.yaml, else the
#                               repository this script is in)
#   HOOKLINE_PYTHON             the Python to deploy with: it needs boto3 and PyYAML, pip and make for the
#                               layer's build (default: LocalStack's own, else python3)
#   HOOKLINE_AWS_ENDPOINT       the emulator (default http://localhost:4566)
#   HOOKLINE_STACK_NAME         default hookline
#   HOOKLINE_STACK_PARAMETERS   template parameters, "Name=Value Name=Value" (values without spaces)
#   HOOKLINE_LAMBDA_PYTHON      major.minor the layer's wheels are for (default: the template's runtime)
#   HOOKLINE_BUILD_DIR, HOOKLINE_CACHE_DIR   artifacts and the layer's cached dependencies (/tmp/hookline/...)
#   HOOKLINE_DEPLOY_OUTPUT      where the created stack is written as JSON (/tmp/hookline/deployed.json)
#   HOOKLINE_FIRST_TICK         0: do not invoke the scheduled functions once at the end (default 1)
set -eu

here=$(cd "$(dirname "$0")" && pwd)
if [ -z "${HOOKLINE_SRC:-}" ]; then
    if [ -f /opt/hookline/template.yaml ]; then
        HOOKLINE_SRC=/opt/hookline
    else
        HOOKLINE_SRC=$(cd "$here/../.." && pwd)
    fi
fi
python="${HOOKLINE_PYTHON:-}"
if [ -z "$python" ]; then
    python=/opt/code/localstack/.venv/bin/python
    [ -x "$python" ] || python=python3
fi
command -v make >/dev/null 2>&1 || {
    echo "10-hookline.sh: make is needed to build the layer (layers/core/Makefile)" >&2
    exit 1
}

set -- --endpoint "${HOOKLINE_AWS_ENDPOINT:-http://localhost:4566}" \
    --template "$HOOKLINE_SRC/template.yaml" \
    --stack-name "${HOOKLINE_STACK_NAME:-hookline}" \
    --build-dir "${HOOKLINE_BUILD_DIR:-/tmp/hookline/build}" \
    --cache-dir "${HOOKLINE_CACHE_DIR:-/tmp/hookline/cache}" \
    --output "${HOOKLINE_DEPLOY_OUTPUT:-/tmp/hookline/deployed.json}"
set -f  # split the parameters on spaces, expand no pattern in them
for parameter in ${HOOKLINE_STACK_PARAMETERS:-}; do
    set -- "$@" --parameter "$parameter"
done
set +f
[ -z "${HOOKLINE_LAMBDA_PYTHON:-}" ] || set -- "$@" --python-version "$HOOKLINE_LAMBDA_PYTHON"
[ "${HOOKLINE_FIRST_TICK:-1}" != 0 ] || set -- "$@" --no-first-tick

# The deploy step reads template.yaml and builds from the repository; nothing is installed.
PYTHONPATH="$HOOKLINE_SRC/localstack:$HOOKLINE_SRC/layers/core${PYTHONPATH:+:$PYTHONPATH}" \
    exec "$python" -m hookline_local.deploy "$@"
