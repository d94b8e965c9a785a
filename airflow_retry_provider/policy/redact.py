"""Remove secrets from text before it is stored, logged or shown (retry reasons, dead letters, ledger).

Redaction errs on the side of hiding too much: a value after ``token=`` is hidden even when it
was harmless. Each secret is replaced by ``***``; the text around it is kept. The families
covered, and which patterns come from detect-secrets' plugins, are in docs/CLASSIFICATION.md
("Redaction").

How it works: the text is bounded first (``engine.bounded``: the first and last 8 KiB of a
longer text), then each family whose literal is in the text (``://``, ``cookie``, a key word, a
tool's name...) finds the *spans* of its secrets with an RE2 pattern (``engine.pattern``: linear
in the text, compiled on first use, so importing this module compiles nothing). The spans of all
families are merged and each becomes ``***``; only then is the result cut for storage
(``redact(text, limit)``), so no cut can leave the start of a secret that was no longer
recognisable. Percent-encoded text is decoded, its spans found in the decoded text and mapped
back onto the encoded one: the decoded secret is never shown. A plain error message holds none of
the literals and costs a few substring checks.
"""

from __future__ import annotations

import math
import string
from bisect import bisect_left
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from airflow_retry_provider.policy import argv, secret_words, vendor
from airflow_retry_provider.policy.engine import LiteralSet, Pattern, bounded, pattern
from airflow_retry_provider.policy.text import storable

MASK = "***"
ELLIPSIS = "…"
LONG_WORD = 15
"""A whitespace-separated word this long may hold a vendor token or a random run: only then are they looked for."""

Span = tuple[int, int]

# ---------------------------------------------------------------------------------------------
# Pieces shared by the patterns. Values may be quoted and escaped at any depth (JSON in JSON:
# \"x\", \\\"x\\\"); a quoted value ends before the quote that closes it at its own depth.


def _quoted_at(depth_backslashes: int, quote: str) -> str:
    """A string opened by ``quote`` after exactly ``depth_backslashes`` backslashes (0, 1, 3, 7: JSON
    escaped 0-3 times): it closes at a quote after exactly as many; one after more is its content."""
    lead = "\\\\" * depth_backslashes
    more = f"\\\\{{{depth_backslashes + 1},}}"
    return rf"{lead}{quote}(?:[^{quote}\\\r\n]|\\+[^{quote}\\\r\n]|{more}{quote})*"


# No groups inside: each pattern captures a whole value in one group and _content() finds what is
# inside the quotes (RE2's Python binding costs a few microseconds per group looked at)
_QUOTED = "(?:" + "|".join(_quoted_at(depth, quote) for depth in (7, 3, 1, 0) for quote in "\"'") + ")"
# A word that names a secret (detect-secrets' KeywordDetector DENYLIST, plus the key words of
# HTTP, cloud SDKs and connection strings, plus other languages' words: policy/secret_words.py);
# a key that *ends* in key/keys/auth is one too.
_FOREIGN_WORDS = secret_words.words()
# A key's characters: Unicode letters, digits and marks (RE2's \w is ASCII only: пароль_бд, 密码,
# पासवर्ड with its vowel signs), _ . and -
_KEY_CHAR = r"[\pL\pN\pM_.-]"
_KEY = (
    rf"{_KEY_CHAR}*(?:pass|pwd|token|secret|credential|signature|cookie|session-?id|"
    + "|".join(_FOREIGN_WORDS)
    + rf"|api-?key|access-?key|private-?key|account-?key)"
    # then the rest of the word, or a connecting word and one more (token de acceso, senha do banco)
    rf"(?:[ \t](?:de|do|da|del|di|du|des|der|van|von|of|от|для)(?:[ \t]\pL+){{1,4}}|{_KEY_CHAR}*)"
    # or the kind of secret after it, with no linking word (clé API, Schlüssel SSH)
    r"(?:[ \t](?:api|ssh|gpg|pgp|jwt|aws|s3|db|sql|smtp|ldap|ftp|vpn|wifi|wi-fi|hmac|oauth|tls|ssl))?"
    rf"|{_KEY_CHAR}*(?:key|keys|[_.-]auth(?:tok)?|pw)|auth|sig|session"  # upw=, dbpw=
    r"|x-[\w-]*-session"  # a session header (X-Metabase-Session: <uuid>)  # SSSD's ldap_default_authtok
)
# = or :, full-width too (密码：x), or : then a YAML list item
_SEP = r"(\\*[\"']?[ \t]*(?::=|=>|==?|:|：|＝)[ \t]*(?:\r?\n[ \t]*-[ \t]+)?)"
# key<space>value, '--key', 'value': only the key and the space are matched, the value is read in
# Python, so a value that is not a secret is not consumed ("pass password=x" still shows its key)
_SPACE_SEP = r"(\\*[\"'][ \t]*,[ \t]*|[ \t]+)"
_VALUE = (
    f"({_QUOTED}"
    r"|\{(?:[^}\r\n]|\}\})*\}?"  # {braced} (ODBC: PWD={a;b}; }} is a literal })
    # a bare word (not starting with "(": Key (id)=(5)), ending before a repr's escaped line end (\r\n)
    r"|[^\s&;,，；、。\"'<>()\]}\\](?:[^\s&;,，；、。\"'<>)\]}\\]|\\+[^\s&;,，；、。\"'<>)\]}\\rn])*)"
)

# ---------------------------------------------------------------------------------------------
# The patterns, one or a few per family. All RE2: no look-around, so where the old patterns had
# a look-behind ("not after a word character") a one-character prefix is matched and left alone.

# PEM and PuTTY private keys, to the END line or, cut short, to the end of the text
# (detect-secrets' PrivateKeyDetector lists the same BEGIN lines)
_PEM = pattern(
    r"-{4,5} ?BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)? ?-{4,5}"
    r"(?s:.*?)(?:-{4,5} ?END[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)? ?-{4,5}|$)"
    r"|PuTTY-User-Key-File-\d(?s:.*?)(?:Private-MAC:[^\r\n]*|$)"
)
# scheme://user:password@host: the password runs to the LAST @ of the word, so it may hold / and @
# (and a scheme that lost its colon: SQLAlchemy's "Could not parse rfc1738 URL from string 'trino//u:p@h'")
_URI = pattern(r"(?:^|[^\w+.-])[a-zA-Z][\w+.-]*:?//([^\s\"'<>]+)")
# user:password@host without a scheme (curl --socks5 u:p@proxy, mysqlsh --uri u:p@db)
# (also with no user: redis-py's "connecting to :x@cache:6379"), or an e-mail address then :password,
# as a relay's credentials file writes it (Postfix's sasl_passwd: [smtp.example.org]:587 user@example.org:x)
_USERINFO = pattern(
    r"(?:^|[\s'\"=(\[,])(?:(?:[A-Za-z_][\w.-]*)?:([^\s:@/'\"]+)@[A-Za-z0-9][\w.-]*(:/)?"
    r"|[\w.+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+:([^\s:@/'\"]*[^\s\d:@/'\"][^\s:@/'\"]*)(?:[\s'\"]|$))"
)
# a path and its query without a scheme and host (an access log's "GET /callback?code=x HTTP/1.1")
_RELATIVE_URL = pattern(r"(?:^|[\s\"'(\[])(/[^\s\"'<>?]*\?[^\s\"'<>]+)")
# secrets that travel in a URL path: chat webhooks, Telegram bot tokens
_WEBHOOK = pattern(
    r"(?:hooks\.slack\.com/(?:services|workflows|triggers)/|discord(?:app)?\.com/api/webhooks/"
    r"|\.webhook\.office\.com/webhookb2/|chat\.googleapis\.com/v1/spaces/)([^\s\"'<>]+)"
    r"|api\.telegram\.org/(?:file/)?bot([^\s/\"'<>]+)",
    ignore_case=True,
)
# Cookie: a=b; c=d / Set-Cookie: id=... and Authorization: <scheme> <credentials>, any scheme
# (Bearer, Basic, NTLM, Negotiate, Digest...): the header and the rest of its line, with no
# group (RE2 then finds both ends with its DFA alone); _header_value() reads the value in Python.
# A cookie is hidden to its closing quote or the line's end; an authorization keeps its scheme
# word, and ends at a delimiter unless it is Digest's parameters.
_COOKIE = pattern(r"(?:^|[^\w-]|\\[rn])(?:set-)?cookie\\*[\"']?[ \t]*[:=][^\r\n]*", ignore_case=True)
_AUTHORIZATION = pattern(
    r"(?:^|[^\w-]|\\[rn])(?:proxy-)?authori[sz]ation\\*[\"']?[ \t]*[:=][^\r\n]*", ignore_case=True
)
# a bare credential after its scheme word: Bearer <8+ chars>; Basic/NTLM/Negotiate <base64>
_SCHEME = pattern(r"(?:^|[^\w-])(bearer|basic|ntlm|negotiate)[ \t]+([\w.~+/=-]{8,})", ignore_case=True)
# key=value, "key": "value", key: value, key value, '--key', 'value', where the key names a secret
_KEY_VALUE = pattern(rf"(?:^|[^\pL\pN\pM_.-])({_KEY}){_SEP}{_VALUE}", ignore_case=True)
_KEY_SPACE = pattern(rf"(?:^|[\s\"'(\[{{,])({_KEY}){_SPACE_SEP}", ignore_case=True)
# a key word of another language, then one or two words that say which (Vietnamese "mật khẩu merchant:",
# Polish "klucz CRC=": languages that put the modifier after the noun)
_MODIFIED_KEY = pattern(
    rf"(?:^|[^\pL\pN\pM_.-])({'|'.join(_FOREIGN_WORDS)})[ \t]+(\pL{{2,16}}(?:[ \t]\pL{{2,16}})?)[ \t]*(?::|=|：|＝)[ \t]*{_VALUE}",
    ignore_case=True,
)
# XML: <Password>x</Password>, <ns:ApiKey><![CDATA[x]]></ns:ApiKey>
_XML_ELEMENT = pattern(
    r"<([\w:.-]*(?:pass|pwd|secret|token|credential|signature|api-?key|access-?key|private-?key"
    r"|account-?key|session-?key|auth-?key|client-?key|"
    + "|".join(_FOREIGN_WORDS)
    + r")[\w:.-]*)((?:\s[^<>]*)?)>"
    r"(?:<!\[CDATA\[((?s:.*?))\]\]>|([^<]*)(?:</|$))",  # closed, or cut short: <token> in prose is no element
    ignore_case=True,
)
# a secret named in one field and given in the next: <add key="DbPassword" value="x"/>,
# {"Name": "DB_PASSWORD", "Value": "x"} (ECS, Lambda, CloudFormation's ParameterKey/ParameterValue),
# Kubernetes' "- name: DB_PASSWORD / value: x", <entry key="password">x</entry>
# one scalar field of a JSON object or a dict's repr ("slotSetting": false, 'type': 'Opaque'), no group
_FIELD = r"\\*[\"'][\w-]{1,40}\\*[\"'][ \t]*:[ \t]*(?:\\*[\"'][^\"'\\\r\n]{0,80}\\*[\"']|[\w.-]{1,20})"
_NAMED = (
    pattern(r"\b(?:name|key)[ \t]*=[ \t]*[\"']([^\"'<>]*)[\"'][^<>]*?\bvalue[ \t]*=[ \t]*[\"']([^\"'<>]*)", ignore_case=True),
    pattern(
        r"\\*[\"'](?:name|key|parameterkey|type)\\*[\"'][ \t]*:[ \t]*\\*[\"']([^\"'\\]*)\\*[\"'][ \t]*,[ \t]*(?:\r?\n[ \t]*)?"
        rf"(?:{_FIELD}[ \t]*,[ \t]*(?:\r?\n[ \t]*)?){{0,2}}"  # fields between: Azure's "slotSetting": false
        rf"\\*[\"'](?:value|parametervalue)\\*[\"'][ \t]*:[ \t]*({_QUOTED})",
        ignore_case=True,
    ),
    # and Spring Boot's "Failed to bind properties": "Property: db.password / Value: "x""
    pattern(r"\b(?:name|property):[ \t]*[\"']?([\w.-]+)[\"']?[ \t]*\r?\n[ \t]*value:[ \t]*([^\r\n]*)", ignore_case=True),
    pattern(r"<[\w:.-]+[ \t][^<>]*?\b(?:name|key)[ \t]*=[ \t]*[\"']([^\"'<>]*)[\"'][^<>/]*>([^<]*)<", ignore_case=True),
    # YAML's flow style: {name: DB_PASS, value: x}
    pattern(r"\bname:[ \t]*[\"']?([\w.-]+)[\"']?[ \t]*,[ \t]*value:[ \t]*([^,}\]\r\n]*)", ignore_case=True),
)  # fmt: skip

# Oracle connect strings user/password[@db], on the line of an Oracle tool or in a JDBC URL
_ORACLE_WORDS = ("sqlplus", "sqlcl", "sqlldr", "expdp", "impdp", "rman", "dgmgrl", "userid", "jdbc:oracle", "sql> conn")  # fmt: skip
_ORACLE = pattern(r"(?:^|[\s'\"=,\[(:])([A-Za-z_][\w$#.]*)/(\"[^\"\r\n]*\"|[^\s/@'\";,]+)(?:@|[\s'\"]|$)")

