"""SQL templates of the medallion operators (``-- name: x`` blocks in ``medallion.sql``).

``{table}``-style fields are identifiers, filled with the driver's ``sql.Identifier`` (never
string formatting); values are ``%s`` / ``%(name)s`` parameters.
"""

from __future__ import annotations

import functools
import re
from importlib import resources

_NAME = re.compile(r"^-- name: (\w+)\s*$", re.MULTILINE)


@functools.cache
def queries() -> dict[str, str]:
    """Every named statement of medallion.sql."""
    text = resources.files(__name__).joinpath("medallion.sql").read_text("utf-8")
    parts = _NAME.split(text)
    return {name: body.strip().rstrip(";") for name, body in zip(parts[1::2], parts[2::2], strict=True)}


def query(name: str) -> str:
    return queries()[name]
