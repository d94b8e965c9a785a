"""SQL templates of the medallion operators (``-- name: x`` blocks in ``medallion.sql``).

``{table}``-style fields are identifiers, filled with the driver's ``sql.Identifier`` (never
string formatting); values are ``%s`` / ``%(name)s`` parameters.
"""

from __future__ import annotations

from airflow_retry_provider import sql


def query(name: str) -> str:
    """One named statement of medallion.sql; ``KeyError`` names an unknown one."""
    return sql.named(__name__, "medallion.sql")[name]
