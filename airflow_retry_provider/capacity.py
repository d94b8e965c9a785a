"""Capacity by the real dependency: a declarative map of shared dependencies -> Airflow pools.

A dependency is something many tasks share and that saturates (a positions database, a
partner API): it has a number of slots, and each task takes a weight of them. The map is
YAML (``dependencies.example.yaml``) or Python, and ``airflow-retry pools sync`` turns it into
Airflow pools. Tasks say ``dependency=`` and ``weight=``; :func:`uses` and
:func:`apply_capacity` turn that into ``pool`` / ``pool_slots`` and refuse, when the DAG is
parsed, an unknown dependency or a weight larger than its pool (Airflow itself only warns,
and the task waits forever).

Which map: the one you pass, else the one registered with :func:`set_dependencies`, else the
YAML file named by ``[retry_provider] dependencies_file``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Annotated, Any

from annotated_types import Ge
from pydantic import BaseModel, BeforeValidator, ConfigDict, PlainValidator, Strict, ValidationError
from pydantic_core import ErrorDetails, PydanticCustomError

from airflow_retry_provider.policy.breaker import BreakerSettings, BreakerSettingsError
from airflow_retry_provider.policy.fields import FieldError

if TYPE_CHECKING:
    from airflow_retry_provider.hooks.airflow_api import ApiCredentials

DEFAULT_WEIGHTS: Mapping[str, int] = MappingProxyType({"heavy": 2, "light": 1})
_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,256}$")
_NAME_RULE = "dependency name must be letters, digits, '_', '-' or '.'"


class CapacityError(FieldError):
    """A dependency map or a task's use of it is wrong (raised when the DAG is parsed).

    ``path`` names where: the map's file, ``dependency 'name'`` or ``task 'id'`` (empty when
    the problem is not at one place).
    """


# -- the map's fields, checked by pydantic ------------------------------------------------------


def _name(value: object) -> str:
    if not isinstance(value, str) or not _NAME.match(value):
        raise PydanticCustomError("capacity", f"{_NAME_RULE}, got {value!r}")
    return value


def _breaker(value: object) -> BreakerSettings:
    if isinstance(value, BreakerSettings):
        return value
    try:
        return BreakerSettings.from_value(value)
    except BreakerSettingsError as exc:
        raise PydanticCustomError("capacity", exc.problem) from None


Count = Annotated[int, Strict(), Ge(1)]  # a bool is not a count


class _Entry(BaseModel):
    """One dependency's settings as the map writes them (its name is the key)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    slots: Count
    include_deferred: bool = False
    description: Annotated[str, BeforeValidator(lambda v: "" if v is None else v)] = ""
    breaker: Annotated[BreakerSettings, PlainValidator(_breaker)] = BreakerSettings(enabled=False)


def _slots_alone(value: object) -> object:
    """A dependency written as a number is its slots: ``positions_db: 2``."""
    return {"slots": value} if isinstance(value, int) and not isinstance(value, bool) else value


