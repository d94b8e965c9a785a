"""The scripts under bench/ (not a package), imported by name for their tests."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[2] / "bench"


def import_bench(*names: str) -> tuple[ModuleType, ...]:
    """The modules ``names`` of bench/, in order (bench/ is on sys.path only while they import)."""
    sys.path.insert(0, str(BENCH))
    try:
        return tuple(importlib.import_module(name) for name in names)
    finally:
        sys.path.remove(str(BENCH))
