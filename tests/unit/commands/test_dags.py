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
