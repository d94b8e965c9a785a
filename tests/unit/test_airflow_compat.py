"""airflow_compat: the one place that knows what differs between Airflow 3.3 and 3.4."""

from __future__ import annotations

import pytest

from airflow_retry_provider.airflow_compat import keeps_task_state, policies_in, policy_with


@pytest.mark.parametrize(
    ("version", "keeps"),
    [
        ("3.3.2", False),  # 3.3 refuses keep_task_state with a 422
        ("3.3.1rc2", False),  # a 3.3 pre-release, the same
        ("3.4.0b2", True),  # today's 3.4 pre-release takes it
        ("3.4.0", True),  # the final release, when it comes
        ("3.4rc1", True),  # a pre-release without a patch number
        ("3.3rc1", False),  # its 3.3 twin: "3rc1" is minor 3, not 31
        ("3.10.1", True),  # minor 10 is after 4, not before (no string comparison)
        ("4.0.0", True),  # a later major keeps the field
    ],
)
def test_keep_task_state_is_sent_from_3_4_on(version, keeps):
    """Whether an Airflow of that /api/v2/version takes keep_task_state."""
    assert keeps_task_state(version) is keeps


@pytest.mark.parametrize("version", ["", "three", "3", "3.x"])
def test_an_unreadable_version_is_an_error_naming_it(version):
    """A version without two numbers is a ValueError that quotes it."""
    with pytest.raises(ValueError, match=f"cannot read {version!r}"):
        keeps_task_state(version)


class _Ours:
    def evaluation_for(self, context, try_number): ...


class _Other:
    pass


class _Chain:
    def __init__(self, policies):
        self.policies = policies


def test_policies_in_walks_a_chain_and_its_nested_chains_in_order():
    """The policy itself, then every policy of a chain, nested chains included, in order."""
    ours, first, last = _Ours(), _Other(), _Other()
    nested = _Chain([first, _Chain([ours]), last])
    assert [p for p in policies_in(nested) if not isinstance(p, _Chain)] == [first, ours, last]
    assert list(policies_in(None)) == []


@pytest.mark.parametrize(
    ("make_policy", "found"),
    [
        (lambda ours: ours, True),  # the task's own policy
        (lambda ours: _Chain([_Other(), ours]), True),  # last in a chain, after the author's
        (lambda ours: _Chain([_Chain([ours]), _Other()]), True),  # in a chain inside a chain
        (lambda ours: _Chain([_Other()]), False),  # a chain without ours
        (lambda ours: None, False),  # no retry policy at all
    ],
)
def test_policy_with_finds_ours_wherever_the_author_put_it(make_policy, found):
    """The failure callback, the alerts and the breaker find a ClassifiedRetryPolicy in a chain too."""
    ours = _Ours()

    class Task:
        retry_policy = make_policy(ours)

    assert (policy_with(Task(), "evaluation_for") is ours) is found
