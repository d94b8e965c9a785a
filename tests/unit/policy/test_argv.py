"""The command-line family: the table of (tool, flag) pairs that take a secret, and the generic rules."""

from __future__ import annotations

import pytest

from airflow_retry_provider.policy import argv, redact
from airflow_retry_provider.policy.argv import CliTableError, _row


def test_table_covers_sixty_tools_each_with_its_documentation() -> None:
    """The table names at least 60 tools, and every row cites the tool's documentation."""
    rows = argv.table()
    assert len({tool for row in rows for tool in row.tools}) >= 60
    assert all(row.source.startswith("https://") for row in rows)


def test_every_row_compiles_in_re2() -> None:
    """Each row's pattern compiles in RE2 (so none can make matching slow)."""
    for row in argv.table():
        row.pattern.check()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # a short flag that names nothing (Neo4j)
        (
            "cypher-shell -a bolt://db:7687 -u neo4j -p Neo4jPw1 'RETURN 1'",
            "cypher-shell -a bolt://db:7687 -u neo4j -p *** 'RETURN 1'",
        ),
        # SNMPv3's auth and privacy pass phrases, the protocols kept
        (
            "snmpwalk -v3 -l authPriv -u mon -a SHA -A AuthPw123 -x AES -X PrivPw456 10.0.0.1",
            "snmpwalk -v3 -l authPriv -u mon -a SHA -A *** -x AES -X *** 10.0.0.1",
        ),
        # user:password in a flag's value, = or space
        ("etcdctl --user=root:EtcdPw99 get /x", "etcdctl --user=root:*** get /x"),
        ("etcdctl --user root:EtcdPw99 get /x", "etcdctl --user root:*** get /x"),
        # ipmitool's -P, the user's -U kept
        (
            "ipmitool -I lanplus -H 10.0.0.5 -U admin -P IpmiPw1 chassis status",
            "ipmitool -I lanplus -H 10.0.0.5 -U admin -P *** chassis status",
        ),
        # wget's four password flags
        (
            "wget --ftp-user=etl --ftp-password=FtpPw1 ftp://h/x",
            "wget --ftp-user=etl --ftp-password=*** ftp://h/x",
        ),
        # a positional secret past its arguments (MinIO's mc: alias, URL, access key, then the secret)
        (
            "mc alias set minio https://minio:9000 etl-access MinioSecret1",
            "mc alias set minio https://minio:9000 etl-access ***",
        ),
        # a positional token (vault login <token>); a flag there is not a token
        ("vault login hvs.CAESIJxyz", "vault login ***"),
        ("vault login -method=userpass username=bob", "vault login -method=userpass username=bob"),
        # a secret inside a -X property (kcat)
        (
            "kcat -b k:9092 -X sasl.username=etl -X sasl.password=KafkaPw1 -L",
            "kcat -b k:9092 -X sasl.username=etl -X sasl.password=*** -L",
        ),
        # the existing tools, now rows: mysql's attached -p in an argv list
        (
            "Command '['mysql', '-uroot', '-pHunter2', 'db']' returned",
            "Command '['mysql', '-uroot', '-p***', 'db']' returned",
        ),
        # db2's USING in any case
        ("db2 CONNECT TO sample USER db2inst1 USING Db2Pw1", "db2 CONNECT TO sample USER db2inst1 USING ***"),
        # a token passed as a system property to the Sonar scanner; the project key stays
        (
            "mvn sonar:sonar -Dsonar.projectKey=etl-orders -Dsonar.login=squ_abc123",
            "mvn sonar:sonar -Dsonar.projectKey=etl-orders -Dsonar.login=***",
        ),
        # a flag given again on the tool's line; name=value keeps the name
        (
            "kubectl create secret generic partner --from-literal=api=Xyz_pw1 --from-literal=seed=Seed_2",
            "kubectl create secret generic partner --from-literal=api=*** --from-literal=seed=***",
        ),
        # a secret store's value flags
        (
            "az keyvault secret set --vault-name kv --name db-pw --value S3cret_kv1",
            "az keyvault secret set --vault-name kv --name db-pw --value ***",
        ),
        (
            "aws ssm put-parameter --name /etl/db --value Ssm_pw_1 --type SecureString",
            "aws ssm put-parameter --name /etl/db --value *** --type SecureString",
        ),
    ],
)
def test_table_rows_hide_their_values(text: str, expected: str) -> None:
    """Each kind of row (attached, separate, either, equals, positional, user:secret) hides its value only."""
    assert redact(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # user:secret after --user / -u / -U on any tool
        ("sometool --user etl:ToolPw1 --verbose", "sometool --user etl:*** --verbose"),
        ("othertool -u admin:Adm1nPw sync", "othertool -u admin:*** sync"),
        # a uid:gid is a number, a URL is a URL: both kept
        ("docker run -u 1000:1000 etl:latest", "docker run -u 1000:1000 etl:latest"),
        (
            "beeline -u jdbc:hive2://hive:10000/default -n etl",
            "beeline -u jdbc:hive2://hive:10000/default -n etl",
        ),
    ],
)
def test_generic_user_pair(text: str, expected: str) -> None:
    """A user:secret pair after --user, -u or -U is hidden for any tool; numbers and URLs are kept."""
    assert redact(text) == expected


def test_a_bad_row_names_its_field() -> None:
    """A row with an unknown value kind is refused with an error naming the row and the field."""
    with pytest.raises(CliTableError, match=r"rows\[3\]\.value: 'glued'"):
        _row(3, {"tools": ["x"], "flag": "-p", "value": "glued", "source": "https://x"})


def test_rows_stay_fast_on_a_text_of_their_tools_and_flags() -> None:
    """A bounded text made of every tool and flag runs every row, in time linear in the text."""
    import time

    text = (" ".join(f"{row.tools[0]} {row.flag} '" for row in argv.table()) * 20)[:16_384]
    started = time.process_time()
    argv.find(text, text.lower())
    assert time.process_time() - started < 1.0