# protocol exchanges a failure quotes: Redis's AUTH [user] password (redis-cli, MONITOR's quoted
# words), SMTP's AUTH <mechanism> <initial response> (smtplib's debug "send: 'AUTH PLAIN ...\\r\\n'");
# the arguments must end the line (AUTH in prose is followed by more words)
_AUTH_COMMAND = pattern(r"(?:^|[\s>'\"\[,(])[\"']?AUTH[\"']?(?:[ \t]+|[\"'],[ \t]*)")
_SASL_MECHANISMS = frozenset({"PLAIN", "LOGIN", "XOAUTH2", "OAUTHBEARER", "CRAM-MD5", "DIGEST-MD5", "NTLM", "GSSAPI", "EXTERNAL"})  # fmt: skip
# Redis's password directives, as redis.conf, CONFIG SET and the config error's ">>> '<line>'" write
# them: the password is the rest of the line (unquoted, it may hold spaces: "wrong number of arguments")
_REDIS_DIRECTIVE = pattern(r"(?:^|[\s'\"])(?:requirepass|masterauth)[ \t]+([^\r\n]+)", ignore_case=True)
# Redis Sentinel's "sentinel auth-pass <master> <password>" (its config and SENTINEL SET)
_SENTINEL_AUTH = pattern(r"(?i:\bsentinel[ \t]+(?:set[ \t]+\S+[ \t]+)?auth-pass)[ \t]+(?:\S+[ \t]+)?(\S+)")
# SQL that sets a password, echoed by the server's error (MySQL, MariaDB, Oracle: IDENTIFIED BY)
_IDENTIFIED_BY = pattern(
    r"(?i:\bidentified(?:[ \t]+with[ \t]+\S+)?[ \t]+by)[ \t]+(?:password[ \t]+)?(?:\\*'([^'\r\n\\]*)|\\*\"([^\"\r\n\\]*)|([^\s;'\"]+))"
)
# line protocols whose client sends the password as a command: FTP and POP3's PASS (curl -v's
# "> PASS x"), IMAP's "<tag> LOGIN <user> <password>" (imaplib's debug "> b'ABCD1 LOGIN u p'")
_PASS_COMMAND = pattern(r"(?m)^[ \t]*(?:>|C:|\*cmd\*|->)?[ \t]*'?PASS[ \t]+([^\r\n']+)")
_IMAP_LOGIN = pattern(
    r"(?:^|[\s'>])([A-Za-z0-9]{1,10}) LOGIN[ \t]+(?:\\?\"[^\"\r\n]*\\?\"|\S+)[ \t]+(?:\\?\"([^\"\r\n\\]*)|([^\s']+))"
)
# a (user, password) pair given to a credential's constructor or an auth argument: requests'
# auth=('u', 'p'), HTTPBasicAuth('u', 'p'), aiohttp's BasicAuth, .NET's NetworkCredential("u", "p")
_CREDENTIAL_PAIR = pattern(
    r"(?i:\b(?:auth|basic_?auth|http_?basic_?auth|http_?digest_?auth|network_?credential"
    r"|username_?password_?credentials?|password_?credential))[ \t]*(?:=|:|\()[ \t]*\(?[ \t]*"
    # the user may hold escaped characters (a Windows domain user in a repr: 'ACME\\\\svc_etl')
    r"(?:\\*\"(?:[^\"\r\n\\]|\\\\)*\\*\"|\\*'(?:[^'\r\n\\]|\\\\)*\\*')[ \t]*,[ \t]*(?:\\*\"([^\"\r\n\\]*)|\\*'([^'\r\n\\]*))"
)
# an Erlang or Elixir option tuple whose atom names a secret: {password, "x"}, {secret_key, <<"x">>}
_ERLANG_TUPLE = pattern(
    r"\{[ \t]*:?([a-z][\w@]*)[ \t]*,[ \t]*(?:<<)?(?:\"([^\"\r\n]*)\"|'([^'\r\n]*)'|([^\s,}>'\"]+))"
)
# on a Redis line a lone word before @host:port, which Redis reads as the password (redis://x@cache:6379)
_REDIS_USERINFO = pattern(r"(?:^|[\s'\"=(\[,])([^\s:@/'\"]+)@[A-Za-z0-9][\w.-]*:[0-9]{2,5}\b")
# a connection's positional arguments: a location, then the user, then the password, in a call
# (PHP's trace of PDO->__construct('mysql:host=...', 'forge', 'x'), Perl's DBI->connect, JDBC's
# getConnection, RouterOS's Client->__construct('10.0.0.1', 'api', 'x'), napalm's
# driver("10.0.0.3", "netops", "x", ...), pymqi.connect('QM1', 'CH', 'mq01.x.y(1414)', 'app', 'x'),
# MySQLdb.connect('db.x.y', 'etl', 'x', 'orders'), new PDO($dsn, 'u', 'x')); the arguments are
# judged in Python (_connection_arguments)
_CALL_ARG = r"(?:'(?:[^'\\\r\n]|\\.)*'|\"(?:[^\"\\\r\n]|\\.)*\"|\$?[A-Za-z_][\w.$>-]*)"
_CONNECT_CALL = pattern(rf"\([ \t]*((?:{_CALL_ARG}[ \t]*,[ \t]*){{2,8}}{_CALL_ARG})")
_CALL_ARGUMENT = pattern(_CALL_ARG)
# and in a directive or command named for a connection, apart by spaces (ProFTPD's
# SQLConnectInfo db@host:3306 user x)
_CONNECT_DIRECTIVE = pattern(r"(?i:\b\w*connect\w*)[ \t]+([^\s'\"]+)[ \t]+([^\s'\"]+)[ \t]+([^\s'\"]+)")
# SASL PLAIN's caret form in a mail server's config (Exim's client_send = ^user^password)
_CARET_PLAIN = pattern(r"(?:=|:)[ \t]*\^[^\s^]*\^([^\s^'\"]+)")
# a SASL exchange's initial response in an XML stream (XMPP's <auth mechanism="PLAIN">base64</auth>)
_SASL_ELEMENT = pattern(r"mechanism=[\"'][A-Z0-9-]+[\"'][^>\r\n]*>([^<\s]+)<")
# a tool's echo of a setting it set: a quoted setting name, words, then the quoted value (Meltano's
# "setting 'password' was set in `.env`: 'x'", "set option 'token' to 'x'")
_SETTING_ECHO = pattern(
    r"(?i:setting|option|parameter|variable|property|key)[ \t]+['\"`]([\w.-]{1,60})['\"`]"
    r"[^\r\n'\"]{0,60}?(?::|[ \t]to)[ \t]*(?:'([^'\r\n]*)'|\"([^\"\r\n]*)\")"
)
_SETTING_WORDS = ("setting ", "option ", "parameter ", "variable ", "property ", "key '", 'key "', "key `")
# Nagios's resource.cfg macros ($USER1$=...), the store its documentation gives for passwords
_NAGIOS_MACRO = pattern(r"\$USER[0-9]{1,3}\$[ \t]*=[ \t]*([^\s'\"]+)")
# PowerShell's ConvertTo-SecureString "<password>" -AsPlainText, and Windows' net use <share> <password>
_SECURE_STRING = pattern(
    r"(?i:convertto-securestring)[ \t]+(?:-string[ \t]+)?(?:\"([^\"\r\n]*)\"|'([^'\r\n]*)'|([^\s'\"-]\S*))"
)
# and net user <name> <password> (/add, /domain after it: a flag, no password; * prompts for one)
_NET_USE = pattern(
    r"(?i:\bnet[ \t]+(?:use[ \t]+(?:[A-Za-z*]:[ \t]+)?\\\\\S+|user[ \t]+(?:\"[^\"\r\n]*\"|[^\s/'\"]+)))"
    r"[ \t]+([^\s/*'\"][^\s'\"]*)"
)
# a Windows command's login: a user flag and its name, then a password flag (schtasks /U x /P y,
# wmic-style /user:x /password:y, any tool's /u x /pw y); /RU and /RP are the table's
_WINDOWS_LOGIN = pattern(
    r"(?i:(?:^|[\s'\"])/(?:u|user)(?::|[ \t]+)(?:\"[^\"\r\n]*\"|[^\s\"']+)[^\r\n|&]*?[\s'\"]/(?:p|pw|pass|password)(?::|[ \t]+))"
    r"(\"[^\"\r\n]*\"|[^\s\"'/*][^\s\"']*)"
)
# a secret piped into a command that reads one from standard input (printf %s 'x' | podman secret
# create name -, echo x | docker login --password-stdin): in a shell string the same line, in a
# bash -x trace the line before or after (a pipeline's commands are traced in any order)
_PIPED = pattern(
    r"(?:^|[\s'\"(;|&+])(?:echo|printf)[ \t]+(?:-[neE]{1,3}[ \t]+)?(?:['\"]?%s(?:\\n)?['\"]?[ \t]+)?"
    r"('[^'\r\n]*'|\"[^\"\r\n]*\"|[^\s'\"|;&>]+)"
)
_STDIN_SINKS = ("stdin", "secret create", "secret set", "chpasswd", "--password -", "with-token", "=-")
# a network device's configuration line (Cisco IOS and NX-OS, Arista EOS, Juniper set lines): a
# secret's word after up to six words at the line's start, an optional encryption type or hash
# name, then the value (username x privilege 15 secret 9 $9$..., password 7 0822..., enable
# secret 5 $1$..., snmp-server community X RO, key-string X, tacacs-server key 7 X, set system
# login user x authentication encrypted-password "$6$..."); in lower case, as devices print them
# an encryption type's number (0 plain, 5 MD5, 7 Cisco's reversible, 8 PBKDF2, 9 scrypt) or name
_DEVICE_KINDS = ("sha512", "sha256", "md5", "plaintext", "encrypted", "ascii", "ascii-text", "hex", "simple", "unencrypted", "cipher")  # fmt: skip
_DEVICE_SECRET = pattern(
    r"(?m)^[ \t]*(?:[\w.:-]+[ \t]+){0,6}?(?:[a-z][a-z0-9]*-){0,3}(?:password|secret|key|key-string|community|authentication-key"
    r"|pre-shared-key|encrypted-password|plain-text-password|auth-password|priv-password|psk)"
    r"[ \t]+(?:([0-9]{1,2}|" + "|".join(_DEVICE_KINDS) + r")[ \t]+){0,2}"
    r"(\"[^\"\r\n]*\"|[^\s\"]+)"
)
_DEVICE_WORDS = ("password ", "secret ", "key ", "key-string", "community ", "authentication-key", "pre-shared-key", "encrypted-password", "psk ")  # fmt: skip
# a password hash in crypt(3)'s form, which a device's config, /etc/shadow or htpasswd print: an
# offline guess recovers the password (Cisco's types 5, 8 and 9, Juniper's $9$ and $6$, $apr1$, bcrypt)
_CRYPT_HASH = pattern(r"(?:^|[^\w$])(\$(?:1|2[abxy]|5|6|7|8|9|y|gy|apr1|sha1|md5)\$[\w./$+=-]{8,})")
# an FTP client's "user <name> <password>" command, alone on its line or in a here-string
_FTP_USER = pattern(r"(?i:\buser)[ \t]+[^\s'\"]+[ \t]+([^\s'\"]+)[\"']?[ \t]*(?:\r?\n|\\n|$)")
# expect's diagnostics (expect -d): the string sent after a password prompt was matched
_EXPECT_SEND = pattern(
    r"(?i:assword|passphrase|pin)[^\r\n]*(?:\r?\n[^\r\n]*){0,4}?\r?\n[ \t]*send: sending \"([^\"\r\n]*?)(?:\\r|\\n)*\""
)
# redis-cli's reply to CONFIG GET requirepass: 1) "requirepass" / 2) "<the password>"
_REDIS_CONFIG_REPLY = pattern(
    r"\\*\"(?:requirepass|masterauth|masteruser)\\*\"\r?\n[ \t]*2\)[ \t]*\"([^\"\r\n]*)\""
)
# an SMTP server's 334 challenge: the client's next line is a base64 answer (a user name, a
# password, a token): smtplib's debug output (send: 'x\\r\\n'), swaks ( -> x), a C:/S: transcript
_SMTP_CHALLENGE = pattern(r"(?:^|[^\w.])334[ \t][^\r\n]*")
_SMTP_ANSWER = pattern(
    r"[ \t]*(?:send:[ \t]*b?'|->[ \t]*|C:[ \t]*|>>>?[ \t]*|~>[ \t]*)?([A-Za-z0-9+/]{2,}={0,2})(?:\\r\\n)?'?\r?$"
)

# pydantic's ValidationError: the field's path on one line, its input on the next
# ("db.senha\n  String should have at least 12 characters [type=..., input_value='x', ...]")
_PYDANTIC_INPUT = pattern(
    rf"(?m)^([\w.\[\]-]{{1,128}})\r?\n[ \t]+[^\r\n]*?\[type=[\w.-]+, input_value=({_QUOTED}|[^,\]\r\n]+)"
)
# tables a CLI prints (airflow connections get / list: rich's ASCII_DOUBLE_HEAD, "id | conn_id |
# ... | password | ..." over "===+===", its cells wrapped over lines; -o plain: tabulate's columns)
_TABLE_RULE = pattern(r"(?m)^[ \t]*[=+|:-]*(?:={3,}|-{3,})[=+|: -]*\r?$")
_PLAIN_HEADER = pattern(rf"(?m)^(?:[^\r\n]*?[ \t]{{2,}})?({_KEY})(?:[ \t]{{2,}}|\r?$)", ignore_case=True)

