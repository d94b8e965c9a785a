"""Values judged by their structure, their key's meaning, their shape and where they stand (issue 54)."""

from __future__ import annotations

import pytest

from airflow_retry_provider.policy import Redacted, redact, redaction, secret_words

UUID = "1f2e3d4c-5b6a-7980-a1b2-c3d4e5f60718"
HEX32 = "b6907d289e10d714a6e88b30761fae22"
SHA = "3b18e512dba79e4c8300dd08aeb37f8e728b8dad"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # any scheme word stays, the credential goes
        (f"Authorization: GenieKey {UUID}", "Authorization: GenieKey ***"),
        (f"headers={{'Authorization': 'Splunk {UUID}'}}", "headers={'Authorization': 'Splunk ***'}"),
        ("Authorization: SSWS 00QCjAl4MlV-WPXM-AbCdEfGh", "Authorization: SSWS ***"),
        ("Proxy-Authorization: Token abc123", "Proxy-Authorization: Token ***"),
        (  # Azure Storage's SharedKey <account>:<signature>: the account's name stays (round twenty-two)
            "Authorization: SharedKey acct:ctzMq410TV3wS7upTBcunJTDLEJwMAZuFPfr0mrrA08=",
            "Authorization: SharedKey acct:***",
        ),
        # AWS's parameters keep their names; Signature= is the key family's
        (
            "Authorization: AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20261204/us-east-1/s3/aws4_request, "
            f"SignedHeaders=host, Signature={SHA}",
            # the key's id hidden by its vendor's shape, its scope readable
            "Authorization: AWS4-HMAC-SHA256 Credential=***/20261204/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=***",
        ),
        # a bare credential: no scheme to keep
        ("Authorization: abcdef123456", "Authorization: ***"),
        # headers named as keys, tokens, secrets and signatures
        ("X-Vault-Token: s.abcdefgh", "X-Vault-Token: ***"),
        ("DD-API-KEY: 0123abcd", "DD-API-KEY: ***"),
        ("X-Hub-Signature-256: sha256=abc123def", "X-Hub-Signature-256: ***"),
        ("X-Splunk-Secret: mysecret1", "X-Splunk-Secret: ***"),
    ],
)
def test_http_headers(text: str, expected: str) -> None:
    """Every Authorization value keeps its scheme word and loses its credential; secret-named headers are hidden."""
    assert redact(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # a credential's shape under a name on no list
        (
            f"GET https://api.example.com/weather?q=London&appid={HEX32} 401",
            "GET https://api.example.com/weather?q=London&appid=*** 401",
        ),
        # readable values stay: numbers, words, a UUID under an id's name, a hash under a hash's name
        (
            f"https://api.example.com/v1/x?page=2&sort=name&id={UUID}",
            f"https://api.example.com/v1/x?page=2&sort=name&id={UUID}",
        ),
        (f"https://ci.example.com/build?commit={SHA}", f"https://ci.example.com/build?commit={SHA}"),
        # the path's resource id beside the query's real secret stays readable
        (
            f"https://acct.blob.core.windows.net/raw/{HEX32}/part-0001.parquet?sv=2022-11-02&sr=b&sig=AbCdEf0123456789AbCdEf%2B%3D",
            f"https://acct.blob.core.windows.net/raw/{HEX32}/part-0001.parquet?sv=2022-11-02&sr=b&sig=***",
        ),
    ],
)
def test_url_query_parameters(text: str, expected: str) -> None:
    """Every query parameter is judged by its name and its shape; a URL's path stays readable beside its secret."""
    assert redact(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Vault AppRole: the secret_id is the credential, the role_id names the role
        (
            f"vault write auth/approle/login role_id={UUID} secret_id='{UUID}'",
            f"vault write auth/approle/login role_id={UUID} secret_id='***'",
        ),
        # ids under id-like keys stay
        (f"token_id={UUID} key_id={UUID}", f"token_id={UUID} key_id={UUID}"),
        # a project key is a name
        ("-Dsonar.projectKey=etl-orders", "-Dsonar.projectKey=etl-orders"),
    ],
)
def test_uuid_shaped_values_by_key(text: str, expected: str) -> None:
    """A UUID-shaped value is a secret under a secret's name and an id under an id's name."""
    assert redact(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "ValueError: Port could not be cast to integer value as 'p@ss'",
            "ValueError: Port could not be cast to integer value as '***'",
        ),
        (
            'parse "redis://:pa:ss@h:6379": invalid port ":ss@h:6379" after host',
            'parse "redis://:***@h:6379": invalid port ":***" after host',
        ),
        ("httpx.InvalidURL: Invalid port: 'pw@db'", "httpx.InvalidURL: Invalid port: '***'"),
        (
            'invalid integer value "s3cr@t" for connection option "port"',
            'invalid integer value "***" for connection option "port"',
        ),
        # a real port number is read
        (
            "Port could not be cast to integer value as '99999'",
            "Port could not be cast to integer value as '99999'",
        ),
    ],
)
def test_a_secret_quoted_back_by_a_parse_error(text: str, expected: str) -> None:
    """A parser's error that quotes the piece of a URI it could not read (a password's start) hides it."""
    assert redact(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "ERROR 1045 (28000): Access denied for user 'etl'@'10.0.0.5' (using password: YES)",
        "Access denied for user 'etl'@'localhost' (using password: NO)",
        "Invalid client secret provided.",
        "error: invalid_client, credentials [unauthorized_client]",
        'FATAL: password authentication failed for user "etl"',
        "token expired",
        "token: expired",
        "password: required",
        "пароль: неверный",  # the same sentence in another language
        "Passwort: abgelaufen",
        f"fatal: remote error: upload-pack: not our ref {SHA}",
        f"fatal: reference is not a tree: {SHA}",
        "<RequestId>4442587FB7D0A2F9</RequestId><HostId>eWJ1ZGdldC1hbmQtaG9zdGlkLXRoYXQtaXMtYmFzZTY0LWVuY29kZWQ=</HostId>",
        '{"RequestId": "eWJ1ZGdldC1hbmQtaG9zdGlkLXRoYXQtaXMtYmFzZTY0"}',
    ],
)
def test_what_on_call_reads_is_kept(text: str) -> None:
    """A key word followed by a word, punctuation or YES/NO, request and host ids and git SHAs stay readable."""
    assert redact(text) == text


