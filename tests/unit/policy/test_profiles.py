"""Retry profiles: built-in ceilings, the retries <-> max_attempts translation, registration."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import timedelta

import pytest

from airflow_retry_provider.policy import (
    PROFILES,
    Backoff,
    Profile,
    UnknownProfileError,
    get_profile,
    max_attempts_for,
    register_profile,
    retries_for,
)
from airflow_retry_provider.policy import profiles as profiles_module
from airflow_retry_provider.policy.profiles import PRODUCT_BACKOFF
from airflow_retry_provider.policy.tries import attempts_spent


@pytest.fixture
def registry() -> Iterator[None]:
    """Restore the profile registry after a test that registers profiles."""
    saved = dict(profiles_module._REGISTRY)
    yield
    profiles_module._REGISTRY.clear()
    profiles_module._REGISTRY.update(saved)


def custom(name: str = "nightly", max_attempts: int = 4) -> Profile:
    return Profile(name, max_attempts, Backoff(), timedelta(hours=3), "Nightly batch.")


@pytest.mark.parametrize(
    ("name", "max_attempts", "retries"),
    [
        ("dashboard", 2, 3),  # one quick retry, plus the infra allowance's 2 reruns
        ("report", 3, 4),  # two retries before the delivery time, plus the allowance
        ("pipeline", 2, 3),  # one late retry for heavy stages, plus the allowance
    ],
)
def test_builtin_ceilings(name: str, max_attempts: int, retries: int) -> None:
    """The built-in profiles have the documented attempt ceilings; retries holds them and the allowance of 2."""
    profile = PROFILES[name]
    assert (profile.max_attempts, profile.infra_allowance, profile.retries) == (max_attempts, 2, retries)
    assert profile.execution_timeout > timedelta(0)
    assert profile.description


@pytest.mark.parametrize(
    ("name", "safe"),
    [
        ("dashboard", True),  # re-runs read-only queries
        ("report", True),  # re-runs its queries
        ("pipeline", False),  # writes: safe only when the task itself is idempotent
    ],
)
def test_builtin_profiles_use_the_product_backoff(name: str, safe: bool) -> None:
    """Every built-in profile backs off 5 min, x2, capped at 1 h, with 25 % jitter; dashboard and report are safe."""
    profile = get_profile(name)
    assert profile.backoff == Backoff(
        base=timedelta(minutes=5), multiplier=2, cap=timedelta(hours=1), jitter=0.25
    )
    assert profile.safe_to_repeat is safe


@pytest.mark.parametrize(("max_attempts", "retries"), [(1, 0), (2, 1), (3, 2), (100, 99)])
def test_translation(max_attempts: int, retries: int) -> None:
    """max_attempts counts the first try, Airflow's retries does not."""
    assert retries_for(max_attempts) == retries
    assert max_attempts_for(retries) == max_attempts


@pytest.mark.parametrize("value", [0, -1, 101, True, 2.0, "3"])
def test_retries_for_validation(value: object) -> None:
    """retries_for refuses what is not an attempt count."""
    with pytest.raises(ValueError, match="max_attempts must be an integer"):
        retries_for(value)  # type: ignore[arg-type]


@pytest.mark.parametrize("value", [-1, 100, False, 1.0, None])
def test_max_attempts_for_validation(value: object) -> None:
    """max_attempts_for refuses what is not a retry count."""
    with pytest.raises(ValueError, match="retries must be an integer"):
        max_attempts_for(value)  # type: ignore[arg-type]


def test_register_profile(registry: None) -> None:
    """A user profile becomes known by its name."""
    profile = register_profile(custom())
    assert get_profile("nightly") is profile
    assert PROFILES["nightly"] is profile


def test_register_duplicate_refused(registry: None) -> None:
    """A name already known is refused unless replace=True."""
    with pytest.raises(ValueError, match="'report' already exists"):
        register_profile(custom("report"))
    replacement = register_profile(custom("report", 5), replace=True)
    assert get_profile("report") is replacement


def test_unknown_profile_lists_names() -> None:
    """An unknown name is a KeyError and a ValueError listing the known names."""
    with pytest.raises(UnknownProfileError) as info:
        get_profile("dashbord")
    head, _, names = str(info.value).partition("; known profiles: ")
    assert head == "unknown retry profile 'dashbord'"
    # the built-in ones, sorted, among any a DAG file of this process registered
    assert {"dashboard", "pipeline", "report"} <= set(names.split(", ")) and names == ", ".join(
        sorted(PROFILES)
    )
    assert isinstance(info.value, KeyError) and isinstance(info.value, ValueError)


def test_profiles_is_read_only() -> None:
    """PROFILES cannot be changed behind register_profile's back."""
    with pytest.raises(TypeError):
        PROFILES["x"] = custom()  # type: ignore[index]


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"name": "Nightly"}, "name"),  # capitals
        ({"name": ""}, "name"),  # empty
        ({"max_attempts": 0}, "max_attempts"),  # no execution at all
        ({"max_attempts": True}, "max_attempts"),  # a bool is not a count
        ({"backoff": None}, "backoff"),  # missing backoff
        ({"execution_timeout": timedelta(0)}, "execution_timeout"),  # would kill every run
        ({"description": None}, "description"),  # not text
        ({"safe_to_repeat": "yes"}, "safe_to_repeat"),  # a claim is True or False
    ],
)
def test_profile_validation(kwargs: dict, field: str) -> None:
    """A bad profile is refused with a message naming the field."""
    values = {
        "name": "nightly",
        "max_attempts": 3,
        "backoff": Backoff(),
        "execution_timeout": timedelta(hours=1),
        "description": "x",
    }
    with pytest.raises(ValueError, match=rf"^{field} must"):
        Profile(**{**values, **kwargs})


@pytest.mark.parametrize("value", [-1, 11, 2.0, None, "2", False])
def test_a_bad_infra_allowance_is_refused_naming_field_and_value(value: object) -> None:
    """A profile's infra_allowance must be an integer from 0 to 10; the error names the field and the value."""
    with pytest.raises(
        ValueError, match=r"infra_allowance must be an integer from 0 to 10, got " + re.escape(repr(value))
    ):
        Profile("p", 2, PRODUCT_BACKOFF, timedelta(minutes=1), "d", infra_allowance=value)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("earlier", "code", "allowance", "spent"),
    [
        (0, 0, 2, 1),  # the first try: one attempt
        (1, 1, 2, 2),  # the code failed before: as Airflow counts
        (2, 0, 2, 1),  # killed twice: within the allowance, this is the author's first attempt
        (3, 0, 2, 2),  # killed three times: the third kill spends an attempt
        (3, 1, 2, 2),  # one code failure, two kills within the allowance
        (2, 0, 0, 3),  # no allowance (the kill switch): every try spends one, Airflow's count
        (1, 5, 2, 2),  # more code rows than earlier tries (a stray row) never counts twice
    ],
)
def test_attempts_spent_count_the_codes_failures_and_kills_beyond_the_allowance(
    earlier, code, allowance, spent
):
    """attempts_spent = code failures + kills beyond the allowance + this try."""
    assert attempts_spent(earlier_tries=earlier, code_failures=code, infra_allowance=allowance) == spent


@pytest.mark.parametrize("field", ["earlier_tries", "code_failures", "infra_allowance"])
def test_attempts_spent_refuses_a_negative_count_naming_it(field):
    """A negative count is an error naming the argument and its value."""
    counts = {"earlier_tries": 1, "code_failures": 0, "infra_allowance": 2, field: -1}
    with pytest.raises(ValueError, match=f"{field} must be an integer >= 0, got -1"):
        attempts_spent(**counts)
