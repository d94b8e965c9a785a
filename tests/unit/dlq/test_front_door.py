"""``dlq/__init__.py``: every name of the front door is declared once in ``_EXPORTS`` and loads from its module."""

from __future__ import annotations

import ast
import importlib
import inspect

import airflow_retry_provider.dlq as dlq


def test_the_type_checking_imports_are_the_exports_and_each_loads_from_its_module() -> None:
    """The imports type checkers read name the same modules as ``_EXPORTS``; ``__all__`` is its names."""
    tree = ast.parse(inspect.getsource(dlq))
    (block,) = [node for node in tree.body if isinstance(node, ast.If)]
    imported = {
        alias.name: node.module.rsplit(".", 1)[1]
        for node in block.body
        if isinstance(node, ast.ImportFrom) and node.module
        for alias in node.names
    }
    assert imported == dlq._EXPORTS
    assert dlq.__all__ == list(dlq._EXPORTS)
    for name, module in dlq._EXPORTS.items():
        assert getattr(dlq, name) is getattr(importlib.import_module(f"{dlq.__name__}.{module}"), name)
