"""ClassifiedRetryPolicy composed with another policy, inside Airflow's own task runner (``dag.test()``)."""

from __future__ import annotations

import psycopg
import pytest
from airflow.sdk import ExceptionRetryPolicy, RetryAction, RetryRule, task

from airflow_retry_provider import apply_profile
from airflow_retry_provider.airflow_compat import chain_policy
from airflow_retry_provider.retry_policy import ClassifiedRetryPolicy, ProfileConflictError
from tests.dag_files import composed_dags

pytestmark = pytest.mark.dags
chains = pytest.mark.skipif(chain_policy() is None, reason="Airflow 3.4's ChainRetryPolicy")


def _letter(dsn: str, dag_id: str) -> dict:
    with psycopg.connect(dsn) as conn:
        cur = conn.execute("SELECT * FROM retry_dead_letters WHERE dag_id = %s", (dag_id,))
        names = [c.name for c in cur.description]
        (row,) = cur.fetchall()
        return dict(zip(names, row, strict=True))


@chains
def test_a_classified_policy_inside_a_chain_files_its_own_class_and_rule(airflow_db, provider_conn):
    """Chain [author's rule, ClassifiedRetryPolicy]: a poison failure's letter has our class, category and rule, not 'exhausted'."""
    run = composed_dags.chain_dag.test()
    (ti,) = run.get_task_instances()
    assert (ti.state, ti.try_number) == ("failed", 1)  # poison: no retry spent
    letter = _letter(provider_conn, "composed_chain_classifies")
    assert (letter["failure_class"], letter["category"]) == ("poison", "not-found")
    assert letter["rule"] and not letter["rule"].startswith("policy:")
    assert letter["reason"].startswith("[attempt 1/3] dead letter poison/not-found: RuntimeError:")


@chains
def test_a_letter_after_the_authors_policy_decided_names_it_and_its_reason(airflow_db, provider_conn):
    """apply_profile after the author's policy: it decides first, and the letter says it did (name and reason)."""
    run = composed_dags.author_dag.test()
    (ti,) = run.get_task_instances()
    assert (ti.state, ti.try_number) == ("failed", 1)
    letter = _letter(provider_conn, "composed_author_policy_decides")
    assert (letter["category"], letter["rule"]) == ("other-policy", "policy:ExceptionRetryPolicy")
    assert "ExceptionRetryPolicy: no access: fix the grant" in letter["reason"]
    assert "hunter2" not in letter["reason"]  # the other policy's text is redacted like a failure's
    assert letter["reason"].startswith("[attempt 1/3] dead letter other-policy:")


def _author_policy() -> ExceptionRetryPolicy:
    return ExceptionRetryPolicy(rules=[RetryRule(exception=PermissionError, action=RetryAction.FAIL)])


@chains
def test_apply_profile_chains_the_authors_policy_first():
    """3.4: the author's policy first, the profile's after it; a second profile replaces the first, not chains it."""
    author = _author_policy()

    @task(retry_policy=author)
    def load() -> None: ...

    with composed_dags._dag("composed_unit"):
        call = apply_profile(load(), "report")
        first = call.operator.retry_policy
        assert isinstance(first, chain_policy()) and first.policies[0] is author
        assert (
            isinstance(first.policies[1], ClassifiedRetryPolicy)
            and first.policies[1].profile.name == "report"
        )
        apply_profile(call, "report", max_attempts=2)
        second = call.operator.retry_policy
        assert [type(p).__name__ for p in second.policies] == [
            "ExceptionRetryPolicy",
            "ClassifiedRetryPolicy",
        ]
        assert second.policies[1].max_attempts == 2


@pytest.mark.skipif(chain_policy() is not None, reason="Airflow 3.3 cannot chain policies")
def test_apply_profile_on_3_3_refuses_to_replace_the_authors_policy_naming_both():
    """3.3: a ProfileConflictError naming the author's policy and ClassifiedRetryPolicy, instead of a silent replace."""
    args = {"retry_policy": _author_policy()}
    with pytest.raises(ProfileConflictError, match="ExceptionRetryPolicy.*ClassifiedRetryPolicy"):
        apply_profile(args, "report")
    assert list(args) == ["retry_policy"] and isinstance(args["retry_policy"], ExceptionRetryPolicy)