# secrets recognisable on their own (a vendor's prefix) that gitleaks' rules (policy/vendor.py,
# data/gitleaks.json) do not cover, or cover more narrowly; where a line says detect-secrets, the
# pattern is that plugin's (detect_secrets/plugins/<name>.py, Apache-2.0), in RE2 form. Taken out
# because gitleaks' rules hide them (checked on every sample of the tests and corpora): GitLab's
# glpat-/gldt-/glft-/glsoat-/glrt-, Artifactory's AKCp, Stripe's sk_/rk_/pk_, PyPI, Google's AIza, DigitalOcean, Shopify, Databricks, Linear, PlanetScale, Alibaba's LTAI.
_VENDOR = pattern(
    r"(?:^|[^\w-])("
    r"(?:A3T[A-Z0-9]|ABIA|ACCA|AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA)[A-Z0-9]{16}"  # AWS key id (aws.py + AWS's id prefixes)
    r"|eyJ[A-Za-z0-9_=-]{5,}\.[A-Za-z0-9_=-]{5,}\.?[A-Za-z0-9_.+/=-]*"  # JSON Web Token (jwt.py)
    r"|(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9_]{30,}|github_pat_\w{22,}"  # GitHub (github_token.py; gitleaks asks entropy)
    r"|GR1348941[\w-]{20,}|glcbt-(?:[0-9a-fA-F]{2}_)?[\w-]{20,}"
    r"|glimt-[\w-]{25,}|glptt-[\w-]{40,}|glagent-[\w-]{50,}|gloas-[\w-]{64,}"  # GitLab (gitlab_token.py)
    r"|xox[abposre]-[A-Za-z0-9-]{10,}|xapp-[A-Za-z0-9-]{10,}"  # Slack (slack.py, + xoxe/xapp)
    r"|[MNO][\w-]{23,25}\.[\w-]{6}\.[\w-]{27,}"  # Discord bot token (discord.py)
    r"|sq0csp-[0-9A-Za-z_\\-]{43}|sq0atp-[\w-]{22,}|EAAA[\w-]{60,}"  # Square (square_oauth.py, + access tokens)
    r"|[0-9a-z]{32}-us[0-9]{1,2}"  # Mailchimp (mailchimp.py)
    r"|SK[a-z0-9]{32}"  # Twilio API key (twilio.py; its AC... account SID is an id, as in gitleaks)
    r"|whsec_[A-Za-z0-9]{20,}"  # Stripe's webhook secret
    r"|SG\.[\w-]{16,}\.[\w-]{16,}"  # SendGrid (sendgrid.py; gitleaks' asks exact lengths)
    r"|npm_[A-Za-z0-9]{36}"  # npm (npm.py; gitleaks' asks entropy)
    r"|sk-[\w-]{20,}"  # sk-... secret keys: OpenAI (openai.py), Anthropic, DeepSeek...
    # not in detect-secrets: vendors' documented prefixes
    r"|ya29\.[\w-]{20,}|GOCSPX-[\w-]{20,}|1//0[\w-]{30,}"  # Google OAuth token, client secret, refresh token
    r"|hf_[A-Za-z0-9]{30,}|api_org_[A-Za-z0-9]{30,}"  # Hugging Face
    r"|r8_[A-Za-z0-9]{30,}|gsk_[A-Za-z0-9]{40,}|pplx-[A-Za-z0-9]{40,}"  # Replicate, Groq, Perplexity
    r"|hv[sbr]\.[\w-]{20,}"  # HashiCorp Vault
    r"|dckr_pat_[\w-]{20,}|rubygems_[a-f0-9]{48}|oy2[a-z0-9]{43}"  # Docker Hub, RubyGems, NuGet
    r"|ATBB[\w=.-]{20,}|ATATT[\w=.-]{20,}"  # Bitbucket app password, Atlassian API token
    r"|glc_[A-Za-z0-9+/=]{32,}|glsa_[A-Za-z0-9]{32}_[a-f0-9]{8}"  # Grafana
    r"|NRAK-[A-Z0-9]{27}|ntn_[A-Za-z0-9]{40,}|PMAK-[a-f0-9]{24}-[a-f0-9]{34}"  # New Relic, Notion, Postman
    r"|sntry[su]_[\w=+/]{40,}|sbp_[a-f0-9]{40}"  # Sentry, Supabase
    r"|dp\.(?:pt|st|ct|sa|scim|audit)\.[A-Za-z0-9]{40,}|pul-[a-f0-9]{40}|nfp_[A-Za-z0-9]{36}"  # Doppler, Pulumi, Netlify
    r"|[A-Za-z0-9]{14}\.atlasv1\.[\w-]{60,}|AGE-SECRET-KEY-1[0-9A-Z]{58}"  # Terraform Cloud, age
    r"|AKID[A-Za-z0-9]{32}"  # Tencent Cloud
    r")"
)
# the high-entropy catch-all: a long run of base64 / hex characters (detect-secrets'
# Base64HighEntropyString and HexHighEntropyString charsets), judged in Python (_looks_random)
_RUN = pattern(r"(?:^|[^A-Za-z0-9+/_-])([A-Za-z0-9+/_-]{20,}=*)")  # also after = (X=<random>)
# a parser that quotes the piece of a URI or DSN it could not read: with an @, : or / in a
# password, that piece is the password's start (urllib's and redis-py's "Port could not be cast to
# integer value as 'x'", httpx's "Invalid port: 'x'", Go's net/url "invalid port \":x\" after
# host", libpq's "invalid integer value \"x\" for connection option \"port\"")
_QUOTED_PORT = pattern(
    r"(?i:port could not be cast to integer value as|invalid port:?|invalid integer value|invalid url escape"
    r"|(invalid literal for int\(\) with base 10:|for input string:))[ \t]*"
    r"(?:\\*'([^'\r\n\\]*)|\\*\"([^\"\r\n\\]*))"
)
# libpq (psycopg, psycopg2) quotes the word of a DSN it could not parse: with a space in a
# password (password=Sup3r S3cret), that word is the password's second half
_LIBPQ = pattern(
    r"missing \"=\" after \"([^\"\r\n]*)\" in connection info string|unexpected spaces found in \"([^\"\r\n]*)\""
)


# ---------------------------------------------------------------------------------------------
_NOT_SECRETS = frozenset(
    {"", MASK, "null", "none", "nil", "true", "false", "undefined", "bearer", "basic", "token", "digest",
     "negotiate", "ntlm", "<redacted>", "[redacted]", "redacted", "********", "xxx",
     "%s", "%r", "%d", "?", "{}", "<token>", "<password>", "<secret>",
     "yes", "no"}  # MySQL's "(using password: YES)"
)  # fmt: skip


def _not_secret(value: str) -> bool:
    """A placeholder, not a value: ``***``, ``null``, ``%s``, ``<token>``, a shell variable in capitals
    (``$TOKEN``, ``${PG_PASSWORD}``; ``$ecret1`` is a value)."""
    if value.lower() in _NOT_SECRETS:
        return True
    name = (
        value[2:-1]
        if value.startswith("${") and value.endswith("}")
        else value[1:]
        if value[:1] == "$"
        else ""
    )
    return (
        name.isupper() and name.replace("_", "A").isalnum() and not name[0].isdigit()
    )  # $TOKEN, not $ecret1


# a key whose value is a name, place, kind or time, not the secret itself: secret_name=, token_url=
_NAME_SUFFIXES = (
    "file", "path", "dir", "url", "uri", "name", "type", "arn", "expiry", "expires", "expires_at",
    "expiration", "ttl", "timeout", "length", "count", "format", "mode", "version", "policy", "scope",
    "method", "endpoint", "location", "_id", "-id", ".id", "keyid", "provider", "manager", "store",
    # a hash of a secret, not the secret (kubeadm's --discovery-token-ca-cert-hash sha256:...)
    "hash", "digest", "fingerprint", "checksum",
    "stdin",  # docker login --password-stdin: the secret comes from standard input, the next word is not it
)  # fmt: skip
# keys ending in an id suffix whose value is the credential itself: a session's id, AppRole's secret_id
_SECRET_IDS = ("sessionid", "session_id", "session-id", "secret_id", "secret-id", "secretid")
# keys that end in "key" and name a row, an object or a parameter: a name, not a secret
_NAMING_KEYS = (
    "parameterkey", "objectkey", "s3key", "s3_key", "partitionkey", "partition_key", "sortkey", "sort_key",
    "hashkey", "rangekey", "tagkey", "primarykey", "primary_key", "foreignkey", "foreign_key", "routingkey",
    "routing_key", "cachekey", "cache_key", "dedupkey", "dedup_key", "idempotencykey", "idempotency_key",
    "idempotency-key", "groupkey", "group_key", "sessionkey_name", "monkey", "turkey", "hockey", "whiskey",
    "projectkey", "project_key", "project-key", "issuekey", "issue_key", "bucketkey", "bucket_key",
    "publickey", "public_key", "public-key", "pubkey", "pub_key",
)  # fmt: skip
# flags that name a key by its id (GnuPG's and duplicity's --encrypt-key 9F3C2A1B), not a secret
_KEY_ID_FLAGS = frozenset({"encrypt-key", "sign-key", "hidden-encrypt-key", "default-key", "trusted-key", "local-user"})  # fmt: skip
# Python's "SomeTokenError: message": an exception's name, not a key
_EXCEPTION_SUFFIXES = ("error", "exception", "warning", "fault", "failure")
# key<space>value is a secret only after an identifier whose last word names one
_SPACED_KEY = pattern(
    r"(?:[a-z0-9]+[_.-])*(?:password|passwd|passphrase|pwd|secret|token|api[_-]?key|access[_-]?key"
    r"|secret[_-]?key|private[_-]?key|account[_-]?key|credentials?|client[_-]?secret"
    r"|requirepass|masterauth"  # Redis's config directives, echoed as they are written: requirepass "x"
    + "".join(f"|{word}" for word in secret_words.PASSPHRASE_WORDS)
    + r")(?:は|が|を|는|은|를|을|가|이|为|是|為)?$"  # a particle after the key: パスワードは x, 비밀번호는 x
)
_PASSWORD_KEYS = (
    "pass",
    "pwd",
    "secret",
    "pw",
    *secret_words.PASSPHRASE_WORDS,
)  # values that may hold spaces (passphrases)
_ENGLISH_KEY_WORDS = ("pass", "pw", "token", "key", "secret", "credential", "sig", "auth", "session", "cookie")  # fmt: skip
_KEY_WORDS = (*_ENGLISH_KEY_WORDS, *_FOREIGN_WORDS)
_XML_WORDS = ("pass", "pwd", "secret", "token", "credential", "signature", "key", *_FOREIGN_WORDS)
_SCHEMES = frozenset({"bearer", "basic", "token", "digest", "negotiate", "ntlm", "aws4-hmac-sha256", "hmac",
                      "sharedkey", "sharedkeylite", "apikey", "key", "dpop", "mac", "oauth", "otp", "sso-key"})  # fmt: skip
_WORD_STOPS = frozenset(" \t\r\n&;,\"'<>()[]{}=:")
_HEXDIGITS = frozenset(string.hexdigits)
_HEX = str.maketrans("", "", "0123456789abcdefABCDEF")
_CASES = str.maketrans(string.ascii_uppercase + string.ascii_lowercase, "U" * 26 + "l" * 26)
_HASH_WORDS = (
    "sha", "md5", "hash", "digest", "commit", "checksum", "etag", "fingerprint", "revision", "rev ",
    "oid", "blob", "tree", "trace", "span", "request", "correlation", "uuid", "guid", "object", "build",
    "image", "layer", "integrity", "crc", "git", "head", "version", "_id", "-id", " id", "id=", "id:",
    "id>", 'id"', "id'",  # <HostId>, "RequestId": (an id's key, in XML, JSON or a repr)
    "container", "ref ", "ref:", "ref=", "refs/", "reference", "checkout", "merge", "rebase", "revert", "reset", "cherry-pick", "fetch",
    "want ", "pack", "parent", "ocid1.", "arn:", "run '", "run_", "job ", "job '", "job_", "ssh-rsa", "ssh-ed25519", "ssh-dss", "event", "updating", "change", "check sum", "public", "peer",
    "chunk",  # a buffer's chunk id (Fluentd's chunk="<32 hex>")
    # an object named by its noun just before its id (Comet's "experiment <32 hex>", Swarm's "node <25>")
    "experiment", "node ", "dataset", "model ", "artifact", "pipeline", "workflow", "deployment",
    "instance", "volume", "snapshot", "service ", "task ", "workspace",
)  # fmt: skip
_GATES = LiteralSet((*_FOREIGN_WORDS, *_DEVICE_WORDS, "echo", "printf", "connect", "/u"))
"""The literals that gate the families below a plain message's cost, found in one pass of the
lowered text (one search per word would scan it once per word)."""
PATTERNS: tuple[Pattern, ...] = (
    _PEM, _URI, _WEBHOOK, _COOKIE, _AUTHORIZATION, _SCHEME, _KEY_VALUE, _KEY_SPACE, _XML_ELEMENT, *_NAMED,
    _ORACLE, _TABLE_RULE, _PLAIN_HEADER, _PYDANTIC_INPUT, _AUTH_COMMAND, _REDIS_DIRECTIVE, _SENTINEL_AUTH, _IDENTIFIED_BY, _PASS_COMMAND, _IMAP_LOGIN, _REDIS_CONFIG_REPLY, _SMTP_CHALLENGE, _SMTP_ANSWER,
    _VENDOR, _RUN, _LIBPQ, _QUOTED_PORT, _RELATIVE_URL, _USERINFO, _EXPECT_SEND, _CREDENTIAL_PAIR, _SECURE_STRING, _NET_USE, _FTP_USER, _SPACED_KEY,
    _ERLANG_TUPLE, _REDIS_USERINFO, _CONNECT_CALL, _CALL_ARGUMENT, _CONNECT_DIRECTIVE, _WINDOWS_LOGIN, _PIPED,
    _DEVICE_SECRET, _CRYPT_HASH, _MODIFIED_KEY, _CARET_PLAIN, _SASL_ELEMENT, _SETTING_ECHO, _NAGIOS_MACRO,
)  # fmt: skip
"""Every pattern redaction runs (the linear-time test runs each on adversarial input)."""

