"""Medallion operators: bronze load, silver/gold SQL transforms and extraction, each a ledger work unit."""

from __future__ import annotations

from airflow_retry_provider.operators.extraction import (
    ExtractionRecorder,
    PostgresExtractionOperator,
    connector_run_id,
)
from airflow_retry_provider.operators.medallion import (
    MedallionOperator,
    PostgresBronzeLoadOperator,
    SqlTransformOperator,
)

__all__ = [
    "ExtractionRecorder",
    "MedallionOperator",
    "PostgresBronzeLoadOperator",
    "PostgresExtractionOperator",
    "SqlTransformOperator",
    "connector_run_id",
]