class _MapFile(BaseModel):
    """The map as YAML or a dict writes it; no value for a key is its default."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    dependencies: Annotated[
        dict[
            Annotated[str, BeforeValidator(str), PlainValidator(_name)],
            Annotated[_Entry, BeforeValidator(_slots_alone)],
        ],
        BeforeValidator(lambda v: v or {}),
    ] = {}
    weights: Annotated[
        dict[Annotated[str, BeforeValidator(str)], Count],
        BeforeValidator(lambda v: dict(DEFAULT_WEIGHTS) if v is None else v),
    ] = dict(DEFAULT_WEIGHTS)


# pydantic's complaints about a value, in the map's words
_MUST_BE = {
    "int_type": "must be an integer >= 1, got {!r}",
    "greater_than_equal": "must be an integer >= 1, got {!r}",
    "bool_type": "must be true or false, got {!r}",
    "string_type": "must be text",
}


def _complaint(errors: list[ErrorDetails]) -> str:
    """Pydantic's first complaint about a map, in the map's words (unknown keys before anything else)."""
    unknown = [e for e in errors if e["type"] == "extra_forbidden"]
    error = (unknown or errors)[0]
    loc, kind = error["loc"], error["type"]
    keys = sorted(str(e["loc"][-1]) for e in unknown if e["loc"][:-1] == loc[:-1])
    must_be = _MUST_BE.get(kind, "").format(error["input"])
    match loc:
        case () if kind == "model_type":
            return "expected a mapping with 'dependencies' and 'weights'"
        case (_,) if kind == "extra_forbidden":
            return f"unknown top-level keys {keys}"
        case ("dependencies",):
            return "'dependencies' must map names to settings"
        case ("weights",):
            return "'weights' must map names to integers"
        case ("weights", key):
            return f"weight {key!r} {must_be}"
        case ("dependencies", name) if kind == "model_type":
            return f"dependency {name!r} must be a mapping or a number of slots"
        case ("dependencies", name, _) if kind == "extra_forbidden":
            return f"dependency {name!r} has unknown keys {keys}"
        case ("dependencies", name, "slots") if kind == "missing":
            return f"dependency {name!r} needs 'slots'"
        case ("dependencies", name, field_name) if must_be:
            return f"dependency {name!r}: {field_name} {must_be}"
        case ("dependencies", name, field_name) if field_name != "[key]":
            return f"dependency {name!r}: {error['msg']}"
    return str(error["msg"])


def _validated(data: object, path: str) -> _MapFile:
    try:
        return _MapFile.model_validate(data)
    except ValidationError as exc:
        raise CapacityError(_complaint(exc.errors(include_url=False)), path=path) from None


@dataclass(frozen=True)
class Dependency:
    """A shared dependency and the Airflow pool that guards it.

    :param name: the dependency's name, also the pool's name.
    :param slots: how many weight units it takes at once (the pool's slots).
    :param include_deferred: whether deferred tasks keep their slots (Airflow's pool option).
    :param description: what it is and why this many slots.
    :param breaker: when its circuit breaker opens and closes; off unless given (docs/BREAKER.md).
    """

    name: str
    slots: int
    include_deferred: bool = False
    description: str = ""
    breaker: BreakerSettings = field(default_factory=lambda: BreakerSettings(enabled=False))

    def __post_init__(self) -> None:
        if not isinstance(self.name, str):
            raise CapacityError(f"{_NAME_RULE}, got {self.name!r}")
        settings = {key: getattr(self, key) for key in _Entry.model_fields}
        self._take(_validated({"dependencies": {self.name: settings}}, "").dependencies[self.name])

    def _take(self, entry: _Entry) -> None:
        for key in _Entry.model_fields:
            object.__setattr__(self, key, getattr(entry, key))

    @classmethod
    def _of_entry(cls, name: str, entry: _Entry) -> Dependency:
        """From a map entry pydantic has checked already (the map's ``from_dict``): not checked twice."""
        dependency = cls.__new__(cls)
        object.__setattr__(dependency, "name", name)
        dependency._take(entry)
        return dependency

    @property
    def pool(self) -> str:
        return self.name

    def as_pool(self) -> dict[str, Any]:
        """The body of ``POST /api/v2/pools`` for this dependency."""
        return {
            "name": self.pool,
            "slots": self.slots,
            "description": self.description,
            "include_deferred": self.include_deferred,
        }


@dataclass(frozen=True)
class DependencyMap:
    """Dependencies by name, and named weights (``heavy: 2``, ``light: 1``)."""

    dependencies: Mapping[str, Dependency]
    weights: Mapping[str, int] = field(default_factory=lambda: dict(DEFAULT_WEIGHTS))

    def __post_init__(self) -> None:
        for name, dep in self.dependencies.items():
            if not isinstance(dep, Dependency) or dep.name != name:
                raise CapacityError(f"dependencies[{name!r}] must be a Dependency named {name!r}")
        weights = _validated({"weights": self.weights}, "").weights
        object.__setattr__(self, "dependencies", MappingProxyType(dict(self.dependencies)))
        object.__setattr__(self, "weights", MappingProxyType(weights))

    @classmethod
    def of(cls, *dependencies: Dependency, weights: Mapping[str, int] | None = None) -> DependencyMap:
        """The map in Python: ``DependencyMap.of(Dependency("positions_db", 2), weights={...})``."""
        return cls({dep.name: dep for dep in dependencies}, dict(weights or DEFAULT_WEIGHTS))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str = "dependency map") -> DependencyMap:
        """From ``{"dependencies": {name: {slots, include_deferred, description}}, "weights": {...}}``."""
        parsed = _validated(data, source)
        return cls(
            {name: Dependency._of_entry(name, entry) for name, entry in parsed.dependencies.items()},
            parsed.weights,
        )

    @classmethod
    def from_yaml(cls, text: str, source: str = "<yaml>") -> DependencyMap:
        import yaml

        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise CapacityError(f"not valid YAML: {exc}", path=source) from exc
        return cls.from_dict(data or {}, source)

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> DependencyMap:
        path = Path(path)
        try:
            text = path.read_text("utf-8")
        except OSError as exc:
            raise CapacityError(f"cannot read dependency map {path}: {exc}") from exc
        return cls.from_yaml(text, str(path))

    def weight_of(self, weight: int | str) -> int:
        """A weight name's slots, or an integer weight itself."""
        if isinstance(weight, str):
            try:
                return self.weights[weight]
            except KeyError:
                known = ", ".join(f"{k}={v}" for k, v in sorted(self.weights.items())) or "none"
                raise CapacityError(f"unknown weight {weight!r}; known weights: {known}") from None
        if isinstance(weight, bool) or not isinstance(weight, int) or weight < 1:
            raise CapacityError(f"weight must be a weight name or an integer >= 1, got {weight!r}")
        return weight

    def uses(
        self, dependency: str, weight: int | str = "light", *, task: str | None = None
    ) -> dict[str, Any]:
        """``{"pool": ..., "pool_slots": ...}`` for a task using ``dependency`` with ``weight``.

        CapacityError names the dependency and the weight when the dependency is unknown or the
        weight is larger than its pool (such a task could never run).
        """
        where = f"task {task!r}" if task else ""
        dep = self.dependencies.get(dependency)
        if dep is None:
            known = ", ".join(sorted(self.dependencies)) or "none declared"
            raise CapacityError(f"unknown dependency {dependency!r}; known dependencies: {known}", path=where)
        slots = self.weight_of(weight)
        if slots > dep.slots:
            label = f"{weight!r} ({slots} slots)" if isinstance(weight, str) else f"{slots}"
            raise CapacityError(
                f"weight {label} is larger than dependency {dependency!r} "
                f"(pool of {dep.slots} slots): the task could never run; raise the dependency's "
                "slots or lower the weight",
                path=where,
            )
        return {"pool": dep.pool, "pool_slots": slots}

    def to_dict(self) -> dict[str, Any]:
        return {
            "dependencies": {
                name: {
                    "slots": dep.slots,
                    "include_deferred": dep.include_deferred,
                    "description": dep.description,
                    "breaker": dep.breaker.to_dict(),
                }
                for name, dep in self.dependencies.items()
            },
            "weights": dict(self.weights),
        }


_registered: DependencyMap | None = None


def set_dependencies(dependencies: DependencyMap | None) -> None:
    """Make ``dependencies`` the default map of :func:`uses` and :func:`apply_capacity` (None forgets it)."""
    global _registered
    _registered = dependencies


def example_dependencies_path() -> Path:
    """The shipped ``dependencies.example.yaml``."""
    return Path(__file__).with_name("dependencies.example.yaml")


def load_dependencies(path: str | os.PathLike[str] | None = None) -> DependencyMap:
    """The map at ``path``, else the registered one, else ``[retry_provider] dependencies_file``."""
    if path is not None:
        return DependencyMap.from_file(path)
    if _registered is not None:
        return _registered
    from airflow_retry_provider import settings

    configured = settings.dependencies_file()
    if configured:
        return DependencyMap.from_file(configured)
    raise CapacityError(
        "no dependency map: pass dependencies=, call set_dependencies(), "
        "or set [retry_provider] dependencies_file (AIRFLOW__RETRY_PROVIDER__DEPENDENCIES_FILE)"
    )


def uses(
    dependency: str,
    weight: int | str = "light",
    *,
    dependencies: DependencyMap | None = None,
    task: str | None = None,
) -> dict[str, Any]:
    """Operator kwargs ``{"pool": ..., "pool_slots": ...}``: ``PythonOperator(..., **uses("positions_db", "heavy"))``."""
    return (dependencies or load_dependencies()).uses(dependency, weight, task=task)


def apply_capacity(
    target: Any, dependency: str, weight: int | str = "light", *, dependencies: DependencyMap | None = None
) -> Any:
    """Set ``pool`` / ``pool_slots`` of an operator or a ``@task`` call's result; return ``target``.

    When the dependency has a breaker (its ``breaker:`` in the map), the task is guarded too: it
    is held, spending no try, while the breaker is open, and its tries are reported to it
    (:mod:`airflow_retry_provider.breaker.guard`).
    """
    operator = getattr(target, "operator", target)
    task_id = getattr(operator, "task_id", None)
    chosen = dependencies or load_dependencies()
    kwargs = chosen.uses(dependency, weight, task=task_id)
    operator.pool = kwargs["pool"]
    operator.pool_slots = kwargs["pool_slots"]
    settings = chosen.dependencies[dependency].breaker
    if settings.enabled:
        from airflow_retry_provider.breaker.guard import guard

        guard(operator, dependency, settings)
    return target


# -- pools sync ---------------------------------------------------------------------------------

POOL_FIELDS = ("slots", "description", "include_deferred")


@dataclass(frozen=True)
class PoolChange:
    """What syncing one dependency does to its pool.

    :param pool: the pool's name.
    :param action: ``create``, ``update`` or ``ok`` (already as declared).
    :param drift: for ``update``, each differing field as ``(field, in Airflow, declared)``.
    """

    pool: str
    action: str
    drift: tuple[tuple[str, Any, Any], ...] = ()

    def describe(self) -> str:
        if self.action == "update":
            diffs = ", ".join(f"{name} {old!r} -> {new!r}" for name, old, new in self.drift)
            return f"update {self.pool}: {diffs}"
        return f"{self.action} {self.pool}"


def _normal(key: str, value: Any) -> Any:
    return (value or "") if key == "description" else value


def plan_pools(dependencies: DependencyMap, existing: Mapping[str, Mapping[str, Any]]) -> list[PoolChange]:
    """The change each dependency needs, given Airflow's pools by name (pure: no I/O)."""
    changes = []
    for name in sorted(dependencies.dependencies):
        wanted = dependencies.dependencies[name].as_pool()
        current = existing.get(wanted["name"])
        if current is None:
            changes.append(PoolChange(wanted["name"], "create"))
            continue
        drift = tuple(
            (key, current.get(key), wanted[key])
            for key in POOL_FIELDS
            if _normal(key, current.get(key)) != _normal(key, wanted[key])
        )
        changes.append(PoolChange(wanted["name"], "update" if drift else "ok", drift))
    return changes


def sync_pools(
    dependencies: DependencyMap, credentials: ApiCredentials, *, dry_run: bool = False
) -> list[PoolChange]:
    """Create or update one pool per dependency through the REST API; safe to run twice.

    Returns the changes (``ok`` rows included): what was done, or with ``dry_run`` what would be.
    Pools that are not in the map are left alone.
    """
    from airflow_retry_provider.hooks.airflow_api import AirflowApi, AirflowApiError

    try:
        with AirflowApi(credentials) as api:
            changes = plan_pools(dependencies, api.pools())
            if not dry_run:
                for change in changes:
                    body = dependencies.dependencies[change.pool].as_pool()
                    if change.action == "create":
                        api.create_pool(body)
                    elif change.action == "update":
                        api.update_pool(body)
            return changes
    except AirflowApiError as exc:
        raise CapacityError(f"pools sync via {credentials.base_url}: {exc}") from exc