BASE64_ENTROPY_LIMIT = 4.5
"""detect-secrets' Base64HighEntropyString default: a base64 run above this is random."""
HEX_ENTROPY_LIMIT = 3.0
"""detect-secrets' HexHighEntropyString default, for hex runs of 32+ characters not named as a hash."""


MAX_MATCHES = 64
"""Past this many matches of one pattern in one text, the rest of the text is hidden: a text made
of secrets' shapes is hidden whole at no cost, where judging each match would cost time."""
MAX_RUNS = 100
"""The high-entropy catch-all judges at most this many long runs of a text (a long traceback has
many paths), then stops: the other families still run on the whole text."""


def _matches(pattern_: Pattern, text: str, spans: list[Span], limit: int = MAX_MATCHES) -> Iterator[Any]:
    """The matches of ``pattern_`` in ``text``, at most ``limit``; past it, the rest is one span."""
    for count, match in enumerate(pattern_.finditer(text)):
        if count == limit:
            spans.append((match.start(), len(text)))
            return
        yield match


def _content(text: str, start: int, end: int) -> Span:
    """What is inside a matched value: after its opening quote (and the backslashes escaping it)
    or brace, before its closing brace; a bare value is all content."""
    lead = start
    while lead < end and text[lead] == "\\":
        lead += 1
    if lead < end and text[lead] in "\"'":
        return lead + 1, end
    if start < end and text[start] == "{":
        return start + 1, end - 1 if end - start > 1 and text[end - 1] == "}" else end
    return start, end


def _imap_logins(text: str, spans: list[Span]) -> None:
    """IMAP's ``tag LOGIN user password``; ``SASL LOGIN authentication failed`` names a mechanism."""
    for match in _matches(_IMAP_LOGIN, text, spans):
        if match.group(1).upper() in ("SASL", "AUTH", "MECHANISM"):
            continue
        for index in (2, 3):
            start, end = match.span(index)
            if start >= 0:
                start, end = _content(text, start, end)
                if end > start and text[start:end] != MASK:
                    spans.append((start, end))
                break


def _setting_echoes(text: str, spans: list[Span]) -> None:
    """A quoted setting's value after its quoted name, when the name is a secret's."""
    for match in _matches(_SETTING_ECHO, text, spans):
        if _secret_name(match.group(1)):
            for index in (2, 3):
                start, end = match.span(index)
                if start >= 0 and end > start and not _not_secret(text[start:end]):
                    spans.append((start, end))


def _erlang_tuples(text: str, spans: list[Span]) -> None:
    """An option tuple's value when its atom names a secret (``{password, "x"}``)."""
    for match in _matches(_ERLANG_TUPLE, text, spans):
        if _secret_name(match.group(1)) or match.group(1).lower() == "pw":
            for index in (2, 3, 4):
                start, end = match.span(index)
                if start >= 0:
                    if end > start and not _not_secret(text[start:end]):
                        spans.append((start, end))
                    break


def _nagios_macros(text: str, spans: list[Span]) -> None:
    """A ``$USERn$`` macro's value, unless a path or a lower-case name (``/usr/local/nagios/libexec``, ``nagios_db``)."""
    for match in _matches(_NAGIOS_MACRO, text, spans):
        start, end = match.span(1)
        value = text[start:end]
        if (
            value.startswith(("/", "$"))
            or value.replace("_", "a").replace("-", "a").replace(".", "a").isalpha()
            and value.islower()
        ):
            continue
        if not _not_secret(value):
            spans.append((start, end))


def _spans_of(pattern_: Pattern, text: str, spans: list[Span], groups: int = 1) -> None:
    """Add the first taking-part group of every match (a pattern whose ``groups`` are all secrets)."""
    for match in _matches(pattern_, text, spans):
        for index in range(1, groups + 1):
            start, end = match.span(index)
            if start >= 0:
                start, end = _content(text, start, end)
                if end > start and text[start:end] != MASK:
                    spans.append((start, end))
                break


_HOST_NAMES = ("host", "dsn", "url", "uri", "addr", "server", "endpoint")


def _location(arg: str) -> bool:
    """Whether a call's or a directive's argument names where to connect: a URL, a DSN
    (``mysql:host=db;dbname=x``, ``jdbc:h2:mem:x``, ``dbi:Pg:dbname=x``), an IP address or a host name with its domain (a port after
    ``:`` or in parentheses, a user before ``@``), ``localhost``, or a variable named for one (``$dsn``)."""
    if arg[:1] not in "'\"":
        name = arg.lstrip("$").lower()
        return any(word in name for word in _HOST_NAMES)
    value = arg[1:-1]
    head, colon, rest = value.partition(":")
    if "://" in value or (
        head.replace("+", "").isalnum() and head[:1].isalpha() and colon and ("=" in rest or ":" in rest)
    ):
        return True
    if any(c in value for c in " \t/\\") or not value:
        return False
    host = value.rsplit("@", 1)[-1].split("(", 1)[0]
    host = host.rsplit(":", 1)[0] if host.count(":") == 1 else host
    labels = host.split(".")
    if len(labels) == 4 and all(label.isdigit() for label in labels):
        return True
    return host == "localhost" or (
        len(labels) >= 3
        and labels[-1].isalpha()
        and all(label.replace("-", "").isalnum() for label in labels)
    )


def _user_name(arg: str) -> bool:
    """A quoted user's name: 1-64 characters, no space, not a location (``'etl'``, ``'ACME\\\\svc'``)."""
    value = arg[1:-1]
    return (
        arg[:1] in "'\""
        and 0 < len(value) <= 64
        and not any(c.isspace() for c in value)
        and "/" not in value
        and not _location(arg)
    )


def _connection_arguments(args: list[tuple[int, int, str]], spans: list[Span]) -> None:
    """Of a connection's arguments, the one after a location and a user's name: the password."""
    for index in range(len(args) - 2):
        if _location(args[index][2]) and _user_name(args[index + 1][2]):
            start, end, password = args[index + 2]
            if password[:1] in "'\"":
                start, end = start + 1, end - 1
            if end > start and not _not_secret(password.strip("'\"")) and password[:1] != "$":
                spans.append((start, end))
            return


def _connection_calls(text: str, spans: list[Span]) -> None:
    for match in _matches(_CONNECT_CALL, text, spans):
        offset = match.start(1)
        args = [
            (offset + a.start(), offset + a.end(), a.group()) for a in _CALL_ARGUMENT.finditer(match.group(1))
        ]
        _connection_arguments(args, spans)


def _connection_directives(text: str, spans: list[Span]) -> None:
    """``SQLConnectInfo db@host:3306 user x``: the location is bare, quoted here to be judged the same way."""
    for match in _matches(_CONNECT_DIRECTIVE, text, spans):
        location, user, password = match.group(1), match.group(2), match.group(3)
        if _location(f"'{location}'") and _user_name(f"'{user}'") and not _prose(password):
            if not _not_secret(password):
                spans.append(match.span(3))


def _device_secrets(text: str, spans: list[Span]) -> None:
    """A device configuration's secret: after an encryption type, any value but a word of a
    sentence (``password 7 times``); without one, a value that is not a word (``password authentication``)."""
    for match in _matches(_DEVICE_SECRET, text, spans):
        start, end = _content(text, *match.span(2))
        if end > start and text[end - 1] == '"':
            end -= 1
        value = text[start:end]
        kind = match.group(1)
        if _not_secret(value) or value.startswith(MASK) or value.lower() in PROSE_WORDS:
            continue
        words = text[match.start() : start].lower().split()
        if len(words) >= 2 and words[-2] in ("create", "drop", "alter", "replace", "exists", "describe"):
            continue  # create secret s3_prod (...): the object's name, its fields are judged each
        if kind == "0" or not _prose(value):
            spans.append((start, end))


def _piped_secrets(text: str, lowered: str, spans: list[Span]) -> None:
    """What ``echo``/``printf`` writes into a command that reads a secret from standard input:
    the sink on the same line after ``|``, or on the line before or after (a ``bash -x`` trace)."""
    for match in _matches(_PIPED, text, spans):
        start, end = match.span(1)
        line_start = lowered.rfind("\n", 0, start) + 1
        line_end = lowered.find("\n", end)
        line_end = len(lowered) if line_end < 0 else line_end
        before = lowered.rfind("\n", 0, max(0, line_start - 1)) + 1
        after = lowered.find("\n", line_end + 1)
        after = len(lowered) if after < 0 or line_end >= len(lowered) else after
        rest = lowered[end:line_end]
        near = (
            (rest[rest.find("|") :] if "|" in rest else "")
            + lowered[before:line_start]
            + lowered[line_end:after]
        )
        if not any(sink in near for sink in _STDIN_SINKS):
            continue
        start, end = _content(text, start, end)
        if text[end - 1 : end] in ("'", '"') and end - 1 > start:
            end -= 1
        if end > start and not _not_secret(text[start:end]) and text[start:end] != "-":
            spans.append((start, end))


def _modified_keys(text: str, spans: list[Span]) -> None:
    for match in _matches(_MODIFIED_KEY, text, spans):
        if any(word in PROSE_WORDS for word in match.group(2).lower().split()):
            continue
        raw_start, raw_end = match.span(3)
        start, end = _content(text, raw_start, raw_end)
        if end > start and text[end - 1] in "'\"" and start > raw_start:
            end -= 1
        value = text[start:end]
        if not _not_secret(value) and not (start == raw_start and _prose_after_colon(text, start, value)):
            spans.append((start, end))


def _pem(text: str, spans: list[Span]) -> None:
    spans.extend(match.span() for match in _matches(_PEM, text, spans))


def _is_port_then_path(rest: str, colon: int, at: int) -> bool:
    """``https://host:443/a@b``: digits after the colon, then a path; the @ is in the path."""
    digits = colon + 1
    while digits < len(rest) and digits - colon <= 6 and rest[digits].isdigit():
        digits += 1
    return (
        1 <= digits - colon - 1 <= 5
        and (digits == len(rest) or rest[digits] in "/?#")
        and "/" in rest[colon + 1 : at]
    )


def _uri_spaced(text: str, end: int, start: int, rest: str, spans: list[Span]) -> None:
    """``http://user:pass word@host`` (urllib3's "Failed to parse: ..."): a user, a colon, no @ in
    the word, and an @ further on the line: the password runs to that @."""
    colon = rest.find(":")
    password = rest[colon + 1 :]
    if colon <= 0 or "/" in rest or password.isdigit() or password == MASK:
        return
    window = text[end : end + 128].split("\n", 1)[0]
    at = window.find("@")
    if at > 0 and "/" not in window[:at]:
        spans.append((start + colon + 1, end + at))


_INNER_URIS = 16
"""At most this many URIs inside one URI's word are looked at (a redirect_uri=https://... value)."""


def _uri_rest(text: str, start: int, rest: str, end: int, spans: list[Span]) -> None:
    """The password of one URI whose text after ``://`` is ``rest`` (at ``start`` in ``text``)."""
    at = rest.rfind("@")
    if at < 0:
        _uri_spaced(text, end, start, rest, spans)
        return
    colon = rest.find(":", 0, at)
    if colon < 0 or "/" in rest[:colon] or rest[colon + 1 : at] in ("", MASK):
        return
    if not _is_port_then_path(rest, colon, at):
        spans.append((start + colon + 1, start + at))


MAX_QUERY_PARAMETERS = 32
"""At most this many parameters of one URL's query are judged by their shape."""
# a query parameter whose name says its value is a hash, a version or a trace: its shape is no clue
_QUERY_HASH_KEYS = ("sha", "hash", "digest", "commit", "checksum", "etag", "rev", "ref", "version", "trace",
                    "span", "request", "correlation", "fingerprint", "oid", "uuid", "guid", "integrity")  # fmt: skip


# query parameters that carry a credential by their protocol: OAuth 2.0's authorization code and
# client assertion (RFC 6749 4.1.2, RFC 7523), CAS's service ticket, SAML's response, a one-time code
_QUERY_CREDENTIALS = frozenset({"code", "assertion", "client_assertion", "ticket", "samlresponse", "otp"})


