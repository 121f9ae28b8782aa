"""An API whose HOOKLINE_JOB_BUCKETS differs from the count the jobs table was written with refuses job and
schedule requests (500 job_buckets_changed, naming the fix) instead of answering 404 for existing jobs."""

from __future__ import annotations

import dataclasses

import pytest

from hookline.api import context
from hookline.plumbing.settings import Settings
from hookline.plumbing.wiring import Container
from tests.integration.api.conftest import make_key
from tests.support.apigw import ApiClient

pytestmark = pytest.mark.integration


def test_given_items_written_with_four_buckets_when_an_api_with_eight_lists_jobs_then_500_naming_the_fix(
    settings: Settings,
) -> None:
    Container(dataclasses.replace(settings, job_buckets=4)).check_buckets()  # the first start recorded 4
    container = Container(dataclasses.replace(settings, job_buckets=8))
    context.use(container)
    client = ApiClient(make_key(container))

    for path in ("/v1/jobs", "/v1/schedules"):
        response = client.get(path)
        assert response.status == 500
        error = response.json()["error"]
        assert error["code"] == "job_buckets_changed"
        assert "HOOKLINE_JOB_BUCKETS is 8" in error["message"] and "written with 4" in error["message"]
    container.close()
