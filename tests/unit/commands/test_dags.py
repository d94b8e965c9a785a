"""``airflow-retry dags install FOLDER``: writes the one line of docs/INSTALL.md, and refuses bad input."""

from __future__ import annotations

from airflow_retry_provider import cli
from airflow_retry_provider.dags import MAINTENANCE_LINE
from tests.conftest import REPO


def test_install_writes_the_line_docs_install_gives(tmp_path, capsys):
    """The file holds the documented line, is the repository's own dags/ file, and a second run keeps it."""
    assert cli.main(["dags", "install", str(tmp_path)]) == 0
    written = (tmp_path / "retry_provider_maintenance.py").read_text(encoding="utf-8")
    assert MAINTENANCE_LINE in written.splitlines()
    assert MAINTENANCE_LINE in (REPO / "docs" / "INSTALL.md").read_text(encoding="utf-8")
    assert written == (REPO / "dags" / "retry_provider_maintenance.py").read_text(encoding="utf-8")
    assert cli.main(["dags", "install", str(tmp_path)]) == 0
    assert "imports the maintenance DAGs" in capsys.readouterr().out


def test_install_refuses_a_missing_folder_and_another_file(tmp_path, capsys):
    """Exit 2 naming the value: no such folder, a file of that name holding something else, a bad name."""
    missing = tmp_path / "nowhere"
    assert cli.main(["dags", "install", str(missing)]) == 2
    assert f"folder '{missing}' is not a directory" in capsys.readouterr().err
    (tmp_path / "mine.py").write_text("print('mine')\n")
    assert cli.main(["dags", "install", str(tmp_path), "--name", "mine.py"]) == 2
    assert "holds something else" in capsys.readouterr().err
    assert (tmp_path / "mine.py").read_text() == "print('mine')\n"
    assert cli.main(["dags", "install", str(tmp_path), "--name", "sub/x.txt"]) == 2
    assert "--name: 'sub/x.txt'" in capsys.readouterr().err


DAG_FILE = """
import pendulum
from airflow.sdk import dag, task
from airflow_retry_provider import apply_profile


@dag(schedule=None, start_date=pendulum.datetime(2026, 1, 1), default_args=apply_profile({{}}, "report"))
def {dag_id}():
    @task{decorator_args}
    def load():
        return 1

    load()


{dag_id}()
"""


def test_check_shows_a_contradicting_retries_that_python_dag_py_cannot(tmp_path, capsys):
    """A task's retries=5 under the 'report' profile: exit 2 and the cluster policy's message; a clean file exits 0."""
    bad = tmp_path / "bad_dag.py"
    bad.write_text(DAG_FILE.format(dag_id="positions_bad", decorator_args="(retries=5)"), encoding="utf-8")
    good = tmp_path / "good_dag.py"
    good.write_text(DAG_FILE.format(dag_id="positions_good", decorator_args=""), encoding="utf-8")
    assert cli.main(["dags", "check", str(bad)]) == 2
    out = capsys.readouterr().out
    assert f"error: {bad}: " in out
    assert "task 'load': retries=5 contradicts retry profile 'report'" in out
    assert cli.main(["dags", "check", str(good)]) == 0
    assert f"ok: {good}: DAG 'positions_good'" in capsys.readouterr().out
    assert cli.main(["dags", "check", str(tmp_path)]) == 2  # a folder: every file, the bad one fails it
    out = capsys.readouterr().out
    assert "positions_good" in out and "retries=5 contradicts" in out


def test_check_names_a_missing_path_and_says_when_nothing_is_found(tmp_path, capsys):
    """No such path: exit 2 naming it; a folder without DAGs: exit 1 saying so."""
    missing = tmp_path / "nowhere.py"
    assert cli.main(["dags", "check", str(missing)]) == 2
    assert f"PATH '{missing}' does not exist" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert cli.main(["dags", "check", str(tmp_path / "empty")]) == 1
    assert "no DAG found in" in capsys.readouterr().out