# a resource's structured name (an OCID, an ARN, a URN): an id, whatever its random part looks like
_RESOURCE_NAMES = ("ocid1.", "arn:", "urn:", "arn%3a", "urn%3a")
# a query whose user is named gives its password as p= (InfluxDB 1.x: ?u=x&p=y)
_QUERY_USERS = ("u=", "user=", "username=")


def _query(start: int, rest: str, spans: list[Span], readable: list[Span]) -> None:
    """Every parameter of one URL's query (``rest`` at ``start``): a value shaped as a credential
    (random, long hex) is hidden whatever its name (``&appid=<32 hex>``), unless the name says it is
    a hash; a secret-named one is the key family's. When the query holds a secret, the URL's path
    is what on-call reads (a resource's id beside ``sig=``): its random-looking pieces stay."""
    question = rest.find("?")
    if question < 0:
        return
    secret = False
    offset = start + question + 1
    query = rest[question + 1 :]
    has_user = query.startswith(_QUERY_USERS) or any(f"&{user}" in query for user in _QUERY_USERS)
    for parameter in rest[question + 1 :].split("&", MAX_QUERY_PARAMETERS)[:MAX_QUERY_PARAMETERS]:
        key, equals, value = parameter.partition("=")
        value = value.split("#", 1)[0]
        if equals and value and "//" not in value and "%2f%2f" not in value.lower():  # not a URL
            if _secret_column(key) and not (key.lower() in ("key", "keys") and len(value) >= 16):
                secret = True
            elif (
                key.lower() in _QUERY_CREDENTIALS
                or (key == "p" and has_user)
                or (key.lower() in ("key", "keys") and _has_digit(value))
            ) and not value.isdigit():
                value_start = offset + len(key) + 1
                spans.append((value_start, value_start + len(value)))
                secret = True
            elif (
                not any(word in key.lower() for word in _QUERY_HASH_KEYS)
                and not value.lower().startswith(_RESOURCE_NAMES)
                and _looks_random(value)
            ):
                value_start = offset + len(key) + 1
                spans.append((value_start, value_start + len(value)))
                secret = True
        offset += len(parameter) + 1
    path = rest.find("/", 0, question)
    if secret and path >= 0:
        readable.append((start + path, start + question))


def _userinfo(text: str, spans: list[Span]) -> None:
    for match in _matches(_USERINFO, text, spans):
        if match.group(3) is not None:
            if match.group(3) != MASK:
                spans.append(match.span(3))  # user@domain:password
            continue
        start, end = match.span(1)
        if match.group(2):
            continue  # a backend's scp-style location (restic's sftp:user@host:/path): a name, no password
        if not text[start:end].isdigit() and text[start:end] != MASK:
            spans.append((start, end))


def _relative_urls(text: str, spans: list[Span], readable: list[Span]) -> None:
    for match in _matches(_RELATIVE_URL, text, spans):
        _query(match.start(1), match.group(1), spans, readable)


_HOOK_SEGMENTS = frozenset({"hook", "hooks", "webhook", "webhooks", "webhookb2", "robot"})


def _has_digit(word: str) -> bool:
    return any(c.isdigit() for c in word)


def _hook_path(start: int, rest: str, spans: list[Span]) -> None:
    """A URL whose path is its credential: after a ``hook``/``hooks``/``webhook``/``webhooks``
    segment (Feishu's ``/bot/v2/hook/<uuid>``, Zapier's ``/hooks/catch/<id>/<key>``), each later
    segment that is not a number or a word without digits is hidden."""
    path = rest.split("?", 1)[0].split("#", 1)[0]
    offset = 0
    after_hook = False
    for segment in path.split("/"):
        if (
            after_hook
            and segment
            and not segment.isdigit()
            and (not _readable(segment) or _has_digit(segment))
        ):
            spans.append((start + offset, start + offset + len(segment)))
        after_hook = after_hook or segment.lower() in _HOOK_SEGMENTS
        offset += len(segment) + 1


def _uri(text: str, spans: list[Span], readable: list[Span]) -> None:
    for match in _matches(_URI, text, spans):
        start, end = match.span(1)
        rest = match.group(1)
        _uri_rest(text, start, rest, end, spans)
        _query(start, rest, spans, readable)
        if "hook" in rest.lower() or "robot" in rest.lower():
            _hook_path(start, rest, spans)
        inner = rest.find("://")
        for _ in range(_INNER_URIS):  # a URI in the query or path of this one
            if inner < 1:
                break
            if rest[inner - 1].isalnum():
                _uri_rest(text, start + inner + 3, rest[inner + 3 :], end, spans)
            inner = rest.find("://", inner + 3)


def _header_value(text: str, match: Any, stops: str) -> Span:
    """The value of a ``Name: value`` header matched to its line's end: inside its quotes (to the
    quote that closes it at its own depth of backslashes), else up to the first of ``stops``."""
    start, end = match.span()
    start = min(i for i in (text.find(":", start, end), text.find("=", start, end)) if i >= 0) + 1
    while start < end and text[start] in " \t":
        start += 1
    lead = start
    while lead < end and text[lead] == "\\":
        lead += 1
    if lead < end and text[lead] in "\"'":
        close = lead + 1
        while (close := text.find(text[lead], close, end)) >= 0:
            slashes = close
            while text[slashes - 1] == "\\":
                slashes -= 1
            if close - slashes == lead - start:  # as many backslashes as the opening quote
                return lead + 1, close
            close += 1
        return lead + 1, end
    cut = min((i for i in (text.find(c, start, end) for c in stops) if i >= 0), default=end)
    return start, _escaped_line_end(text, start, cut)


def _escaped_line_end(text: str, start: int, end: int) -> int:
    """Where a value ends before a repr's escaped line end (``\\r\\n`` in ``send: b'...'``), else ``end``."""
    found = [i for i in (text.find("\\r", start, end), text.find("\\n", start, end)) if i >= 0]
    return min(found) if found else end


def _cookie(text: str, spans: list[Span]) -> None:
    for match in _matches(_COOKIE, text, spans):
        start, end = _header_value(text, match, "")
        if end > start and text[start:end] != MASK:
            spans.append((start, end))


def _authorization(text: str, spans: list[Span]) -> None:
    for match in _matches(_AUTHORIZATION, text, spans):
        start, end = match.span()
        digest = text[start:end].lower().find("digest")
        start, end = _header_value(text, match, "" if 0 <= digest < 40 else "\"'&,;")
        value = text[start:end]
        scheme, _, rest = value.partition(" ")
        if rest.strip() and _scheme_word(scheme):  # keep the scheme: "Bearer ***", "GenieKey ***"
            start += len(scheme) + len(rest) - len(rest.lstrip(" \t")) + 1
        line = text[start : _escaped_line_end(text, start, match.end())]
        if "%26" in line or ("&" in line and "=" in line):
            continue  # a parameter list (Cosmos DB's type=master&ver=1.0&sig=x): each judged by its name
        if not 0 <= digest < 40 and _AUTH_PARAMETERS.match(line):
            _auth_parameters(text, start, start + len(line), spans)  # Hawk id="x", ts="1", mac="***"
            continue
        equals = text.find("=", start, end)
        if 0 <= equals and text[start:equals].isalpha() and " " not in text[start:equals]:
            start = equals + 1  # AWS4-HMAC-SHA256 Credential=***: the parameter's name stays
        if digest < 0 or digest >= 40:  # one credential: to the next space (Digest's run to the end)
            space = min(
                (i for i in (text.find(" ", start, end), text.find("\t", start, end)) if i >= 0), default=end
            )
            end = space
        while end > start and text[end - 1] in " \t":
            end -= 1
        if end > start and not _not_secret(text[start:end]):
            spans.append((start, end))


# a scheme's quoted auth-params (RFC 7235): Hawk id="x", ts="1", nonce="y", mac="z"
_AUTH_PARAMETERS = pattern(r"[A-Za-z_][\w-]*=\\*\"[^\"\r\n]*\"[ \t]*,[ \t]*[A-Za-z_][\w-]*=\\*\"")
_AUTH_PARAMETER = pattern(r"([A-Za-z_][\w-]*)=\\*\"([^\"\r\n\\]*)")
# the auth-params that carry the proof: Hawk's mac, OAuth 1.0's oauth_signature and oauth_token
_PROOF_PARAMETERS = frozenset({"mac", "signature", "sig", "oauth_signature", "oauth_token", "token", "response"})  # fmt: skip


def _auth_parameters(text: str, start: int, end: int, spans: list[Span]) -> None:
    """Each quoted auth-param after a scheme word: the proof's value is hidden, the id, time and nonce stay."""
    for match in _matches(_AUTH_PARAMETER, text[start:end], []):
        if match.group(1).lower() in _PROOF_PARAMETERS and match.group(2):
            spans.append((start + match.start(2), start + match.end(2)))


def _scheme_word(word: str) -> bool:
    """An authorization scheme's name, whatever it is (``Bearer``, ``GenieKey``, ``Splunk``, ``SSWS``,
    ``AWS4-HMAC-SHA256``, ``SharedKey``): a known one, or a short word of letters (a few digits and
    dashes at most) that does not look random. The credential after it is hidden, the word kept."""
    if word.lower() in _SCHEMES:
        return True
    letters = word.replace("-", "").replace("_", "")
    return (
        0 < len(word) <= 24
        and word[0].isalpha()
        and letters.isalnum()
        and letters.isascii()
        and sum(c.isdigit() for c in word) <= 4
        and not _looks_random(word)
    )


def _looks_encoded(secret: str) -> bool:
    """Base64, not an English word: ``Basic authentication failed`` keeps its word."""
    return secret.endswith("=") or any(c.isdigit() or c in "+/" for c in secret) or not secret[1:].islower()


def _scheme(text: str, spans: list[Span]) -> None:
    for match in _matches(_SCHEME, text, spans):
        if match.group(1).lower() == "bearer" or _looks_encoded(match.group(2)):
            spans.append(match.span(2))


def _prose(value: str) -> bool:
    """A word of a sentence, not a value: a lower-case word or an error code (``provided.``,
    ``[unauthorized_client]``, ``invalid_grant``), a bracketed one, or punctuation alone."""
    word = value.strip("[](){}<>.,;:!?'\"`")
    return not word or (word.replace("_", "").replace("-", "").isalpha() and word.islower())


def _looks_secret(value: str) -> bool:
    """A value after ``key<space>``: 6+ characters with a digit, a symbol or an inner capital, not an ARN or
    URL, not a word of the sentence (``Invalid client secret provided.``)."""
    if len(value) < 6 or value.lower().startswith("arn:") or "://" in value or _prose(value):
        return False
    if value.isalpha() and value.isupper():
        return False  # a constant's or a message's word (PASSWORD INVALID), not a password
    return any(not c.isalpha() for c in value) or not value[1:].islower()


def _continuation(text: str, end: int) -> int:
    """Where a password's bare value ends: it takes the following plain words (``correct horse
    battery``) up to a word that is the next key (``user=``), a flag, an address or path, a delimiter
    or the line's end."""
    size = len(text)
    while True:
        word = end
        while word < size and text[word] in " \t":
            word += 1
        if word == end or word >= size or text[word] == "-":
            return end
        stop = word
        while stop < size and text[stop] not in _WORD_STOPS:
            stop += 1
        if stop == word or (stop < size and text[stop] in "=:"):
            return end
        if text[word].isdigit() or any(c in "/.@" for c in text[word:stop]):
            return end  # an address, a path or a number: the command's next argument
        end = stop


_BLOCK_SCALARS = frozenset({"|", ">", "|-", ">-", "|+", ">+"})


def _block_lines(text: str, key_start: int, end: int, spans: list[Span]) -> None:
    """The lines of a YAML block scalar under a secret-named key: each line indented deeper than the key's."""
    line_start = text.rfind("\n", 0, key_start) + 1
    indent = len(text[line_start:key_start]) - len(text[line_start:key_start].lstrip(" \t"))
    for _ in range(MAX_TABLE_LINES):
        newline = text.find("\n", end)
        if newline < 0:
            return
        start = newline + 1
        stop = text.find("\n", start)
        stop = len(text) if stop < 0 else stop
        line = text[start:stop]
        if not line.strip() or len(line) - len(line.lstrip(" \t")) <= indent:
            return
        spans.append((start + len(line) - len(line.lstrip(" \t")), stop))
        end = stop


def _list_items(text: str, end: int, spans: list[Span]) -> None:
    """The further items of a YAML list under a secret-named key, each hidden to its line's end."""
    while (newline := text.find("\n", end)) >= 0:
        item = newline + 1
        while item < len(text) and text[item] in " \t":
            item += 1
        if not text.startswith(("- ", "-\t"), item):
            return
        end = text.find("\n", item)
        end = len(text) if end < 0 else end
        spans.append((item + 2, end))


def _secret_key(key: str) -> bool:
    """Whether a matched key really names a secret (not ``secret_name``, ``token_url``, ``PWD=/home``;
    ``secret_id`` is Vault AppRole's credential, ``token_id`` and ``key_id`` name one)."""
    lowered = key.lower().lstrip("-")
    if key.startswith("--") and lowered in _KEY_ID_FLAGS:
        return False
    if lowered.endswith(_NAMING_KEYS) or lowered.endswith(_EXCEPTION_SUFFIXES):
        return False
    return not lowered.endswith(_NAME_SUFFIXES) or lowered.endswith(_SECRET_IDS)