@pytest.mark.parametrize(
    ("key", "separator"),
    [
        ("пароль", "="),  # Russian, Ukrainian
        ("密码", "："),  # Chinese, a full-width colon
        ("口令", "="),
        ("密钥", ": "),
        ("パスワード", "="),  # Japanese
        ("暗証番号", "＝"),  # a full-width equals sign
        ("비밀번호", ": "),  # Korean
        ("كلمة المرور", "="),  # Arabic
        ("पासवर्ड", "="),  # Hindi, with its vowel signs
        ("mot_de_passe", "="),
        ("hasło", "="),
        ("heslo", "="),
        ("lösenord", "="),
        ("passord", "="),
        ("adgangskode", "="),
        ("salasana", "="),
        ("κωδικός", "="),
        ("jelszó", "="),
        ("mật khẩu", "="),
        ("รหัสผ่าน", "="),
        ("סיסמה", "="),
        ("رمز", "="),
        ("API 키", ": "),  # Korean "API key"
        ("ключ", "="),
        ("kata sandi", "="),
        ("db_пароль", "="),  # a key made of both scripts
    ],
)
def test_key_words_in_many_scripts(key: str, separator: str) -> None:
    """A key word of any of the listed languages, in any script, hides its value, after full-width separators too."""
    assert redact(f"{key}{separator}Zz9Secret1 user=etl") == f"{key}{separator}*** user=etl"


def test_secret_words_cover_twenty_languages_and_scripts() -> None:
    """The one list of key words holds at least 20 languages, Latin and non-Latin."""
    languages = secret_words.SECRET_WORDS
    assert len(languages) >= 20
    assert {"ru", "zh", "ja", "ko", "ar", "hi"} <= set(languages)


@pytest.mark.parametrize(
    ("text", "hidden"),
    [
        ("connection refused", 0),
        ("password=hunter2", 1),
        ("password=hunter2 token=abc123 postgresql://bob:p4ss@db/x", 3),
        ("password=*** already redacted", 0),
    ],
)
def test_redaction_counts_what_it_hid(text: str, hidden: int) -> None:
    """redaction() gives the text redact() gives and how many values it hid."""
    result = redaction(text)
    assert result == Redacted(redact(text), hidden)


