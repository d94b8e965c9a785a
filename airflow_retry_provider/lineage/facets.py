"""The two run facets as OpenLineage client classes (imported only where OpenLineage is installed).

``RetryProviderRunFacet`` (key ``airflowRetryProvider``) and ``RetryRunFacet`` (key ``retry``, the
shape of OpenLineage's proposed common retry facet, #4517); their JSON schemas are
``lineage/schemas/`` in the package and docs/lineage/ in the repository.
"""

from __future__ import annotations

from typing import Any

import attr
from openlineage.client.facet_v2 import RunFacet

SCHEMA_BASE_URL = "https://github.com/airflow-retry-provider/airflow-retry-provider/blob/main/docs/lineage/"
"""Where the schemas are published: docs/lineage/ of this repository (each file's ``$id``)."""

RETRY_PROVIDER_SCHEMA = "RetryProviderRunFacet-1.0.0.json"
RETRY_SCHEMA = "RetryRunFacet-1.0.0.json"


@attr.define
class RetryProviderRunFacet(RunFacet):
    """Why a try failed and what was decided, the replay it ran for, or the breaker hold that failed it."""

    failure: dict[str, Any] | None = attr.field(default=None)
    replay: dict[str, Any] | None = attr.field(default=None)
    hold: dict[str, Any] | None = attr.field(default=None)

    @staticmethod
    def _get_schema() -> str:
        return SCHEMA_BASE_URL + RETRY_PROVIDER_SCHEMA


@attr.define
class RetryRunFacet(RunFacet):
    """Which try this is, as OpenLineage's proposed retry facet (#4517) says it."""

    try_number: int = attr.field()
    max_tries: int | None = attr.field(default=None)
    retries_left: int | None = attr.field(default=None)
    original_run_id: str | None = attr.field(default=None)
    previous_run_id: str | None = attr.field(default=None)

    @staticmethod
    def _get_schema() -> str:
        return SCHEMA_BASE_URL + RETRY_SCHEMA