def _spaced_value(key: str, value: str) -> bool:
    """Whether ``key value`` (no = or :) is a secret: a flag's argument (``--password x``,
    ``-storepass x``), or a secret after an identifier naming one (``aws_secret_access_key x``)."""
    if value.startswith("-"):
        return False  # the next flag: the value was asked for
    if key.startswith("-"):
        return not (value.isalpha() and value.islower() and len(value) <= 4)  # --password via the CLI
    if key.lower() in ("requirepass", "masterauth"):
        return True  # Redis's config line, echoed: requirepass "foobared" (any value is the password)
    return _SPACED_KEY.match(key.lower()) is not None and _looks_secret(value)


_DDL_VERBS = (
    "create",
    "create or replace",
    "drop",
    "alter",
    "describe",
    "show",
    "if not exists",
    "if exists",
)
_SPACED_VALUE_CHARS = 256
"""A value read after ``key<space>`` is at most this long (the scan is bounded, so it stays linear)."""
_BARE_STOPS = frozenset(" \t\r\n&;,\"'<>)]}")


def _next_word(text: str, start: int) -> Span:
    """The word at ``start``: inside its quotes if quoted, else to a space or delimiter (bounded)."""
    limit = min(len(text), start + _SPACED_VALUE_CHARS)
    if start < limit and text[start] in "\"'":
        close = text.find(text[start], start + 1, limit)
        newline = text.find("\n", start + 1, limit)
        end = min(i for i in (close, newline, limit) if i >= 0)
        return start + 1, end
    end = start
    while end < limit and text[end] not in _BARE_STOPS:
        end += 1
    return start, end


def _key_space_values(text: str, spans: list[Span]) -> None:
    for match in _matches(_KEY_SPACE, text, spans):
        key = match.group(1)
        start, end = _next_word(text, match.end())
        end = _escaped_line_end(text, start, end)
        value = text[start:end]
        name, equals, _ = value.partition("=")
        if equals and name.replace("_", "").replace("-", "").isalnum():
            continue  # the next assignment (Token token=x): its key is the key family's
        if text[max(0, match.start(1) - 24) : match.start(1)].lower().rstrip().endswith(_DDL_VERBS):
            continue  # CREATE SECRET s3_prod (...): the object's name, its fields are judged each
        if value.startswith("(") or value.lower() in _DEVICE_KINDS:
            continue  # a sub-expression (-Password (ConvertTo-SecureString ...), judged by its own
            # family) or a device's encryption type (secret sha512 $6$...: the crypt family's)
        if end > start and not _not_secret(value) and _secret_key(key):
            if _spaced_value(key, value):
                spans.append((start, end))


_ACCESS_KEY_IDS = ("accesskey", "access_key", "access-key", "accesskeyid", "access_key_id", "access-key-id")
_SECRET_KEY_NAMES = ("secretkey", "secret_key", "secret-key", "secretaccesskey", "secret_access_key")


def _access_key_id(key: str, text: str) -> bool:
    """An access key beside a secret key in the same text names the key pair's id (Druid's
    ``druid.s3.accessKey`` and ``druid.s3.secretKey``, MinIO's ``AccessKeyID``): the id is readable."""
    lowered = key.lower()
    if "secret" in lowered or not lowered.endswith(_ACCESS_KEY_IDS):
        return False  # aws_secret_access_key, SecretAccessKey: the secret itself
    return any(name in text.lower() for name in _SECRET_KEY_NAMES)


_GO_FIELD = pattern(r"[A-Z][A-Za-z0-9]*:")


def _go_empty_field(text: str, key_start: int, key: str, sep: str, value: str) -> bool:
    """Go's ``%+v`` of a struct with an empty field: ``{... SessionToken: UseSSL:false}``, the "value"
    is the next field's name and value."""
    if sep != ": " or _GO_FIELD.match(key + ":") is None or _GO_FIELD.match(value) is None:
        return False
    line_start = text.rfind("\n", 0, key_start) + 1
    return "{" in text[line_start:key_start]


def _key_values(text: str, spans: list[Span]) -> None:
    for match in _matches(_KEY_VALUE, text, spans):
        (key_start, key_end), (sep_start, sep_end) = match.span(1), match.span(2)
        key, sep = text[key_start:key_end], text[sep_start:sep_end]
        if not _secret_key(key) or text[max(0, key_start - 3) : key_start] == "://":
            continue  # not a secret's name, or the user of a URI (https://x-access-token:...@): the URI's family
        if text[max(0, key_start - 7) : key_start].lower() in ("public ", "public-"):
            continue  # a public key (WireGuard's "public key: x") is published
        raw_start, raw_end = match.span(3)
        start, end = _content(text, raw_start, raw_end)
        value = text[start:end]
        if _not_secret(value):
            continue
        if start == raw_start and _go_empty_field(text, key_start, key, sep, value):
            continue
        if _access_key_id(key, text):
            continue
        if (
            start > raw_start
            and text[start - 1] in "\"'"
            and text[start : start + 1] in (" ", "\t")
            and sep.endswith((" ", "\t"))
        ):
            continue  # 'Password: " (spawn_id': the quote closes a string around the key, it opens no value
        if _user_and_password_key(key) and ":" in value and "://" not in value:
            start += value.index(":") + 1  # --auth=user:password (HTTPie, xh): the user is kept
            value = text[start:end]
            if _not_secret(value):
                continue  # "auth: Debug: client in": a log's words, no password after the colon
        if sep.rstrip().endswith(":") and value.startswith("//"):
            continue  # a scheme (https://), not a value
        if start == raw_start and value.endswith("("):
            continue  # source code's call (session = winrm.Session('host', ...)): its arguments are judged each
        inner, equals, rest = value.partition("=")
        if (
            start == raw_start
            and sep.strip("\"'\\") == ":"  # Section:option=value (boto's -o), not a header's "Name: value"
            and equals
            and rest[:1] not in ("", "=")
            and inner.replace("_", "").replace(".", "").replace("-", "").isalnum()
            and not _secret_column(inner)
        ):
            continue  # gsutil's "-o Credentials:gs_service_key_file=/k.json": the inner key names a file
        if (
            start == raw_start
            and sep.strip(" \t\"'\\") in (":", "：")
            and _prose_after_colon(text, start, value)
        ):
            continue  # "token: expired", "AUTH: Received control message": a sentence, not a value
        if start > raw_start and end < len(text) and text[end] == text[start - 1]:
            end = _quote_inside(text, start, end)
        lowered = key.lower()
        if lowered.endswith("pwd") and value.startswith(("/", "~")):
            continue  # the shell's working directory (PWD=/opt/airflow), not ODBC's password
        if lowered in ("key", "keys") and (
            not any(c.isdigit() for c in value) or "/" in value or "." in value
        ):
            continue  # a name (<entry key="db.user">, "Key": "bronze/x.parquet"), not an API key
        bare = start == raw_start
        if bare and value in _BLOCK_SCALARS:  # YAML's "password: |": the indented lines below
            _block_lines(text, key_start, end, spans)
            continue
        if bare and value.startswith("!") and text[end : end + 3].strip() in _BLOCK_SCALARS:
            _block_lines(text, key_start, end, spans)  # a tag then a block: "secret: !!binary |"
            continue
        if "\n" in sep:  # a YAML list: every item, each to its line's end
            line_end = text.find("\n", start)
            end = len(text) if line_end < 0 else line_end
            _list_items(text, end, spans)
        elif (
            bare
            and not key.startswith("-")
            and not key.isupper()
            and any(w in lowered for w in _PASSWORD_KEYS)
            and "=" in sep
        ):
            end = _continuation(text, end)  # not after FLAGS or ENV_VARS=x (a shell's word ends at a space)
        spans.append((start, end))


PROSE_WORDS = frozenset(
    {"required", "missing", "invalid", "incorrect", "expired", "empty", "wrong", "denied", "rejected",
     "mismatch", "provided", "revoked", "unknown", "needed", "unset", "changed", "reset", "not", "is",
     "was", "must", "should", "has", "have", "for", "the", "and", "failed", "none", "ok", "error",
     "refused", "blank", "absent", "malformed", "unauthorized", "forbidden", "too", "of", "does",
     "cannot", "can't", "did", "set", "yes", "no",
     # the same words in the languages of policy/secret_words.py: wrong, invalid, expired, required
     "falsch", "ungültig", "abgelaufen", "erforderlich", "incorrecte", "invalide", "expiré",
     "requis", "incorrecta", "incorrecto", "inválida", "inválido", "caducada", "requerida", "incorreta",
     "expirada", "obrigatória", "errata", "errato", "sbagliata", "scaduta", "onjuist", "ongeldig",
     "verlopen", "hatalı", "geçersiz", "yanlış", "błędne", "nieprawidłowe", "špatné", "neplatné", "fel",
     "ogiltigt", "väärä", "virheellinen", "hibás", "érvénytelen", "sai", "salah", "неверный",
     "неправильный", "недействителен", "истёк", "истек", "требуется", "невірний", "λάθος", "שגויה",
     "错误", "无效", "已过期", "間違っています", "無効", "틀렸습니다", "잘못됨", "만료됨", "غير صحيحة", "خاطئة", "गलत"}
)  # fmt: skip
"""Words that follow a secret's name in a sentence (``token: expired``): after ``:`` they are not a value."""


def _prose_after_colon(text: str, start: int, value: str) -> bool:
    """A bare value after ``key:`` that is a word of the sentence: a listed word, punctuation alone,
    or a word of letters followed by another lower-case word (``could not find``, ``Received control``)."""
    word = value.rstrip(".,;:!?")
    if not word.strip("-_*.") or word.lower() in PROSE_WORDS:
        return True
    after = start + len(value)
    if len(word) == 3 and word.isdigit() and "100" <= word < "600" and text[after : after + 1] == " ":
        # an HTTP status and its reason: "token: 401 Unauthorized"
        return text[after + 1 : after + 2].isupper()
    return (
        len(word) >= 4
        and word == value
        and word.isalpha()
        and (word.islower() or word.istitle())
        and text[after : after + 1] == " "
        and text[after + 1 : after + 2].islower()
    )


_QUOTE_INSIDE = 256


def _quote_inside(text: str, start: int, end: int) -> int:
    """Where a quoted value ends when its closing quote is followed by a letter: the quote was in
    the password (jackson's ``"sasl.password":"Kf"Pass_7"}``), so it runs to the next quote followed
    by a delimiter (bounded)."""
    quote = text[end]
    limit = min(len(text), end + _QUOTE_INSIDE)  # the whole extension is bounded, not each step
    while end + 1 < limit and (text[end + 1].isalnum() or text[end + 1] in "_-@#$%!"):
        close = text.find(quote, end + 1, limit)
        newline = text.find("\n", end + 1, close if close >= 0 else end + 1)
        if close < 0 or newline >= 0:
            return end
        end = close
    return end


def _user_and_password_key(key: str) -> bool:
    """A key whose value is ``user:password`` (``--auth=etl:x``): only the password is hidden."""
    return key.lstrip("-").lower() in ("auth", "basic-auth", "proxy-auth", "http-auth")


def _secret_name(name: str) -> bool:
    lowered = name.lower()
    return any(word in lowered for word in _XML_WORDS) and _secret_key(name)


def _xml(text: str, spans: list[Span]) -> None:
    for match in _matches(_XML_ELEMENT, text, spans):
        if match.group(2).endswith("/") or not _secret_key(match.group(1)):
            continue  # <password/> holds nothing
        start, end = match.span(3) if match.span(3)[0] >= 0 else match.span(4)
        name = match.group(1).lower()
        lines = text[start:end].strip().split("\n")
        if "user" in name and len(lines) == 2:  # OpenVPN's <auth-user-pass>: user, then password
            start = text.index(lines[1], start)
            end = start + len(lines[1].rstrip())
        if text[start:end].strip() not in ("", MASK):
            spans.append((start, end))


def _named(text: str, spans: list[Span]) -> None:
    for named in _NAMED:
        for match in _matches(named, text, spans):
            if _secret_name(match.group(1)):
                start, end = _content(text, *match.span(2))
                if (
                    start > 0
                    and text[start - 1] in "\"'"
                    and text[end - 1 : end] == text[start - 1]
                    and end > start
                ):
                    end -= 1  # the closing quote of a value read to its line's end
                if text[start:end].strip() not in _NOT_SECRETS:
                    spans.append((start, end))


def _argv(text: str, lowered: str, spans: list[Span]) -> None:
    for start, end in argv.find(text, lowered):
        if text[start:end] != MASK and not _not_secret(text[start:end]):
            spans.append((start, end))


_AUTH_LINE = 256
"""An AUTH command's arguments are read this far at most."""
_ARG_STOPS = frozenset(" \t\r\n,])\\")


def _command_args(text: str, start: int) -> list[Span] | None:
    """The arguments from ``start`` to the end of a command: words apart by spaces or by ``', '``
    (an argv list), each inside its quotes; None when the line goes on past three of them (prose)."""
    args: list[Span] = []
    limit = min(len(text), start + _AUTH_LINE)
    at = start
    while at < limit:
        while at < limit and text[at] in " \t,":
            at += 1
        if at >= limit or text[at] in "\r\n])\\":  # the line's end, an argv list's, a repr's \\r\\n
            return args
        if text[at] in "\"'":
            close = text.find(text[at], at + 1, limit)
            if close < 0:
                return None
            args.append((at + 1, close))
            at = close + 1
        else:
            end = at
            while end < limit and text[end] not in _ARG_STOPS and text[end] not in "\"'":
                end += 1
            args.append((at, end))
            at = end
        if len(args) > 3:
            return None
    return args if at >= len(text) else None