def test_redaction_counts_before_the_cut() -> None:
    """The count is of the whole text's hidden values, also when the text is cut to a limit."""
    result = redaction("password=hunter2 " + "x " * 100 + "token=abc123", limit=40)
    assert result.hidden == 2 and len(result.text) <= 40


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # a credential pair given to an auth argument or a credential's constructor
        (
            "requests.get(url, auth=('etl', 'Req_pw1')) failed",
            "requests.get(url, auth=('etl', '***')) failed",
        ),
        ('new NetworkCredential("etl", "Net_pw1")', 'new NetworkCredential("etl", "***")'),
        # PowerShell's plain-text secure string, Windows' net use
        (
            "ConvertTo-SecureString 'Ps_pw_1' -AsPlainText -Force",
            "ConvertTo-SecureString '***' -AsPlainText -Force",
        ),
        (
            "net use Z: \\\\fs01\\share Winpw2024 /user:CORP\\etl",
            "net use Z: \\\\fs01\\share *** /user:CORP\\etl",
        ),
        # an FTP client's user command
        ("+ ftp -n host <<< 'user etl Ftp_pw_9'", "+ ftp -n host <<< 'user etl ***'"),
        # a YAML block scalar under a secret's key: its indented lines
        ("password: |\n  Multi_line_pw1\nuser: etl", "password: |\n  ***\nuser: etl"),
        # a number parse that quotes a URI's piece; one that quotes a plain value is read
        (
            "ValueError: invalid literal for int() with base 10: 'ss@db'",
            "ValueError: invalid literal for int() with base 10: '***'",
        ),
        (
            "ValueError: invalid literal for int() with base 10: 'N/A x'",
            "ValueError: invalid literal for int() with base 10: '***'",
        ),
        (
            "ValueError: invalid literal for int() with base 10: 'abc'",
            "ValueError: invalid literal for int() with base 10: 'abc'",
        ),
        # a key followed by a particle (Japanese, Korean) or by a connecting word and its object
        ("パスワードは Himitsu99 です", "パスワードは *** です"),
        ("비밀번호는 Bimil123 입니다", "비밀번호는 *** 입니다"),
        ("contraseña de la base de datos: Clave123", "contraseña de la base de datos: ***"),
        ("пароль от базы: Parol123", "пароль от базы: ***"),
        # a colon-separated value is one word: what follows is the sentence
        ("Fehler: Passwort: Geheim123 ungültig", "Fehler: Passwort: *** ungültig"),
        # public keys and event ids are read
        (
            "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGq3bJ0X7Nv6Ww9Q2rTz3Y8pKcLmN4sVd1EfGh2IjKl etl@host",
            "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGq3bJ0X7Nv6Ww9Q2rTz3Y8pKcLmN4sVd1EfGh2IjKl etl@host",
        ),
        (
            "Sentry event 5a1b2c3d4e5f60718293a4b5c6d7e8f9 dropped",
            "Sentry event 5a1b2c3d4e5f60718293a4b5c6d7e8f9 dropped",
        ),
        # user:password@host without a scheme, on any command line
        (
            "+ curl --socks5 user:Sock_pw1@proxy:1080 https://x",
            "+ curl --socks5 user:***@proxy:1080 https://x",
        ),
        # a webhook path's segments with digits; its words stay
        (
            "https://hooks.zapier.com/hooks/catch/1234567/abcde12/",
            "https://hooks.zapier.com/hooks/catch/1234567/***/",
        ),
        # a URL's key= holding a token, whatever its punctuation
        (
            "POST https://api.pushbullet.com/v2/pushes?key=o.Abc123Def456Ghi789Jkl012 401",
            "POST https://api.pushbullet.com/v2/pushes?key=*** 401",
        ),
        # full-width commas end a value
        ("错误：用户名=etl，密码=Mima_2024，主机=db", "错误：用户名=etl，密码=***，主机=db"),
        # boto's Section:option=value names a file, not a credential
        (
            "gsutil -o Credentials:gs_service_key_file=/k.json cp a gs://b",
            "gsutil -o Credentials:gs_service_key_file=/k.json cp a gs://b",
        ),
        # YAML's flow style name/value pairs, and a tagged block scalar
        (
            "env: [{name: DB_HOST, value: db}, {name: DB_PASS, value: Kube_pw_1}]",
            "env: [{name: DB_HOST, value: db}, {name: DB_PASS, value: ***}]",
        ),
        ("secret: !!binary |\n  U2VjcmV0X3B3XzE=\nuser: etl", "secret: !!binary |\n  ***\nuser: etl"),
        # an HMAC named in a header is a signature, not a hash to read
        ("X-Shopify-Hmac-Sha256: 3p1Zq8xLm2Pv9Rt4Wn7Ab6Cd0Ef2Gh4Ij6Kl8Mn0O=", "X-Shopify-Hmac-Sha256: ***"),
        # an API object's typed id and a job's id are read
        (
            "Stripe charge ch_3PQrStUvWxYz1234567890ab failed: card_declined",
            "Stripe charge ch_3PQrStUvWxYz1234567890ab failed: card_declined",
        ),
        (
            "Flink job 7f3b2c1d9e8a4b5ca6d7e8f9a0b1c2d3 FAILED",
            "Flink job 7f3b2c1d9e8a4b5ca6d7e8f9a0b1c2d3 FAILED",
        ),
        # a run's id is read
        (
            "RESOURCE_DOES_NOT_EXIST: Run 'a1b2c3d4e5f60718293a4b5c6d7e8f90' not found",
            "RESOURCE_DOES_NOT_EXIST: Run 'a1b2c3d4e5f60718293a4b5c6d7e8f90' not found",
        ),
    ],
)
def test_general_mechanisms(text: str, expected: str) -> None:
    """Mechanisms that generalise beyond one tool: credential pairs, block scalars, quoted URI pieces, particles, public ids."""
    assert redact(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # a connection's positional arguments: a location, a user, then the password, in any call
        (
            "    conn = MySQLdb.connect('db01.acme.internal', 'etl', 'My5ql!Pw', 'orders')",
            "    conn = MySQLdb.connect('db01.acme.internal', 'etl', '***', 'orders')",
        ),
        (
            "#0 /app/x.php(12): mysqli->__construct('localhost', 'root', 'Roo7!pw', 'shop')",
            "#0 /app/x.php(12): mysqli->__construct('localhost', 'root', '***', 'shop')",
        ),
        ("    $pdo = new PDO($dsn, 'app', 'Pd0_S3cret');", "    $pdo = new PDO($dsn, 'app', '***');"),
        (
            "    ssh.connect('bastion.acme.io:2222', 'deploy', 'Dep!oy99')",
            "    ssh.connect('bastion.acme.io:2222', 'deploy', '***')",
        ),
        # a port between the location and the user
        (
            "    client.connect('sftp01.acme.example', 22, 'etl', 'Sftp!Pw55')",
            "    client.connect('sftp01.acme.example', 22, 'etl', '***')",
        ),
        # a call named for logging in: a user, then the password
        (
            "    server.login('alerts@acme.example', 'Smtp!Pw22')",
            "    server.login('alerts@acme.example', '***')",
        ),
        (
            "    conn.simple_bind_s('cn=admin,dc=acme,dc=example', 'Ld4p!Pw')",
            "    conn.simple_bind_s('cn=admin,dc=acme,dc=example', '***')",
        ),
        # and in a directive named for a connection
        (
            "SQLConnectInfo app@db02.acme.internal ftp Ftp!Sql9",
            "SQLConnectInfo app@db02.acme.internal ftp ***",
        ),
        # Windows: net user, a /user flag then a /p flag, wmic's /password:
        ("net user backup_svc Bkp#2024x /add", "net user backup_svc *** /add"),
        ("net use \\\\srv01\\ipc$ /user:ACME\\etl N3tU5e!x", "net use \\\\srv01\\ipc$ /user:ACME\\etl ***"),
        (
            "schtasks /Create /S srv /U dom\\u /P P4ss!x /TN t",
            "schtasks /Create /S srv /U dom\\u /P *** /TN t",
        ),
        (
            "wmic /node:srv01 /user:ACME\\adm /password:Wm1c!Pw process list",
            "wmic /node:srv01 /user:ACME\\adm /password:*** process list",
        ),
        (
            "New-LocalUser -Name etl -Password (ConvertTo-SecureString 'L0cal!Pw' -AsPlainText -Force)",
            "New-LocalUser -Name etl -Password (ConvertTo-SecureString '***' -AsPlainText -Force)",
        ),
        # user:secret after a flag named for credentials, whatever the tool
        (
            "skopeo copy --src-creds bob:Sk0peo!x docker://a docker://b",
            "skopeo copy --src-creds bob:*** docker://a docker://b",
        ),
        ("buildah push --creds=ci:Bu1ld!x img", "buildah push --creds=ci:*** img"),
        # a secret piped into a command that reads one from standard input
        (
            "+ echo 'Dh_Pw!77'\n+ docker login -u ci --password-stdin registry.x",
            "+ echo '***'\n+ docker login -u ci --password-stdin registry.x",
        ),
        (
            'sh -c "echo Gh_Tok_99x | gh auth login --with-token"',
            'sh -c "echo *** | gh auth login --with-token"',
        ),
        ("echo 'user:Chp4ss!' | chpasswd", "echo '***' | chpasswd"),
        # network devices' configuration lines and crypt(3) hashes
        (
            "interface Gi0/1\n ip ospf authentication-key 7 0512080A2E4F\n!",
            "interface Gi0/1\n ip ospf authentication-key 7 ***\n!",
        ),
        ("tacacs-server host 10.0.0.5 key 7 045802150C2E", "tacacs-server host 10.0.0.5 key 7 ***"),
        (
            "set snmp community S3cr3tC0mm authorization read-only",
            "set snmp community *** authorization read-only",
        ),
        (
            'set system login user ops authentication encrypted-password "$6$abc$Zx9yQwErTy1234567890abcd"',
            'set system login user ops authentication encrypted-password "***"',
        ),
        (
            "username admin privilege 15 role network-admin secret sha512 $6$saltsalt$abcdefghijklmnop",
            "username admin privilege 15 role network-admin secret sha512 ***",
        ),
        ("crypto isakmp key Ik3!Psk address 203.0.113.5", "crypto isakmp key *** address 203.0.113.5"),
        ("wpa-psk ascii 0 Wif1!Pass", "wpa-psk ascii 0 ***"),
        # a kind word later on the line (Aruba), FortiOS's ENC
        (
            "password manager user-name admin plaintext Ar4ba!Pw",
            "password manager user-name admin plaintext ***",
        ),
        ("    set psksecret ENC Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5", "    set psksecret ENC ***"),
        # Huawei's irreversible cipher, a registry value named as a secret, a .pgpass line,
        # ConvertTo-SecureString with its flags first
        (
            "local-user admin password irreversible-cipher $1a$Qw9eRt5yUi$AbCdEfGhIjKlMnOp$",
            "local-user admin password irreversible-cipher ***",
        ),
        (
            'reg add "HKLM\\x\\Winlogon" /v DefaultPassword /t REG_SZ /d Reg!Pw1 /f',
            'reg add "HKLM\\x\\Winlogon" /v DefaultPassword /t REG_SZ /d *** /f',
        ),
        (
            "bad line: db01.acme.example:5432:orders:etl:PgPass!1",
            "bad line: db01.acme.example:5432:orders:etl:***",
        ),
        (
            '-NewPassword (ConvertTo-SecureString -AsPlainText "Ad!Pw2024" -Force)',
            '-NewPassword (ConvertTo-SecureString -AsPlainText "***" -Force)',
        ),
        # Cisco ASA: the kind after the value, the privilege kept
        (
            "username admin password 8Ry2YjIyt7RRXU24 encrypted privilege 15",
            "username admin password *** encrypted privilege 15",
        ),
        # key words for "key" in more languages
        ("(kunci API=Kn9!xYz12)", "(kunci API=***)"),
        ("エラー: APIキー=Jp9kEy!x12 が無効です", "エラー: APIキー=*** が無効です"),
        ("Lỗi: khóa bí mật=Vn9kEy!x12 không hợp lệ", "Lỗi: khóa bí mật=*** không hợp lệ"),
        # a key word of another language, then the word that says which
        ("mật khẩu quản trị: Qtr!2024x, mã lỗi=97", "mật khẩu quản trị: ***, mã lỗi=97"),
        ("klucz API=Kl8cz_9f3a, kod=1", "klucz API=***, kod=1"),
    ],
)
def test_round_three_classes(text: str, expected: str) -> None:
    """Each class added from the second held-out set hides its secret in a tool it was not written from."""
    assert redact(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        'ERROR: password authentication failed for user "etl"',  # a word of the sentence after the key word
        "Invalid password 3 times; account locked",  # a count, not an encryption type and a value
        "logger.info('%s connected to %s', 'db01.acme.internal', 'etl')",  # a location and a user, no password
        "shutil.copy('/data/a.csv', 'b', 'c')",  # a path is no location to connect to
        "connect db01.acme.internal etl because the pool was full",  # a word of the sentence after the user
        "The primary key 5 value already exists",  # a key word in prose
        "DETAIL:  Key (id)=(5) already exists.",  # PostgreSQL's key, in capitals: no device's line
        "Node 9j3k2m4x7qz8w1c5n6b0p2r4t is not ready",  # a node's id after its noun
        "model 3f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c failed to load",  # a model's id after its noun
        "token: 503 Service Unavailable",  # an HTTP status and its reason after the key word
        "kubeadm join 10.0.0.1:6443 --discovery-token-ca-cert-hash sha256:"
        "415d9742be98a0b5f00a94d665578a480d90efb69f5858915282617c4b78d733",  # a public hash of a secret
        "echo 'starting job' | tee /var/log/stdin.log",  # no command that reads a secret from stdin
        "CREATE SECRET s3_prod (TYPE S3)",  # the object's name after CREATE
        "Net::SSH.start('bastion.acme.example', 'deploy', keys: [])",  # a keyword argument's name is no password
        'log.info("connect %s", "db01.acme.internal", "etl", "extra")',  # a log call's values after its format
        "ssh key 2048 bits is too short",  # a size after the key word
    ],
)
def test_round_three_keeps_what_on_call_reads(text: str) -> None:
    """Text of the same shapes that holds no secret stays as it was."""
    assert redact(text) == text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # a logon command's "host/user,password" (Teradata FastLoad, not BTEQ)
        (
            ".LOGON tdp1/loader,Fl9!ad2x;\n.BEGIN LOADING stage.orders",
            ".LOGON tdp1/loader,***;\n.BEGIN LOADING stage.orders",
        ),
        # a configuration block named by its SNMP community (VyOS)
        (
            "service {\n  snmp {\n    community pubRO9x-44 {\n      authorization ro\n",
            "service {\n  snmp {\n    community *** {\n      authorization ro\n",
        ),
        # a credential-shaped sibling of a token in a form body (an SMS gateway)
        (
            "body=api_token=x&account=Zx8Kq2Lm9Vb4Rt8Wn1Yc6D&to=4915112345678",
            "body=api_token=***&account=***&to=4915112345678",
        ),
        # a password of digits beside a count is no summary's counter: its key is no label in capitals
        ("password=4711 RETRIES=3", "password=*** RETRIES=3"),
        # a user, then a secret-shaped value, then the URL to connect to (a WebDAV client)
        (
            "client = DavClient('acme', 'etl-sync', 'Wd4v!pQ9zz', 'https://dav.acme.example/remote.php/dav')",
            "client = DavClient('acme', 'etl-sync', '***', 'https://dav.acme.example/remote.php/dav')",
        ),
        # an OAuth client's credential "client_id:client_secret": the id stays
        ("credentials='etl-client:Sx9kQ2mLp7Vb4Rt8'", "credentials='etl-client:***'"),
    ],
)
def test_round_four_classes(text: str, expected: str) -> None:
    """Each class added from the third held-out set hides its secret in a tool it was not written from."""
    assert redact(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        # a value another tool already masked
        '{"db_password": "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER"}',
        "authorization: --- Secret Redacted ---",
        '"api_key": "[hidden]"',
        # "password: yes/no/hidden/none" in other languages
        "(password utilizzata: sì)",
        "Passwort: ja",
        "wachtwoord: nee",
        "パスワード: なし",
        "contraseña: oculta",
        # a summary's counters (a test harness)
        "Summary: PASS=12 FAIL=0 SKIP=2",
        # a key pair's id after its id flag, the secret's flag beside it (goofys-style mount tool)
        "s3mount acme-raw /mnt/raw --access-key-id AKIA4QZ7XK2LMN3PRT5V --secret-access-key ***",
        # an object's id after its collection's noun in a path (a CI server's API)
        "GET /api/v1/projects/Zx8Kq2Lm9Vb4Rt8Wn1Yc6Dp3Gh0Jf5aB/builds 404",
        # a resource's name under a secret's key (SSM)
        "token=arn:aws:ssm:us-east-1:123456789012:parameter/etl/token",
        # an HTTP status and its request id after a key word
        "GET https://api.example.org/v2/api-keys: 403 (request 5c2f8e1a)",
        # a database path after a flag whose value ends in "key" (Firebird's gbak)
        "gbak -user SYSDBA -password *** fb01.acme.example:/data/erp.fdb /backup/erp.fbk",
    ],
)
def test_round_four_keeps_what_on_call_reads(text: str) -> None:
    """Text of the same shapes that holds no secret, or a secret already masked, stays as it was."""
    assert redact(text) == text


def test_slack_workflow_webhook_keeps_its_ids() -> None:
    """A webhook's team and app ids stay readable; the path's last, secret segment is hidden."""
    text = (
        "POST https://hooks.slack.com/workflows/T0123ABCD/A0456EFGH/412345678/Xq9rT2vB8nLm4pK7wZ3sY6dF failed"
    )
    assert redact(text) == "POST https://hooks.slack.com/workflows/T0123ABCD/A0456EFGH/*** failed"
