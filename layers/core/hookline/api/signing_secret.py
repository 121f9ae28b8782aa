"""The tenant's own signing-secret rotation: a new secret, shown once, with an overlap for its receivers."""

from __future__ import annotations

from aws_lambda_powertools.event_handler.api_gateway import Router

from hookline.api.context import container
from hookline.api.errors import error_responses
from hookline.api.gate import principal
from hookline.api.jobs import ok_response
from hookline.api.scopes import requires
from hookline.api.views import rfc3339
from hookline.usecases.auth import SECRETS_SCOPE
from hookline.usecases.signing_secrets import rotate_signing_secret
from hookline_client.schemas import SigningSecretRotationRequest, SigningSecretRotationView

router = Router()


@router.post(
    "/v1/signing-secret/rotate",
    summary="Rotate the caller's signing secret",
    description=(
        f"Needs the `{SECRETS_SCOPE}` scope, which a key has only when it was created with it by name. "
        "The answer holds the new secret, this once; the replaced secret signs too for `overlap_s` "
        "(warm executors take up to 60 s to sign with the new one)."
    ),
    tags=["signing secret"],
    operation_id="rotateSigningSecret",
    responses={
        **ok_response(SigningSecretRotationView, "The new secret, shown once"),
        **error_responses(400, 401, 403, 409, 413, 415, 422, 429, 503),
    },
)
@requires(SECRETS_SCOPE)
def rotate(request: SigningSecretRotationRequest) -> SigningSecretRotationView:
    """Makes a fresh secret the caller's current one; 409 signing_secret_changed when another rotation won."""
    who = principal()
    current = container()
    rotation = rotate_signing_secret(current.keys, who.tenant, current.clock.now_ms(), request.overlap_s)
    return SigningSecretRotationView(
        secret=rotation.secret, previous_signs_until=rfc3339(rotation.previous_until_ms)
    )