def _auth_commands(text: str, spans: list[Span]) -> None:
    """Redis's ``AUTH [user] password`` hides the password; SMTP's ``AUTH PLAIN <b64>`` its response."""
    for match in _matches(_AUTH_COMMAND, text, spans):
        args = _command_args(text, match.end())
        if not args:
            continue
        if text[args[0][0] : args[0][1]].upper() in _SASL_MECHANISMS:
            args = args[1:]  # AUTH LOGIN alone asks; AUTH PLAIN <response> carries the credentials
        elif len(args) > 2:
            continue  # Redis's AUTH takes a password, or a user and a password
        if args and text[args[-1][0] : args[-1][1]] not in ("", MASK):
            spans.append(args[-1])


def _redis_directives(text: str, spans: list[Span]) -> None:
    for match in _matches(_REDIS_DIRECTIVE, text, spans):
        start, end = match.span(1)
        if text[match.start()] == "'" and text[end - 1] == "'":
            end -= 1  # the config error quotes the line: >>> 'requirepass x'
        value = text[start:end].strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        if value and not _not_secret(value):
            start = text.index(value, start)
            spans.append((start, start + len(value)))


_SMTP_LOOKAHEAD = 3
"""After a 334 challenge, the client's answer is looked for on this many next lines (smtplib prints the reply twice)."""


_SERVER_LINES = ("reply:", "<-", "<~", "<**", "s:")


def _smtp_answers(text: str, spans: list[Span]) -> None:
    """The client's line after a 334 challenge: the first line that is not the server's."""
    for match in _matches(_SMTP_CHALLENGE, text, spans):
        line_end = match.end()
        for _ in range(_SMTP_LOOKAHEAD):
            if line_end >= len(text):
                break
            start = line_end + 1
            line_end = text.find("\n", start)
            line_end = len(text) if line_end < 0 else line_end
            line = text[start:line_end]
            if line.lstrip().lower().startswith(_SERVER_LINES):
                continue  # smtplib prints the reply twice
            answer = _SMTP_ANSWER.match(line)
            if answer is not None:
                spans.append((start + answer.start(1), start + answer.end(1)))
            break


MAX_TABLES = 8
"""At most this many tables of one text are read cell by cell (each at most MAX_TABLE_LINES)."""
MAX_TABLE_LINES = 64
MAX_CELLS = 48
"""At most this many cells of a text's tables are redacted as texts of their own (each wrapped cell
joined again costs a pass of every family); past them a table's secret-named columns are still
hidden, and the whole text was redacted anyway."""
MAX_MATCH_LINE = 1 << 20
"""The last column of a table runs to its line's end."""


def _line_at(text: str, start: int) -> tuple[int, int]:
    """The line that starts at ``start``: its start and its end (without ``\r``)."""
    end = text.find("\n", start)
    end = len(text) if end < 0 else end
    return start, end - 1 if end > start and text[end - 1] == "\r" else end


def _secret_column(name: str) -> bool:
    lowered = name.lower()
    return bool(name) and " " not in name and any(w in lowered for w in _KEY_WORDS) and _secret_key(name)


def _table_rows(text: str, start: int, bars: list[int]) -> Iterator[list[Span]]:
    """The rows below a table's rule, each the lines it is wrapped over (a line whose first cell is
    blank continues the row above); the table ends at a line whose bars are not under the rule's
    (the end of the table, or a row redacted already: its cells no longer line up)."""
    row: list[Span] = []
    for _ in range(MAX_TABLE_LINES):
        if start >= len(text):
            break
        line = _line_at(text, start)
        bar = line[0] + bars[0]
        if bar >= line[1] or any(text[line[0] + b] != "|" for b in bars if line[0] + b < line[1]):
            break
        if row and text[line[0] : bar].strip():
            yield row
            row = []
        row.append(line)
        start = line[1] + 1 + (text[line[1] : line[1] + 1] == "\r")
    if row:
        yield row


def _cell_spans(text: str, pieces: list[Span], depth: int, spans: list[Span]) -> None:
    """The secrets of one cell wrapped over ``pieces`` (one slice per line), found in the cell's
    text joined again: with a space where the line was padded (rich wrapped at a space), without
    one where the piece filled its column (a word cut in two)."""
    joined: list[str] = []
    offsets: list[int] = []  # where each joined character is in ``text``
    for start, end in pieces:
        content = text[start:end]
        stripped = content.strip(" ")
        if not stripped:
            continue
        lead = start + len(content) - len(content.lstrip(" "))
        joined.append(stripped)
        offsets.extend(range(lead, lead + len(stripped)))
        if content.endswith(" "):  # padded: the line was broken at a space
            joined.append(" ")
            offsets.append(lead + len(stripped))
    cell = "".join(joined).rstrip(" ")
    if len(cell) < 6:
        return
    for begin, finish in _collect(cell, depth + 1):
        run_start = previous = offsets[begin]
        for index in range(begin + 1, finish):
            if offsets[index] != previous + 1:
                spans.append((run_start, previous + 1))
                run_start = offsets[index]
            previous = offsets[index]
        spans.append((run_start, previous + 1))


def _tables(text: str, depth: int, spans: list[Span]) -> None:
    """A table's cells, each read whole across its wrapped lines: a secret-named column's every
    cell is hidden, the other cells are redacted as texts of their own. The columns are where the
    rule under the header crosses them (``=====+=====``, psql's ``----+----``, ``|---|---|``);
    their names are the header's cells in order (a log prefix may shift the header's line)."""
    cells = MAX_CELLS  # for the whole text
    for count, rule in enumerate(_TABLE_RULE.finditer(text)):
        if count == MAX_TABLES or rule.start() == 0:
            return
        line = _line_at(text, rule.start())
        crossings = "+" if "+" in text[line[0] : line[1]] else "|"
        bars = [i - line[0] for i in range(*line) if text[i] == crossings]
        header = _line_at(text, text.rfind("\n", 0, rule.start() - 1) + 1)
        names = [cell.strip() for cell in text[header[0] : header[1]].split("|")]
        if crossings == "|":  # |---|---|: the cells are between the outer bars
            bars, names = bars[1:-1], names[1:-1]
        if not bars or len(names) != len(bars) + 1:
            continue
        columns = list(zip([0, *(b + 1 for b in bars)], [*bars, MAX_MATCH_LINE], strict=True))
        secret = [_secret_column(name) for name in names]
        for row in _table_rows(text, line[1] + 1 + (text[line[1] : line[1] + 1] == "\r"), bars):
            for (a, b), hidden in zip(columns, secret, strict=True):
                pieces = [(line[0] + a, min(line[0] + b, line[1])) for line in row if line[0] + a < line[1]]
                if hidden:
                    for start, end in pieces:
                        value = text[start:end].strip(" ")
                        if value and not _not_secret(value):
                            lead = start + text[start:end].index(value)
                            spans.append((lead, lead + len(value)))
                elif cells > 0 and len(pieces) > 1:  # wrapped (a one-line cell was redacted with the text)
                    cells -= 1
                    _cell_spans(text, pieces, depth, spans)


def _plain_tables(text: str, spans: list[Span]) -> None:
    """tabulate's plain table: a header of 4+ names apart by 2+ spaces; a secret-named column's
    values are below it, from where its name starts to where the next name starts."""
    for match in _matches(_PLAIN_HEADER, text, spans, limit=MAX_TABLES):
        name_start, name_end = match.span(1)
        header = _line_at(text, text.rfind("\n", 0, name_start) + 1)
        line = text[header[0] : header[1]]
        if line.count("  ") < 4 or len(line.split()) < 4 or not _secret_column(match.group(1)):
            continue
        column = name_start - header[0]
        following = name_end
        while following < header[1] and text[following] in " \t":
            following += 1
        width = following - name_start if following < header[1] else MAX_MATCH_LINE
        start = header[1] + 1
        for _ in range(MAX_TABLE_LINES):
            row = _line_at(text, start)
            if row[0] >= len(text) or not text[row[0] : row[1]].strip():
                break
            cell_start, cell_end = row[0] + column, min(row[0] + column + width, row[1])
            value = text[cell_start:cell_end].strip()
            if value and not value.startswith(MASK) and not _not_secret(value):  # not redacted already
                lead = text.index(value, cell_start)
                spans.append((lead, lead + len(value)))
            start = row[1] + 1 + (text[row[1] : row[1] + 1] == "\r")


def _pydantic_inputs(text: str, spans: list[Span]) -> None:
    for match in _matches(_PYDANTIC_INPUT, text, spans):
        field = match.group(1).rstrip("]").rsplit(".", 1)[-1].rsplit("[", 1)[-1]
        if _secret_column(field):
            start, end = _content(text, *match.span(2))
            if text[end - 1 : end] in ("'", '"') and end - 1 > start:
                end -= 1
            if not _not_secret(text[start:end]):
                spans.append((start, end))


def _quoted_ports(text: str, spans: list[Span]) -> None:
    """A port's or an escape's quoted piece is hidden; a number parse's (Python's ``int()``, Java's
    ``For input string``) only when it holds a URI's ``@``, ``:`` or ``/`` (else it is a value on-call reads)."""
    for match in _matches(_QUOTED_PORT, text, spans):
        start, end = match.span(2) if match.span(2)[0] >= 0 else match.span(3)
        value = text[start:end].lstrip(":")
        generic = match.span(1)[0] >= 0
        if generic and not any(c in value for c in "@:/"):
            continue
        if value and not value.isdigit() and value != MASK:
            spans.append((end - len(value), end))


def _oracle(text: str, spans: list[Span]) -> None:
    for match in _matches(_ORACLE, text, spans):
        user, (start, end) = match.group(1), match.span(2)
        if user.lower() == "tcp" or text[start:end] == MASK:
            continue  # TCP/IP
        if text[start] == '"':
            start, end = start + 1, end - 1
        spans.append((start, end))


def _entropy(data: str) -> float:
    """Shannon entropy in bits per character (detect-secrets' calculate_shannon_entropy)."""
    size = len(data)
    return math.log2(size) - sum(count * math.log2(count) for count in Counter(data).values()) / size


def _readable(token: str) -> bool:
    """A path or identifier made of words (``airflow/providers/standard``, ``ClassifiedRetryPolicy``)."""
    for piece in token.replace("/", " ").replace("_", " ").replace("-", " ").replace("+", " ").split():
        piece = piece.rstrip("0123456789")
        if len(piece) <= 3 or piece.isdigit():
            continue
        if not piece.isalpha():
            return False
        cases = piece.translate(_CASES)  # "ClassifiedRetry" -> "Ullllllllllullll"
        if (cases.count("Ul") + cases.count("lU")) / len(piece) >= 0.3:
            return False
    return True


def _looks_random(token: str) -> bool:
    """The entropy catch-all: detect-secrets' thresholds, with what operators read kept."""
    token = token.rstrip("=")
    if len(token) < 20:
        return False
    if not token.translate(_HEX):
        has_digit = any(c.isdigit() for c in token)
        return (
            len(token) >= 32
            and has_digit
            and not token.isdigit()
            and _entropy(token.lower()) > HEX_ENTROPY_LIMIT
        )
    pieces = token.split("-")
    if [len(p) for p in pieces] == [8, 4, 4, 4, 12] and not "".join(pieces).translate(_HEX):
        return False  # a UUID
    if _aws_resource_id(pieces) or _typed_object_id(token):
        return False
    if token.startswith(_SSH_PUBLIC_KEYS):
        return False  # an SSH public key's blob (known_hosts, BadHostKeyException): public by design
    if _mixed_run(token):
        return True
    if _object_name(token, pieces):
        return False
    if math.log2(len(set(token))) <= BASE64_ENTROPY_LIMIT:
        return False  # the entropy is at most log2 of the characters used: no need to count them
    return _entropy(token) > BASE64_ENTROPY_LIMIT and not _readable(token)


# the base64 of an SSH public key blob's length and type name (ssh-rsa, ssh-ed25519, ssh-dss, ecdsa-...)
_SSH_PUBLIC_KEYS = ("AAAAB3NzaC1", "AAAAC3NzaC1", "AAAAE2VjZHNh")
_AWS_ID_PREFIXES = frozenset({"i", "vol", "snap", "sg", "subnet", "vpc", "ami", "eni", "igw", "nat", "rtb", "acl", "eipalloc", "lt", "tgw", "vpce", "pcx", "db", "cluster"})  # fmt: skip


# the type prefixes of API objects' ids (Stripe's ch_/cus_/pi_/evt_/req_..., and the generic ones):
# an id on-call looks up, not a credential (secret prefixes, sk_live_, whsec_, are vendor shapes)
_OBJECT_ID_PREFIXES = frozenset(
    {"ch", "cus", "pi", "pm", "in", "sub", "evt", "req", "txn", "acct", "prod", "price", "cs", "seti",
     "src", "py", "tr", "po", "re", "ii", "il", "job", "run", "msg", "ord", "usr", "org", "proj", "obj"}
)  # fmt: skip


def _typed_object_id(token: str) -> bool:
    """An API object's id: a type prefix, ``_``, letters and digits (``ch_3PQrStUv...``, ``cus_Nffr...``)."""
    prefix, underscore, rest = token.partition("_")
    return bool(underscore) and prefix in _OBJECT_ID_PREFIXES and rest.isalnum()


