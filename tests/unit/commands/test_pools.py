"""``airflow-retry pools sync`` without a map says where one is, as a shell user can act on it."""

from __future__ import annotations

import pytest

from airflow_retry_provider.capacity import example_dependencies_path
from airflow_retry_provider.cli import main


def test_sync_without_a_map_names_the_flag_the_setting_and_the_shipped_example(monkeypatch, capsys):
    """No --file and no setting: exit 2, one line naming --file, the setting and the example's path."""
    monkeypatch.delenv("AIRFLOW__RETRY_PROVIDER__DEPENDENCIES_FILE", raising=False)
    code = main(["pools", "sync", "--api-url", "http://127.0.0.1:9", "--api-user", "a"])
    out, err = capsys.readouterr()
    assert (code, out) == (2, "")
    (line,) = err.splitlines()
    assert "--file: missing" in line and "dependencies_file" in line
    assert str(example_dependencies_path()) in line and "set_dependencies" not in line
    assert example_dependencies_path().is_file()


@pytest.mark.parametrize(
    ("dsn", "shown"),
    [
        ("mysql://user:s3cret@db/x", "the scheme 'mysql'"),  # another database: its scheme, no password
        ("host=db password=s3cret", "not a URI"),  # libpq key=value: nothing of it is echoed
    ],
)
def test_a_dsn_of_another_scheme_shows_the_scheme_typed(dsn, shown, capsys):
    """--dsn names the scheme it refused (never the password) and what it expects."""
    code = main(["db", "current", "--dsn", dsn])
    err = capsys.readouterr().err
    assert code == 2 and shown in err and "s3cret" not in err and "postgresql://" in err
