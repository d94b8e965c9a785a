"""Deprecated: ``DeadLetterHook`` is :class:`~airflow_retry_provider.hooks.retry_provider.RetryProviderHook`."""

from __future__ import annotations

import warnings
from typing import Any

from airflow_retry_provider.hooks.retry_provider import RetryProviderHook


class DeadLetterHook(RetryProviderHook):
    """Deprecated alias of :class:`RetryProviderHook` (the hook of every provider table, not only letters)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        warnings.warn(
            "DeadLetterHook is deprecated: use airflow_retry_provider.hooks.retry_provider.RetryProviderHook",
            DeprecationWarning,
            stacklevel=2,
        )
        super().__init__(*args, **kwargs)