def _aws_resource_id(pieces: list[str]) -> bool:
    """An AWS resource's id (``i-0a1b2c3d4e5f67890``, ``vol-...``, ``subnet-...``): a prefix, a dash, hex."""
    return len(pieces) == 2 and pieces[0] in _AWS_ID_PREFIXES and not pieces[1].translate(_HEX)


def _mixed_run(token: str) -> bool:
    """A random key of one case's letters and digits (``ul65c6982k0409bbo38ag7iubzneh4``): 24+
    characters, digits and letters each at least a fifth, switching often (a word, a date or a
    version switches a few times). Its alphabet is too small for the base64 entropy limit."""
    if (
        len(token) < 24
        or not token.isalnum()
        or not token.isascii()
        or not (token.islower() or token.isupper())
    ):
        return False
    digits = sum(c.isdigit() for c in token)
    if not 0.2 <= digits / len(token) <= 0.8:
        return False
    switches = sum(a.isdigit() != b.isdigit() for a, b in zip(token, token[1:], strict=False))
    return switches >= len(token) // 3


_DNS_LABEL = frozenset(string.ascii_lowercase + string.digits + "-")


def _object_name(token: str, pieces: list[str]) -> bool:
    """A Kubernetes object's name (``etl-orders-7f9c8d6b5-x2x9q``: a Deployment's name, its
    ReplicaSet's hash, the Pod's suffix; ``spark-etl-a1b2c3d4e5f6a7b8-exec-12``): lower case,
    letters, digits and dashes, a word among its pieces and no piece longer than a generated
    suffix (16: Spark's application hash). A secret is rarely cut into short lower-case pieces."""
    return (
        len(pieces) >= 3
        and set(token) <= _DNS_LABEL
        and max(map(len, pieces)) <= 16
        and any(len(p) >= 3 and p.isalpha() for p in pieces)
    )


def _random_part(token: str) -> Span:
    """The part of a random run to hide: from its first to its last piece (split at ``/``) that
    is not a word, so ``<token>/sendMessage`` keeps its path."""
    if "/" not in token:
        return 0, len(token)
    first = last = -1
    offset = 0
    for piece in token.split("/"):
        if not _readable(piece):
            first = offset if first < 0 else first
            last = offset + len(piece)
        offset += len(piece) + 1
    return (first, last) if first >= 0 else (0, len(token))


def _random_runs(text: str, lowered: str, spans: list[Span], readable: list[Span]) -> None:
    judged: dict[str, bool] = {}  # a text that repeats a token judges it once
    for count, match in enumerate(_RUN.finditer(text)):
        if count == MAX_RUNS:
            return
        start, end = match.span(1)
        token = text[start:end]
        random = judged.get(token)
        if random is None:
            random = judged[token] = _looks_random(token)
        if random and not _named_hash(
            lowered[max(0, start - 128) : start], hexadecimal=not token.translate(_HEX)
        ):
            first, last = _random_part(token)
            if not any(begin <= start + first < finish for begin, finish in readable):
                spans.append((start + first, start + last))  # not a URL's path beside its query's secret


_SECRET_IN_NAME = ("key", "secret", "token", "pass", "pwd", "credential", "sig", "auth", "hmac")


def _named_hash(before: str, hexadecimal: bool = False) -> bool:
    """Whether the words just before a random run (32 characters) name it as a hash or an id
    (``sha256=``, ``commit``, ``request id:``), unless its own key names a secret
    (``fs.azure.account.key.x.blob.core.windows.net=``: "blob" is a hash word, "key" wins)."""
    # the end of a range (a1b2..c3d4) reads as its start; a hex digest may be named a line above
    window = 80 if before.endswith("..") else len(before) if hexadecimal else 32
    if not any(word in before[-window:] for word in _HASH_WORDS):
        return False
    words = before.rstrip(" \t=:\"'").split()
    key = words[-1] if words else ""
    if len(words) > 1 and words[-2] == "public":
        return True  # "public key: <base64>" is published
    return not any(word in key for word in _SECRET_IN_NAME)


def _percent(text: str, depth: int, spans: list[Span]) -> None:
    """Decode %XX, find the spans in the decoded text, and map them back onto ``text``.

    Each %XX becomes one character (its byte), so a decoded index maps back by counting the
    escapes before it; what is shown is ``text`` with its encoded secret masked, never decoded.
    """
    parts = text.split("%")  # no pattern: a text of escapes would cost a match object per escape
    pieces = [parts[0]]
    decoded_at: list[int] = []  # the decoded index of each escape
    size = len(parts[0])  # of the decoded text so far
    for part in parts[1:]:
        if len(part) >= 2 and part[0] in _HEXDIGITS and part[1] in _HEXDIGITS:
            decoded_at.append(size)
            pieces += (chr(int(part[:2], 16)), part[2:])
            size += len(part) - 1
        else:
            pieces += ("%", part)
            size += len(part) + 1
    if not decoded_at:
        return
    # a form's + is a space (urlencode, as Airflow writes a connection's __extra__: {"k":+"v"}):
    # one character for one, so the indices still map back
    decoded = "".join(pieces).replace("+", " ")
    for start, end in _collect(decoded, depth + 1):
        spans.append((start + 2 * bisect_left(decoded_at, start), end + 2 * bisect_left(decoded_at, end)))


def _collect(text: str, depth: int = 0) -> list[Span]:
    """The spans of every secret in ``text``: each family runs only when its literal is there."""
    spans: list[Span] = []
    readable: list[Span] = []  # where the entropy catch-all hides nothing (a URL's path beside its secret)
    lowered = text.lower()
    gates = _GATES.found(lowered)
    if "PRIVATE KEY" in text or "PuTTY-User-Key" in text:
        _pem(text, spans)
    if "//" in text:
        _uri(text, spans, readable)
    if "/" in text and "?" in text and "=" in text:
        _relative_urls(text, spans, readable)
    if "@" in text and ":" in text:
        _userinfo(text, spans)
    if "hook" in lowered or "chat.googleapis" in lowered or "telegram" in lowered:
        _spans_of(_WEBHOOK, text, spans, groups=2)
    if "cookie" in lowered:
        _cookie(text, spans)
    if "authori" in lowered:
        _authorization(text, spans)
    if "bearer" in lowered or "basic" in lowered or "ntlm" in lowered or "negotiate" in lowered:
        _scheme(text, spans)
    if (  # _KEY_WORDS, spelled out: the hot path of every decision, no call per word
        "pass" in lowered
        or "pw" in lowered
        or "token" in lowered
        or "key" in lowered
        or "secret" in lowered
        or "credential" in lowered
        or "sig" in lowered
        or "auth" in lowered
        or "session" in lowered
        or "cookie" in lowered
        or not gates.isdisjoint(_FOREIGN_WORDS)
    ):
        _key_values(text, spans)
        if not gates.isdisjoint(_FOREIGN_WORDS):
            _modified_keys(text, spans)
        if " " in text or "\t" in text or "," in text:
            _key_space_values(text, spans)
        if "<" in text:
            _xml(text, spans)
        _named(text, spans)
    _argv(text, lowered, spans)  # each row gated on its tools' names and its flag
    if "AUTH" in text:
        _auth_commands(text, spans)
    if "PASS" in text:
        _spans_of(_PASS_COMMAND, text, spans)
    if "LOGIN" in text:
        _imap_logins(text, spans)
    if "identified" in lowered:
        _spans_of(_IDENTIFIED_BY, text, spans, groups=3)
    if "auth-pass" in lowered:
        _spans_of(_SENTINEL_AUTH, text, spans)
    if "auth" in lowered or "credential" in lowered:
        _spans_of(_CREDENTIAL_PAIR, text, spans, groups=2)
    if "securestring" in lowered:
        _spans_of(_SECURE_STRING, text, spans, groups=3)
    # a single character first: a search for one is a memchr, for two or more a slower scan
    if "(" in text and ("('" in text or '("' in text or "($" in text or ", '" in text or ', "' in text):
        _connection_calls(text, spans)
    if "connect" in gates:
        _connection_directives(text, spans)
    if "$" in text:
        _spans_of(_CRYPT_HASH, text, spans)
    if not gates.isdisjoint(_DEVICE_WORDS):
        _device_secrets(text, spans)
    if ("echo" in gates or "printf" in gates) and any(map(lowered.__contains__, _STDIN_SINKS)):
        _piped_secrets(text, lowered, spans)
    if "/u" in gates:
        _spans_of(_WINDOWS_LOGIN, text, spans)
    if "^" in text:
        _spans_of(_CARET_PLAIN, text, spans)
    if "<" in text and "mechanism=" in text:
        _spans_of(_SASL_ELEMENT, text, spans)
    if ("'" in text or '"' in text or "`" in text) and any(map(lowered.__contains__, _SETTING_WORDS)):
        _setting_echoes(text, spans)
    if "$" in text and "$USER" in text:
        _nagios_macros(text, spans)
    if "{" in text and "," in text:
        _erlang_tuples(text, spans)
    if "@" in text and ("redis" in lowered or "valkey" in lowered):
        _spans_of(_REDIS_USERINFO, text, spans)
    if "net use" in lowered or "net user" in lowered:
        _spans_of(_NET_USE, text, spans)
    if "ftp" in lowered and "user" in lowered:
        _spans_of(_FTP_USER, text, spans)
    if "sending" in text:
        _spans_of(_EXPECT_SEND, text, spans)
    if "334" in text:
        _smtp_answers(text, spans)
    if "requirepass" in lowered or "masterauth" in lowered or "masteruser" in lowered:
        _spans_of(_REDIS_CONFIG_REPLY, text, spans)
        _redis_directives(text, spans)
    if "input_value=" in text:
        _pydantic_inputs(text, spans)
    if "|" in text and ("===" in text or "---" in text) and depth < 2:
        _tables(text, depth, spans)
    if "   " in text and "\n" in text:
        _plain_tables(text, spans)
    if "/" in text and any(map(lowered.__contains__, _ORACLE_WORDS)):
        _oracle(text, spans)
    if "port" in lowered or "invalid" in lowered or "input string" in lowered:
        _quoted_ports(text, spans)
    if "connection info string" in text or "unexpected spaces found" in text:
        _spans_of(_LIBPQ, text, spans, groups=2)
    if "%" in text and depth < 3:
        _percent(text, depth, spans)
    if len(text) >= LONG_WORD:  # a word long enough to hold a vendor token, found with a loop (not a
        for word in text.split():  # max(map(len, ...)), which costs more for a few words)
            if len(word) >= LONG_WORD:
                _spans_of(_VENDOR, text, spans)
                spans.extend(vendor.find(text))
                _random_runs(text, lowered, spans, readable)
                break
    return spans


def _masked(text: str, spans: list[Span]) -> tuple[str, int]:
    """``text`` with each span (merged where they overlap or touch) replaced by ``***``, and how
    many ``***`` were put in."""
    if not spans:
        return text, 0
    parts: list[str] = []
    kept = 0
    hidden = 0
    for start, end in sorted(spans):
        if end <= kept:
            continue
        start = max(start, kept)
        if start > kept or not parts:
            parts.append(text[kept:start])
            parts.append(MASK)
            hidden += 1
        kept = end
    parts.append(text[kept:])
    return "".join(parts), hidden


def cut(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, ending in ``…`` when anything was cut.

    The last word of a cut text is dropped whole unless it is longer than half the limit: a text
    of one huge word keeps its start. :func:`redact` cuts only text it has already redacted.
    """
    if len(text) <= limit:
        return text
    head = text[: limit - 1]
    space = max(head.rfind(" "), head.rfind("\n"), head.rfind("\t"))
    if len(head) - space - 1 <= limit // 2:
        head = head[: space + 1]
    return head + ELLIPSIS


@dataclass(frozen=True)
class Redacted:
    """A redacted text and how many values were hidden in it.

    :param text: the text with each secret replaced by ``***`` (cut to the limit, when one was given).
    :param hidden: how many values were hidden (each one ``***``), counted before any cut.
    """

    text: str
    hidden: int


def redaction(text: str, limit: int | None = None) -> Redacted:
    """Redact ``text`` as :func:`redact` does, and say how many values were hidden.

    :param limit: when set, the redacted text is then cut (see :func:`cut`) to at most ``limit``
        characters: cutting comes after redaction, so no prefix of a secret is kept.
    """
    # cut first, then clean: storable() on 10 MB costs far more than on 16 KiB (one for one, so
    # the cut's count stays right); RE2 matches UTF-8: a lone surrogate becomes U+FFFD
    text = storable(bounded(text))
    redacted, hidden = _masked(text, _collect(text))
    return Redacted(redacted if limit is None else cut(redacted, limit), hidden)


def redact(text: str, limit: int | None = None) -> str:
    """Return ``text`` with secrets (passwords, tokens, keys, signatures, cookies) replaced by ``***``.

    A text longer than ``engine.MAX_MATCH_CHARS`` is bounded first (its first and last 8 KiB, with a
    mark saying how much was left out); the bounded text is redacted whole. :func:`redaction` also
    says how many values were hidden.

    :param limit: when set, the redacted text is then cut (see :func:`cut`) to at most ``limit``
        characters: cutting comes after redaction, so no prefix of a secret is kept.
    """
    return redaction(text, limit).text
