"""Command lines, protocol exchanges and parse errors: the (tool, flag) table (``policy/argv.py``),
Windows commands, a secret piped to a command's stdin, a connection's positional arguments,
network devices' configuration lines, Redis, SMTP, FTP, IMAP and SQL's ``IDENTIFIED BY``, Oracle
connect strings, and parsers that quote the piece of a URI they could not read."""

from __future__ import annotations

from airflow_retry_provider.policy import argv
from airflow_retry_provider.policy.engine import Pattern, pattern
from airflow_retry_provider.policy.redactor.judge import (
    _DEVICE_KINDS,
    _NEXT_KEY,
    PROSE_WORDS,
    _bracketed_name,
    _domain_name,
    _error_code,
    _key_before,
    _looks_secret,
    _mixed,
    _not_secret,
    _prose,
    _readable,
    _secret_column,
    _secret_name,
)
from airflow_retry_provider.policy.redactor.spans import (
    MASK,
    Span,
    _content,
    _first_group,
    _matches,
    _quoted_content,
    _spans_of,
)

# Oracle connect strings user/password[@db], on the line of an Oracle tool (or of Db2's CLPPlus, which
# takes SQL*Plus's syntax) or in a JDBC URL
_ORACLE_WORDS = ("sqlplus", "sqlcl", "sqlldr", "expdp", "impdp", "rman", "dgmgrl", "userid", "jdbc:oracle", "sql> conn", "clpplus")  # fmt: skip


# the same words as whole words: a tool's name inside another word is not that tool ("rman" in
# "Permanent error", "Performance"), or any a/b path on the line (queue_sender.go, otlphttp/x) reads
# as user/password
_ORACLE_WORD = pattern(
    r"(?i:\b(?:sqlplus|sqlcl|sqlldr|expdp|impdp|rman|dgmgrl|userid|jdbc:oracle|sql> conn|clpplus)\b)"
)


# an easy-connect string whatever the tool: user/password@[//]host:port/service (any client that takes
# Oracle's or Db2's: python-oracledb's connect("u/p@h:1521/s"), OCILIB's "u/p@//h:1521/s", CLPPlus)
_EASY_CONNECT = pattern(
    r"(?:^|[\s'\"=,\[(:])[A-Za-z_][\w$#.]*/([^\s/@'\";,]+)@(?://)?[A-Za-z0-9][\w.-]*:[0-9]{1,5}/[A-Za-z_]"
)


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


# an encrypted database's key given in SQL (SQLCipher, SQLite's SEE, wxSQLite3): PRAGMA key = 'x',
# PRAGMA rekey, PRAGMA hexkey = "x'...'", ATTACH DATABASE 'f.db' AS enc KEY 'x'
_SQL_KEY = pattern(
    r"(?i:\bpragma[ \t]+(?:\w+\.)?(?:hex)?(?:re)?key[ \t]*=[ \t]*|\battach[ \t]+(?:database[ \t]+)?\S+[ \t]+as[ \t]+\S+[ \t]+key[ \t]+)"
    r"(?:\\*\"(?:x')?([^\"'\r\n\\]*)|\\*'([^'\r\n\\]*)|([^\s;'\"]+))"
)


# line protocols whose client sends the password as a command: FTP and POP3's PASS (curl -v's
# "> PASS x"), IMAP's "<tag> LOGIN <user> <password>" (imaplib's debug "> b'ABCD1 LOGIN u p'");
# behind any transcript's mark of what the client sent: arrows (">", ">>>" of z/OS FTP and
# Net::FTP's "Net::FTP=GLOB(0x..)>>>", "--->" of BSD ftp -d, "==>"), a prompt ("ftp>"), "C:",
# ftplib's "*cmd*", FileZilla's "Command:"
_PASS_COMMAND = pattern(
    r"(?m)^[ \t]*(?:[^\s>]{0,40}[-=]*>{1,3}|C:|\*cmd\*|Command:)?[ \t]*'?PASS[ \t]+([^\r\n']+)"
)


_IMAP_LOGIN = pattern(
    r"(?:^|[\s'>])([A-Za-z0-9]{1,10}) LOGIN[ \t]+(?:\\?\"[^\"\r\n]*\\?\"|\S+)[ \t]+(?:\\?\"([^\"\r\n\\]*)|([^\s']+))"
)


# SteamCMD's +login <user> <password> [<Steam Guard code>], one of its command line's + commands
# (anonymous logs in with no password: the next word is another + command)
_PLUS_LOGIN = pattern(r"(?:^|[\s'\"])\+login[ \t]+[^\s+'\"]+[ \t]+([^\s+'\"]+)")


# a key's id and its secret as a command's -k and -s (Lacework's configure, Webhook Relay's login -k <key>
# -s <secret>): the secret after -s
_KEY_SECRET_FLAGS = pattern(r"(?:^|[\s'\"])-k[ \t]+[^\s'\"-][^\s'\"]*[ \t]+-s[ \t]+([^\s'\"-][^\s'\"]*)")


# a key store's password as a short flag on the line that names the store: the k(ey), t(rust) or s(tore)
# it opens, then p (NiFi Toolkit's cli.sh -ks x.p12 -ksp X -kp X -ts t.jks -tsp X); the store's file on the
# line says what the p stands for (not a classpath's -cp)
_STORE_PASSWORD_FLAG = pattern(r"(?:^|[\s'\"])-{1,2}[KkTtSs]{1,3}[Pp][ \t]+([^\s'\"-][^\s'\"]*)")


_STORE_FILES = (".jks", ".p12", ".pfx", ".keystore", ".truststore", ".bcfks")


def _store_passwords(text: str, spans: list[Span]) -> None:
    for match in _matches(_STORE_PASSWORD_FLAG, text, spans):
        line_start = text.rfind("\n", 0, match.start()) + 1
        line_end = text.find("\n", match.end())
        line = text[line_start : len(text) if line_end < 0 else line_end].lower()
        if any(extension in line for extension in _STORE_FILES) and _looks_secret(match.group(1)):
            spans.append(match.span(1))


# a setting named by one flag and given its value by the next: iscsiadm's --op=update -n
# node.session.auth.password -v x, AWS SSM's put-parameter --name /etl/db/password --value x, Azure Key
# Vault's secret set --name pg-password --value x; the value is a secret when the name names one
_NAMED_SETTING = pattern(
    r"(?:^|[\s'\"])(?:-n|--name|-k|--key|--param|--parameter|--setting|--option)(?:=|[ \t]+)['\"]?([^\s'\"]{1,128})['\"]?"
    r"(?:[ \t]+--?[A-Za-z][\w-]{0,30}(?:(?:=|[ \t]+)[^\s'\"-][^\s'\"]{0,128})?){0,3}"  # --type SecureString between
    r"[ \t]+(?:-v|--value)(?:=|[ \t]+)(\"[^\"\r\n]*\"|'[^'\r\n]*'|[^\s'\"]+)"
)


def _named_settings(text: str, spans: list[Span]) -> None:
    for match in _matches(_NAMED_SETTING, text, spans):
        # the setting's last name: node.session.auth.password, /etl/db/password
        name = match.group(1).replace("/", ".").rsplit(".", 1)[-1]
        value = _quoted_content(text, *match.span(2))
        if _secret_name(name) and not _not_secret(text[value[0] : value[1]]):
            spans.append(value)


# a Windows account and its secret as a pentest or SMB tool reports what it tried: DOMAIN\user:password or
# DOMAIN\user:<NT hash> (NetExec's and impacket's "[-] corp.acme.io\svc_backup:x STATUS_LOGON_FAILURE")
_DOMAIN_LOGIN = pattern(r"(?:^|[\s\[(])[A-Za-z0-9][\w.-]*\\[\w.$-]+:([^\s:'\"]+)(?:[\s'\"]|$)")


def _token_lines(text: str, spans: list[Span]) -> None:
    for match in _matches(_LTOKEN_LINE, text, spans):
        if _looks_secret(match.group(1)):  # not a CSV row's last field (h;443;GET;/api/v1)
            spans.append(match.span(1))


def _domain_logins(text: str, spans: list[Span]) -> None:
    for match in _matches(_DOMAIN_LOGIN, text, spans):
        if _looks_secret(match.group(1)) and not match.group(1).isdigit():
            spans.append(match.span(1))


# a JDBC URL then the driver's arguments as a list, [user, password] (JayDeBeApi's connect(class, url,
# ['Master', 'x'], jars)): the list's second string
_JDBC_ARGUMENTS = pattern(
    r"[\"']jdbc:[^\s\"']+[\"'][ \t]*,[ \t]*\[[ \t]*[\"'][^\"'\r\n]{1,64}[\"'][ \t]*,[ \t]*[\"']([^\"'\r\n]{1,256})[\"']"
)


# the plaintext ansible-vault encrypt_string encrypts: its quoted argument that is no flag's value
_ENCRYPT_STRING = pattern(r"\bencrypt_string\b([^\r\n]{0,512})")
_QUOTED_ARGUMENT = pattern(r"(?:^|[ \t])([^\s'\"]*)[ \t]+(?:'([^'\r\n]+)'|\"([^\"\r\n]+)\")")
_VAULT_VALUE_FLAGS = frozenset({"--vault-id", "--vault-password-file", "--vault-pass-file", "--name", "-n", "--output", "--encrypt-vault-id", "--stdin-name"})  # fmt: skip


def _encrypted_strings(text: str, spans: list[Span]) -> None:
    for match in _matches(_ENCRYPT_STRING, text, spans):
        offset = match.start(1)
        for argument in _matches(_QUOTED_ARGUMENT, match.group(1), []):
            if argument.group(1) in _VAULT_VALUE_FLAGS:
                continue  # a flag's value (--name 'db_password')
            group = 2 if argument.group(2) is not None else 3
            spans.append((offset + argument.start(group), offset + argument.end(group)))
            break


# a connection's positional arguments: a location, then the user, then the password, in a call
# (PHP's trace of PDO->__construct('mysql:host=...', 'forge', 'x'), Perl's DBI->connect, JDBC's
# getConnection, RouterOS's Client->__construct('10.0.0.1', 'api', 'x'), napalm's
# driver("10.0.0.3", "netops", "x", ...), pymqi.connect('QM1', 'CH', 'mq01.x.y(1414)', 'app', 'x'),
# MySQLdb.connect('db.x.y', 'etl', 'x', 'orders'), new PDO($dsn, 'u', 'x')); the arguments are
# judged in Python (_connection_arguments)
_CALL_ARG = r"(?:'(?:[^'\\\r\n]|\\.)*'|\"(?:[^\"\\\r\n]|\\.)*\"|\$?[A-Za-z_][\w.$>-]*|[0-9]+)"


_CONNECT_CALL = pattern(rf"\([ \t]*((?:{_CALL_ARG}[ \t]*,[ \t]*){{2,8}}{_CALL_ARG})")


_CALL_ARGUMENT = pattern(_CALL_ARG)


# unixODBC's isql and iusql: a data source, a user and a password as the command's words, flags
# anywhere before them (isql -v -b WH_PROD etl_loader x < merge.sql); Firebird's isql names its
# password by a flag (-password x), which the key family hides
_ODBC_WORD = r"[^\s'\"<>|;&-][^\s'\"<>|;&]*"  # a word of the command: no flag, redirection or pipe
_ODBC_LOGIN = pattern(
    rf"(?:^|[\s'\"(/])i(?:u)?sql(?:[ \t]+-[^\s'\"]+)*[ \t]+{_ODBC_WORD}[ \t]+{_ODBC_WORD}[ \t]+({_ODBC_WORD})"
)


# a case class's repr: its name, then fields written bare and joined by commas, to the first
# parenthesis (Scala's DbConfig(jdbc:postgresql://h:5432/db,ingest,<password>,16))
_BARE_FIELDS = pattern(r"(?:^|[^\w.])[A-Z]\w{0,40}\(([^\s()'\"]{1,512})")


# a registry value named as a secret, and its data (reg add ... /v DefaultPassword /t REG_SZ /d x)
_REGISTRY_VALUE = pattern(
    r"(?i:/v[ \t]+\"?[\w .-]*(?:password|passwd|pwd|secret|token|key)[\w .-]*\"?[^\r\n]*?[ \t]/d[ \t]+)"
    r"(?:\"([^\"\r\n]*)\"|([^\s\"]+))"
)
# a PostgreSQL password file's line (.pgpass: host:port:database:user:password; * for any), a
# diff's added line too (+host:5432:db:user:x, as chezmoi and git show a new .pgpass)
_PGPASS_LINE = pattern(
    r"(?:^|[\s'\"+])(?:[A-Za-z*][\w.-]*|[0-9]{1,3}(?:\.[0-9]{1,3}){3}):(?:[0-9]{1,5}|\*):[^:\s'\"]+:[^:\s'\"]+:([^\s'\"]+)"
)
# Pgpool-II's PCP password file's line (.pcppass: host:port:user:password), its host a domain name, an
# address, localhost or *: the password when it looks like one (a compiler's file.c:12:5:error has a space)
_PCPPASS_LINE = pattern(
    r"(?:^|[\s'\"+])(?:[A-Za-z][\w-]*(?:\.[\w-]+)+|localhost|\*|[0-9]{1,3}(?:\.[0-9]{1,3}){3})"
    r":(?:[0-9]{1,5}|\*):[^:\s'\"]+:([^:\s'\"]+)(?:[\s'\"]|$)"
)
# CVS's ~/.cvspass line: /1, the CVSROOT, then the password scrambled (an A, then the scrambled characters:
# a trivial cipher, the password itself)
_CVSPASS_LINE = pattern(r"(?:^|[ \t])/1[ \t]+:[a-z]+:[^\s]+[ \t]+(A[^\s]{1,256})[ \t]*(?:\r?\n|$)")
# chrony's key file's line (chrony.keys): the key's number, its type, then the key, in hex after HEX: or
# as text after ASCII: (1 SHA256 HEX:<64 hex>, 2 MD5 ASCII:x): the type names the key's hash, not a digest
_NTP_KEY_LINE = pattern(
    r"(?:^|[ \t])[0-9]{1,5}[ \t]+(?:MD5|SHA1|SHA256|SHA384|SHA512|SHA3-[0-9]{3}|AES128CMAC|AES256CMAC)"
    r"[ \t]+(?:HEX|ASCII):([^\s]{1,256})[ \t]*(?:\r?\n|$)"
)
# a FIX message's password fields (Password(554), NewPassword(925), EncryptedPassword(1402),
# EncryptedNewPassword(1404)), between its fields' separators (|, ^A or SOH) as an engine logs a Logon
_FIX_PASSWORD = pattern(r"(?:^|[|\x01\s(;]|\^A)(?:554|925|1402|1404)=([^|\x01^\s);]{1,256})")
# a hardware token's PIN in a signing key's container name, as SafeNet's CSP reads it (signtool's
# /k "[{{<PIN>}}]=<container>", jsign's and osslsigncode's alike)
_TOKEN_PIN = pattern(r"\[\{\{([^{}\s]{1,128})\}\}\]=")
# a token file's line, host;port;user;token (Klocwork's ~/.klocwork/ltoken, as kwauth writes it)
_LTOKEN_LINE = pattern(
    r"(?:^|[\s'\"+])(?:[A-Za-z][\w.-]*|[0-9]{1,3}(?:\.[0-9]{1,3}){3});[0-9]{1,5};[^;\s'\"]+;([^;\s'\"]+)(?:[\s'\"]|$)"
)
# a call named for logging in, given a user and a password (smtplib's server.login('u', 'x'),
# imaplib's and ftplib's login, python-ldap's simple_bind_s('cn=admin,...', 'x')), or a mail client
# built with them (yagmail.SMTP('u', 'x'); smtplib's SMTP takes a host and a number)
_QUOTED_ARG = r"'(?:[^'\\\r\n]|\\.)*'|\"(?:[^\"\\\r\n]|\\.)*\""
_LOGIN_CALL = pattern(
    r"(?i:\b(?:login|log_in|logon|signin|sign_in|authenticate|auth|bind|bind_s|simple_bind|simple_bind_s|smtp|smtp_ssl))"
    rf"[ \t]*\([ \t]*(?:{_QUOTED_ARG})[ \t]*,[ \t]*"
    r"(?:'((?:[^'\\\r\n]|\\.)*)'|\"((?:[^\"\\\r\n]|\\.)*)\")[ \t]*[,)]"
)
# the same call as a Lisp backtrace's frame prints it, its arguments apart by spaces and objects
# (Postmodern's (CL-POSTGRES::AUTHENTICATE #<SB-SYS:FD-STREAM ...> "user" "x" "db" NIL)): a user's
# string, then the password's
_LISP_LOGIN = pattern(
    r"\((?:[\w.-]+::?)?[\w-]*(?i:authenticate|login|log-in|sign-in)[\w-]*[ \t][^\r\n]{0,200}?"
    r"\"[\w.@-]{1,64}\"[ \t]+\"([^\"\\\r\n]{1,256})\""
)
_LOGIN_WORDS = ("log", "auth", "bind", "sign", "smtp")
# and in a directive or command named for a connection, apart by spaces (ProFTPD's
# SQLConnectInfo db@host:3306 user x)
_CONNECT_DIRECTIVE = pattern(r"(?i:\b\w*connect\w*)[ \t]+([^\s'\"]+)[ \t]+([^\s'\"]+)[ \t]+([^\s'\"]+)")
# and as positional words of a config line, whatever its directive: a host, its port, a user, then the
# password (3proxy's "parent 1000 http 10.40.3.17 3128 <user> <password>")
_HOST_PORT_LOGIN = pattern(
    r"(?:^|[ \t])(?:\d{1,3}(?:\.\d{1,3}){3}|[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+)[ \t]+\d{2,5}[ \t]+"
    r"[A-Za-z][\w.@-]{0,63}[ \t]+([^\s'\"/:.]{6,128})(?:[ \t\r\n]|$)"  # no path, time or file name
)
# and on a server's line with no user, last on it (ZNC's "Server = irc.oftc.net +6697 <password>", + for TLS)
_SERVER_PASSWORD = pattern(
    r"(?im)(?:^|[ \t])server[ \t]*(?:=[ \t]*|[ \t]+)(?:\d{1,3}(?:\.\d{1,3}){3}|[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+)"
    r"[ \t]+\+?\d{2,5}[ \t]+([^\s'\"]{1,128})[ \t]*\r?$"
)


# a key an HMAC is computed with, as source code in a traceback or a debug line shows it: Python's
# hmac.new(b"<key>", msg, sha256), Node's crypto.createHmac("sha256", "<key>")
_HMAC_KEY = pattern(
    r"\bhmac\.new\([ \t]*[bB]?[\"']([^\"'\\\r\n]{8,256})[\"']"
    r"|createHmac\([ \t]*[\"'][\w-]{2,16}[\"'][ \t]*,[ \t]*[\"']([^\"'\\\r\n]{8,256})[\"']"
)


# a digest's call and its argument's text, and a literal joined into it by +: a salt or a merchant's key
# hashed with the message (Xsolla's sha1(body + '<key>'), KG Inicis' sha512(("<key>" + mid + ...)))
_DIGEST_CALL = pattern(r"\b(?:md5|sha1|sha224|sha256|sha384|sha512|sha3_\d{3})\(([^\r\n]{1,256})")
_JOINED_LITERAL = pattern(
    r"[\"']([^\"'\\\r\n]{8,128})[\"'][ \t]*\+|\+[ \t]*[bB]?[\"']([^\"'\\\r\n]{8,128})[\"']"
)


# SASL PLAIN's caret form in a mail server's config (Exim's client_send = ^user^password)
_CARET_PLAIN = pattern(r"(?:=|:)[ \t]*\^[^\s^]*\^([^\s^'\"]+)")


# a header given to a flag as two arguments, its name then its value (wkhtmltopdf's --custom-header
# X-Report-Key <key>, --custom-header-propagation's kin): the value when the name names a secret
_HEADER_ARGUMENTS = pattern(
    r"(?i:--?[\w-]*header)[ \t]+['\"]?([A-Za-z][\w-]{0,63})['\"]?[ \t]+(?:'([^'\r\n]+)'|\"([^\"\r\n]+)\"|([^\s'\"-][^\s'\"]*))"
)
# a block config's Auth directive and its quoted password (Predixy's Authority { Auth "<x>" { Mode write } })
_AUTH_DIRECTIVE = pattern(r"(?:^|[{};])[ \t]*[Aa]uth[ \t]+\"([^\"\s]{1,256})\"[ \t]*[{;]")


# a SASL exchange's initial response in an XML stream (XMPP's <auth mechanism="PLAIN">base64</auth>)
_SASL_ELEMENT = pattern(r"mechanism=[\"'][A-Z0-9-]+[\"'][^>\r\n]*>([^<\s]+)<")
# and as an Erlang or Elixir tuple of the mechanism, the user and the password (brod's and
# kafka_protocol's {sasl, {scram_sha_512, "user", "x"}}, Elixir's sasl: {:plain, "user", "x"})
_SASL_TUPLE = pattern(
    r"\{[ \t]*:?(?:plain|scram_sha_256|scram_sha_512)[ \t]*,[ \t]*(?:<<)?\"[^\"\r\n]*\"(?:>>)?[ \t]*,"
    r"[ \t]*(?:<<)?\"([^\"\r\n]*)\""
)


# a JSON-RPC call named for a passphrase, its first parameter (bitcoind's walletpassphrase ["x", 60],
# as python-bitcoinrpc logs it, or in the request's body: "method": "walletpassphrase", "params": ["x"]);
# encryptwallet sets the passphrase it is given
_PASSPHRASE_CALL = pattern(
    r"(?i:\w*passphrase\w*|encryptwallet)\"?[ \t]*(?:,[ \t]*\"params\"[ \t]*:[ \t]*)?\[[ \t]*\"([^\"\\\r\n]*)\""
)


# Nagios's resource.cfg macros ($USER1$=...), the store its documentation gives for passwords
_NAGIOS_MACRO = pattern(r"\$USER[0-9]{1,3}\$[ \t]*=[ \t]*([^\s'\"]+)")


# PowerShell's ConvertTo-SecureString "<password>" -AsPlainText, and Windows' net use <share> <password>
_SECURE_STRING = pattern(
    r"(?i:convertto-securestring)[ \t]+(?i:-(?:string|asplaintext|force)[ \t]+)*(?:\"([^\"\r\n]*)\"|'([^'\r\n]*)'|([^\s'\"-]\S*))"
)


# and net user <name> <password> (/add, /domain after it: a flag, no password; * prompts for one)
_NET_USE = pattern(
    r"(?i:\bnet[ \t]+(?:use[ \t]+(?:[A-Za-z*]:[ \t]+)?\\\\\S+(?:[ \t]+/user:\S+)?|user[ \t]+(?:\"[^\"\r\n]*\"|[^\s/'\"]+)))"
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


# printf writing a template whose format names each argument by its key (copr-cli's config:
# printf '[copr-cli]\nlogin = %s\ntoken = %s\n' <login> <token>): each argument is judged by the key
# its conversion stands after, as the file printf writes would be
_PRINTF_TEMPLATE = pattern(
    r"(?:^|[\s'\"(;|&+])printf[ \t]+('[^'\r\n]*%[^'\r\n]*'|\"[^\"\r\n]*%[^\"\r\n]*\")"
    r"((?:[ \t]+(?:'[^'\r\n]*'|\"[^\"\r\n]*\"|[^\s'\"|;&<>]+)){1,16})"
)
_PRINTF_ARGUMENT = pattern(r"'[^'\r\n]*'|\"[^\"\r\n]*\"|[^\s'\"|;&<>]+")
_CONVERSION = pattern(r"%[-+ 0#]*[0-9]*(?:\.[0-9]+)?[sdbqiuxXfgeEc%]")


_STDIN_SINKS = ("-stdin", "/dev/stdin", "secret create", "secret set", "chpasswd", "--password -", "with-token", "=-")  # fmt: skip


# a command whose first argument logs in or unlocks (lpass login, op signin, bw unlock): piped
# into, it reads the password from standard input; after the pipe or at a bash -x trace line's start
_LOGIN_SINK = pattern(
    r"(?:\||(?:^|\s)\+)[ \t]*(?:[A-Z][A-Z0-9_]*=\S*[ \t]+)*[\w./-]+[ \t]+(?:login|signin|unlock)(?:[ \t]|$)",
    ignore_case=True,
)


# a tool's prompt for a secret, which an echo piped into it answers (mkstore's "Enter wallet
# password:", keytool's "Enter keystore password:", ssh-keygen's "Enter passphrase:")
_PROMPT = pattern(r"(?im)^[^\r\n]{0,60}(?:password|passphrase)[^\r\n:]{0,20}:[ \t]*$")


# the secret's word: password, secret, key, psk, community, with a prefix (authentication-key,
# pre-shared-key, psksecret, passwd); then, on some devices, words and an explicit kind (Aruba's
# "password manager user-name admin plaintext X", FortiOS's "set psksecret ENC X")
_DEVICE_KEYWORD = r"(?:[a-z][a-z0-9]*-){0,3}[a-z0-9]*(?:password|passwd|secret|key|psk|key-string|community)"
_DEVICE_KIND_LATER = pattern(
    rf"(?m)^[ \t]*(?:[\w.:-]+[ \t]+){{0,6}}?{_DEVICE_KEYWORD}(?:[ \t]+[a-z][\w.:-]*){{0,4}}?"
    r"[ \t]+(?:plaintext|cleartext|ENC|encrypted|sha512|sha256)[ \t]+(\"[^\"\r\n]*\"|[^\s\"]+)"
)
_DEVICE_SECRET = pattern(
    rf"(?m)^[ \t]*(?:[\w.:-]+[ \t]+){{0,6}}?{_DEVICE_KEYWORD}"
    r"[ \t]+(?:([0-9]{1,2}|" + "|".join(_DEVICE_KINDS) + r")[ \t]+){0,2}"
    r"(\"[^\"\r\n]*\"|[^\s\"]+)"
)


_DEVICE_WORDS = ("password ", "passwd ", "secret ", "key ", "key-string", "community ", "authentication-key", "pre-shared-key", "encrypted-password", "psk ")  # fmt: skip


# a logon command's "[host/]user,password[,account]" (Teradata's BTEQ, FastLoad, MultiLoad, TPump
# scripts: .LOGON tdpid/user,password): the word after the first comma is the password
_LOGON_STRING = pattern(r"(?mi)^[ \t]*\.?logon[ \t]+(?:[^\s,/;]+/)?[^\s,/;]+,([^\s,;]+)")


# a configuration block named by an SNMP community: the block's name is the community string, the
# secret (Junos' "[edit snmp community]" then "+   <name> {", or "community <name> {" in one line)
_COMMUNITY_BLOCK = pattern(
    r"(?m)(?:\[edit[^\]\r\n]*[ \t]community\][ \t]*\r?\n[+\- \t]*|^[+\- \t]*community[ \t]+)"
    r"(?:\"([^\"\r\n]+)\"|([^\s{;\"]+))[ \t]*\{"
)


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


def _libpq_words(text: str, spans: list[Span]) -> None:
    """The word libpq quotes back, unless it is a URI given where a DSN was expected (adbc's ``missing "="
    after "postgresql+psycopg2://user:***@host/db"``): the URL family hides its password, keeps its host."""
    for match in _matches(_LIBPQ, text, spans):
        if "://" not in (match.group(1) or match.group(2) or ""):
            _first_group(text, match, (1, 2), spans)


def _imap_logins(text: str, spans: list[Span]) -> None:
    """IMAP's ``tag LOGIN user password``; ``SASL LOGIN authentication failed`` names a mechanism."""
    for match in _matches(_IMAP_LOGIN, text, spans):
        if match.group(1).upper() in ("SASL", "AUTH", "MECHANISM"):
            continue
        _first_group(text, match, (2, 3), spans)


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


_HOST_NAMES = ("host", "dsn", "url", "uri", "addr", "server", "endpoint")


PHP_ARGUMENT_CHARS = 15
"""PHP's stack trace cuts a string argument to this many characters and ``...``
(``zend.exception_string_param_max_len``'s default): ``__construct('rmq-shop.intern...', 5672, ...)``."""


def _location(arg: str) -> bool:
    """Whether a call's or a directive's argument names where to connect: a URL, a DSN
    (``mysql:host=db;dbname=x``, ``jdbc:h2:mem:x``, ``dbi:Pg:dbname=x``), an IP address or a host name with its domain (a port after
    ``:`` or in parentheses, a user before ``@``), ``localhost``, or a variable named for one (``$dsn``)."""
    if arg[:1] not in "'\"":
        name = arg.lstrip("$").lower()
        return any(word in name for word in _HOST_NAMES)
    value = arg[1:-1]
    head, colon, rest = value.partition(":")
    cut = value.endswith("...") and len(value) == PHP_ARGUMENT_CHARS + 3
    if "://" in value or (
        head.replace("+", "").isalnum()
        and head[:1].isalpha()
        and colon
        and ("=" in rest or ":" in rest or cut)  # a DSN PHP's trace cut before its "=" ('firebird:dbname...')
    ):
        return True
    if any(c in value for c in " \t/\\") or not value:
        return False
    host = value.rsplit("@", 1)[-1].split("(", 1)[0].removesuffix("..." if cut else "")
    host = host.rsplit(":", 1)[0] if host.count(":") == 1 else host
    labels = host.split(".")
    if len(labels) == 4 and all(label.isdigit() for label in labels):
        return True
    return (
        host == "localhost"
        or _domain_name(host)
        # a cut host's domain may be gone: 'rmq-shop.intern...'
        or (cut and len(labels) >= 2 and all(label.replace("-", "").isalnum() for label in labels))
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


_FORMAT_MARKS = ("%s", "%r", "%d", "{}", "{0}")


def _connection_arguments(args: list[tuple[int, int, str]], spans: list[Span]) -> None:
    """Of a connection's arguments, the quoted one after a location (and its port, as numbers:
    ``connect('h.x.y', 22, 'u', 'x')``) and a user's name: the password."""
    for index in range(len(args) - 2):
        if any(mark in args[index][2] for mark in _FORMAT_MARKS):
            return  # a log call's format string: the arguments after it are the message's values
        if not _location(args[index][2]):
            continue
        user = index + 1
        while user < len(args) and args[user][2].isdigit():
            user += 1
        if user + 1 < len(args) and _user_name(args[user][2]):
            start, end, password = args[user + 1]
            if password[:1] in "'\"" and end - start > 2 and not _not_secret(password[1:-1]):
                spans.append((start + 1, end - 1))
            return
    _password_before_url(args, spans)


def _bare_logins(text: str, spans: list[Span]) -> None:
    """Of a case class's bare fields, the one after a URL and a user's name: the password, when shaped
    as a secret (doobie's and ScalikeJDBC's ``DbSettings(<name>,<jdbc url>,<user>,<password>,...)``)."""
    for match in _matches(_BARE_FIELDS, text, spans):
        fields = match.group(1).split(",")
        start = match.start(1)
        for index, field in enumerate(fields[:-2]):
            if "://" in field:
                user, password = fields[index + 1], fields[index + 2]
                if _user_name(f"'{user}'") and _looks_secret(password) and not _not_secret(password):
                    start += sum(len(f) + 1 for f in fields[: index + 2])
                    spans.append((start, start + len(password)))
                break


def _password_before_url(args: list[tuple[int, int, str]], spans: list[Span]) -> None:
    """A user, then a secret-shaped value, then the URL to connect to (a banking client's
    ``FinTS3PinTanClient('<bank code>', '<user>', '<pin>', 'https://...')``): the value is the password."""
    for index in range(1, len(args) - 1):
        start, end, password = args[index]
        if (
            password[:1] in "'\""
            and "://" in args[index + 1][2]
            and _user_name(args[index - 1][2])
            and _looks_secret(password[1:-1])
            and not _not_secret(password[1:-1])
        ):
            spans.append((start + 1, end - 1))
            return


def _connection_calls(text: str, spans: list[Span]) -> None:
    for match in _matches(_CONNECT_CALL, text, spans):
        offset = match.start(1)
        args = [
            (offset + a.start(), offset + a.end(), a.group()) for a in _CALL_ARGUMENT.finditer(match.group(1))
        ]
        _connection_arguments(args, spans)


# a digest shown beside what it was computed over: "sha256(<input>) = <hex>"; the digest of a key is a
# proof of it (Payhip's webhook signature is sha256 of the API key: computed sha256(PAYHIP_API_KEY=x) = <hex>)
_DIGEST_RESULT = pattern(
    r"\b(?:md5|sha1|sha224|sha256|sha384|sha512)\(([^()\r\n]{1,256})\)[ \t]*(?:==?|->|:)[ \t]*([0-9a-fA-F]{32,128})\b"
)
_KEYED_INPUTS = ("key", "secret", "token", "pass", "salt")
"""Words that make a digest's input a secret's: its digest is then a proof of the secret."""


def _hashed_keys(text: str, spans: list[Span]) -> None:
    """An HMAC's key literal, and a literal joined by ``+`` into a digest's argument, when shaped as a
    secret (not a word of the message: ``"Refund"``, ``"|"``); the digest of an input that holds a secret."""
    for match in _matches(_DIGEST_RESULT, text, spans):
        if any(word in match.group(1).lower() for word in _KEYED_INPUTS):
            spans.append(match.span(2))
    for match in _matches(_HMAC_KEY, text, spans):
        start, end = match.span(1) if match.start(1) >= 0 else match.span(2)
        if _looks_secret(text[start:end]) and not _not_secret(text[start:end]):
            spans.append((start, end))
    for call in _matches(_DIGEST_CALL, text, spans):
        argument, offset = call.group(1), call.start(1)
        literal = argument.partition(")")[0]
        if _bare_literal(literal):  # sha1(Kt.Api!2025_prod): a digest's input, written out
            spans.append((offset, offset + len(literal)))
        for joined in _JOINED_LITERAL.finditer(argument):
            index = 1 if joined.start(1) >= 0 else 2
            literal = joined.group(index)
            if _looks_secret(literal) and not _readable(literal):
                spans.append((offset + joined.start(index), offset + joined.end(index)))


def _pcppass_lines(text: str, spans: list[Span]) -> None:
    for match in _matches(_PCPPASS_LINE, text, spans):
        if _looks_secret(match.group(1)):
            spans.append(match.span(1))


def _header_arguments(text: str, spans: list[Span]) -> None:
    for match in _matches(_HEADER_ARGUMENTS, text, spans):
        if _secret_column(match.group(1)):
            _first_group(text, match, (2, 3, 4), spans)


def _bare_literal(argument: str) -> bool:
    """Whether a digest call's whole argument is one unquoted literal shaped as a secret, not a name
    (``sha1(Kt.Api!2025_prod)``, where ``sha1(password)`` and ``md5(self.secret)`` name a variable)."""
    return (
        _looks_secret(argument)
        and not _readable(argument)
        and not any(mark in argument for mark in " \t'\",+(=*")  # words, a call, an assignment, a mask
        and not argument.replace(".", "_").isidentifier()
    )


def _lisp_logins(text: str, spans: list[Span]) -> None:
    for match in _matches(_LISP_LOGIN, text, spans):
        if _looks_secret(match.group(1)):
            spans.append(match.span(1))


def _connection_directives(text: str, spans: list[Span]) -> None:
    """``SQLConnectInfo db@host:3306 user x``: the location is bare, quoted here to be judged the same way;
    a word that ends in a colon is a sentence's, no user (``Connection amqps://h:5671 closed: amqp:...``)."""
    for match in _matches(_CONNECT_DIRECTIVE, text, spans):
        location, user, password = match.group(1), match.group(2), match.group(3)
        if user.endswith(":"):
            continue
        if _location(f"'{location}'") and _user_name(f"'{user}'") and not _prose(password):
            if not _not_secret(password):
                start, end = match.span(3)
                spans.append((start, end - 1 if password.endswith(";") else end))  # the command's ; stays


def _host_port_logins(text: str, spans: list[Span]) -> None:
    """``<host> <port> <user> <password>`` on a config line, ``server <host> <port> <password>``: the password, when shaped as a secret
    (a digit, a symbol or an inner capital, not a word: a log's ``10.0.0.5 8080 GET index`` has none)."""
    for pattern_ in (_HOST_PORT_LOGIN, _SERVER_PASSWORD) if "erver" in text else (_HOST_PORT_LOGIN,):
        for match in _matches(pattern_, text, spans):
            password = match.group(1)
            if _looks_secret(password) and not _not_secret(password):
                spans.append(match.span(1))


def _device_secrets(text: str, spans: list[Span]) -> None:
    for match in _matches(_DEVICE_KIND_LATER, text, spans):
        start, end = _content(text, *match.span(1))
        if end > start and text[end - 1] == '"':
            end -= 1
        if end > start and not _not_secret(text[start:end]) and not text[start:end].startswith(MASK):
            spans.append((start, end))
    _device_values(text, spans)


def _device_values(text: str, spans: list[Span]) -> None:
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
        if not value.strip("=:"):
            continue  # an assignment's sign (PRAGMA key = 'x', set api-key = x): the value is the key family's
        if value.endswith(":"):
            continue  # what a log's line is about (gpg: key 7D2E41A9C0B38F15: secret key imported), no device's value
        words = text[match.start() : start].lower().split()
        if len(words) >= 2 and words[-2] in ("create", "drop", "alter", "replace", "exists", "describe"):
            continue  # create secret s3_prod (...): the object's name, its fields are judged each
        if not kind and (value.isdigit() or _error_code(value)):
            continue  # a count or a size (ssh key 2048 bits) or an error's code, not a secret
        if any(word.startswith("-") and len(word) > 1 for word in words[:-1]):
            continue  # a command line's flags (isql -user x -password masterkey <db>): not a device's line
        if _bracketed_name(value):
            continue  # a property's name (Archaius's "key [db.password], value [x]"), not a device's secret
        if text[end : end + 64].lstrip(" \t")[:1] == "{":
            continue  # a target before its secrets in braces (RANCID's add password <glob> {x}): the key family's
        if kind == "0" or not _prose(value):
            spans.append((start, end))


_ASKS_PASSWORD = ("password", "passwd")
"""A line of scripted input that makes the tool ask for a password next (ktutil's ``addent -password``, ``passwd``)."""


def _printf_templates(text: str, spans: list[Span]) -> None:
    """printf's arguments under a secret's key in its format (``token = %s``): the argument, unless a
    variable (``"$TOKEN"``) or a word that is no value; and where each argument is a line of a tool's
    input (``'%s\\n'``), the one after a line that makes it ask for a password (``printf '%s\\n' 'addent
    -password -p etl@REALM ...' x 'wkt /tmp/etl.keytab' | ktutil``)."""
    for match in _matches(_PRINTF_TEMPLATE, text, spans):
        # the format's escapes as the characters they print, its length kept (a key starts its line)
        template = text[match.start(1) + 1 : match.end(1) - 1].replace("\\n", " \n").replace("\\t", " \t")
        keys = [
            _key_before(template, conversion.start())
            for conversion in _CONVERSION.finditer(template)
            if conversion.group() != "%%"
        ]
        offset = match.start(2)
        arguments = list(_PRINTF_ARGUMENT.finditer(text[offset : match.end(2)]))
        asked = False  # the line before asked for a password
        for index, argument in enumerate(arguments):
            key = keys[index % len(keys)] if keys else None  # printf reuses its format for the arguments left
            start, end = _quoted_content(text, offset + argument.start(), offset + argument.end())
            value = text[start:end]
            named = key is not None and _secret_column(key)
            if (
                (named or (asked and _looks_secret(value)))
                and not value.startswith("$")
                and not _not_secret(value)
            ):
                spans.append((start, end))
            asked = any(word in value.lower() for word in _ASKS_PASSWORD)


def _piped_secrets(text: str, lowered: str, spans: list[Span]) -> None:
    """What ``echo``/``printf`` writes into a command that reads a secret from standard input:
    the sink on the same line after ``|``, or on the line before or after (a ``bash -x`` trace); or one
    word shaped as a secret, the answer to a tool's prompt for one printed below (``Enter wallet
    password:``), or piped into any command with a person's mix of capitals, small letters and digits
    (``echo "Gr1dP@ss-77" | dirac-proxy-init -p``)."""
    prompted = _PROMPT.search(text) is not None
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
        start, end = _quoted_content(text, start, end)
        word = text[start:end]
        one_secret = _looks_secret(word) and not word.isalpha() and not any(c.isspace() for c in word)
        mixed = one_secret and _mixed(word) and not _readable(word)  # a person's mix, not a tag or a date
        if (not any(sink in near for sink in _STDIN_SINKS) and _LOGIN_SINK.search(near) is None) and not (
            (one_secret and prompted) or (mixed and "|" in rest)
        ):
            continue  # no sink that reads a secret; nor, for one secret-shaped word, a prompt it answers or a pipe
        if end > start and not _not_secret(text[start:end]) and text[start:end] != "-":
            spans.append((start, end))


def _argv(text: str, lowered: str, spans: list[Span], readable: list[Span]) -> None:
    """The flags' secrets; the user of ``-u user:secret`` is a name, however random (curl -u 4f3a...c4:W2xQ...,
    an OAuth client's id and secret), when what follows its colon is a secret of its own or hidden already
    (``-u ghp_x:x-oauth-basic`` is a token as its user: not kept; vendor prefixes are hidden wherever they stand)."""
    pairs: list[tuple[Span, Span]] = []
    for start, end in argv.find(text, lowered, pairs):
        value = text[start:end]
        # a connection string (db2's using "Server=h;UID=u;PWD=x") is the key family's to read
        if value != MASK and not _not_secret(value) and _NEXT_KEY.search(value) is None:
            spans.append((start, end))
    for user, (start, end) in pairs:
        secret = text[start:end]
        if secret == MASK or (_looks_secret(secret) and not secret.isalpha()):
            readable.append(user)


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


def _quoted_ports(text: str, spans: list[Span]) -> None:
    """A port's or an escape's quoted piece is hidden; a number parse's (Python's ``int()``, Java's
    ``For input string``) only when it holds a URI's ``@``, ``:`` or ``/`` (else it is a value on-call
    reads) and is no whole URL (python-decouple's ``int('redis://:x@host:6379/2')``: the URL family's)."""
    for match in _matches(_QUOTED_PORT, text, spans):
        start, end = match.span(2) if match.span(2)[0] >= 0 else match.span(3)
        value = text[start:end].lstrip(":")
        generic = match.span(1)[0] >= 0
        if generic and (not any(c in value for c in "@:/") or "://" in value):
            continue  # a value on-call reads, or a whole URL (the URL family hides its password)
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


PATTERNS: tuple[Pattern, ...] = (
    _PROMPT, _ORACLE, _ORACLE_WORD, _EASY_CONNECT, _AUTH_COMMAND, _REDIS_DIRECTIVE, _SENTINEL_AUTH, _IDENTIFIED_BY, _SQL_KEY, _PASS_COMMAND, _IMAP_LOGIN, _PLUS_LOGIN, _KEY_SECRET_FLAGS, _NAMED_SETTING, _STORE_PASSWORD_FLAG, _DOMAIN_LOGIN, _JDBC_ARGUMENTS, _LTOKEN_LINE, _ENCRYPT_STRING, _QUOTED_ARGUMENT,
    _REDIS_CONFIG_REPLY, _SMTP_CHALLENGE, _SMTP_ANSWER, _LIBPQ, _QUOTED_PORT, _EXPECT_SEND, _SECURE_STRING,
    _NET_USE, _FTP_USER, _LOGON_STRING, _COMMUNITY_BLOCK, _CONNECT_CALL, _BARE_FIELDS, _LOGIN_CALL, _LISP_LOGIN, _DEVICE_KIND_LATER, _REGISTRY_VALUE, _PGPASS_LINE, _PCPPASS_LINE, _CVSPASS_LINE, _NTP_KEY_LINE, _FIX_PASSWORD, _TOKEN_PIN, _CALL_ARGUMENT, _CONNECT_DIRECTIVE, _HOST_PORT_LOGIN, _SERVER_PASSWORD, _WINDOWS_LOGIN, _PIPED, _LOGIN_SINK,
    _DEVICE_SECRET, _CARET_PLAIN, _SASL_ELEMENT, _NAGIOS_MACRO, _HMAC_KEY, _DIGEST_CALL, _DIGEST_RESULT, _JOINED_LITERAL, _ODBC_LOGIN,
    _SASL_TUPLE, _PASSPHRASE_CALL, _HEADER_ARGUMENTS, _AUTH_DIRECTIVE, _PRINTF_TEMPLATE, _PRINTF_ARGUMENT, _CONVERSION,
)  # fmt: skip
"""This module's patterns, beside ``policy/argv.py``'s (the linear-time test runs each on adversarial input)."""


def find(text: str, lowered: str, gates: frozenset[str], spans: list[Span], readable: list[Span]) -> None:
    """The secrets of command lines and protocol exchanges; ``gates`` holds the literals found in ``lowered``;
    ``readable`` gets the users of ``user:secret`` pairs."""
    _argv(text, lowered, spans, readable)  # each row gated on its tools' names and its flag
    if "AUTH" in text:
        _auth_commands(text, spans)
    if "PASS" in text:
        _spans_of(_PASS_COMMAND, text, spans)
    if "LOGIN" in text:
        _imap_logins(text, spans)
    if "identified" in lowered:
        _spans_of(_IDENTIFIED_BY, text, spans, groups=3)
    if "pragma" in lowered or "attach" in lowered:
        _spans_of(_SQL_KEY, text, spans, groups=3)
    if "auth-pass" in lowered:
        _spans_of(_SENTINEL_AUTH, text, spans)
    if "securestring" in lowered:
        _spans_of(_SECURE_STRING, text, spans, groups=3)
    # a single character first: a search for one is a memchr, for two or more a slower scan
    if "(" in text and ("('" in text or '("' in text or "($" in text or ", '" in text or ', "' in text):
        _connection_calls(text, spans)
    if "(" in text and any(map(lowered.__contains__, _LOGIN_WORDS)):
        _spans_of(_LOGIN_CALL, text, spans, groups=2)
        if '" "' in text:
            _lisp_logins(text, spans)
    if "connect" in gates:
        _connection_directives(text, spans)
    if "://" in text and "(" in text:
        _bare_logins(text, spans)
    if " " in text and "." in text:
        _host_port_logins(text, spans)
    if "(" in text and ("hmac" in lowered or "sha" in lowered or "md5(" in lowered):
        _hashed_keys(text, spans)
    if not gates.isdisjoint(_DEVICE_WORDS):
        _device_secrets(text, spans)
    if ("echo" in gates or "printf" in gates) and (
        "|" in text
        or any(map(lowered.__contains__, _STDIN_SINKS))
        or any(map(lowered.__contains__, ("password", "passphrase", "login", "signin", "unlock")))
    ):
        _piped_secrets(text, lowered, spans)
    if "printf" in gates and "%" in text:
        _printf_templates(text, spans)
    if "/u" in gates:
        _spans_of(_WINDOWS_LOGIN, text, spans)
    if "^" in text:
        _spans_of(_CARET_PLAIN, text, spans)
    if "<" in text and "mechanism=" in text:
        _spans_of(_SASL_ELEMENT, text, spans)
    if "{" in text and ("scram_sha" in lowered or "plain" in lowered):
        _spans_of(_SASL_TUPLE, text, spans)
    if "[" in text and ("passphrase" in lowered or "encryptwallet" in lowered):
        _spans_of(_PASSPHRASE_CALL, text, spans)
    if "$" in text and "$USER" in text:
        _nagios_macros(text, spans)
    if "/d" in lowered and "/v" in lowered:
        _spans_of(_REGISTRY_VALUE, text, spans, groups=2)
    colons = text.count(":")
    if colons >= 4:
        _spans_of(_PGPASS_LINE, text, spans)
    if colons >= 3:
        _pcppass_lines(text, spans)
    if "/1 :" in text:
        _spans_of(_CVSPASS_LINE, text, spans)
    if "HEX:" in text or "ASCII:" in text:
        _spans_of(_NTP_KEY_LINE, text, spans)
    if "8=FIX" in text:
        _spans_of(_FIX_PASSWORD, text, spans)
    if "[{{" in text:
        _spans_of(_TOKEN_PIN, text, spans)
    if "header" in lowered:
        _header_arguments(text, spans)
    if 'uth "' in text:
        _spans_of(_AUTH_DIRECTIVE, text, spans)
    if text.count(";") >= 3:
        _token_lines(text, spans)
    if "net use" in lowered or "net user" in lowered:
        _spans_of(_NET_USE, text, spans)
    if "ftp" in lowered and "user" in lowered:
        _spans_of(_FTP_USER, text, spans)
    if "logon" in lowered:
        _spans_of(_LOGON_STRING, text, spans)
    if "community" in lowered and "{" in text:
        _spans_of(_COMMUNITY_BLOCK, text, spans, groups=2)
    if "sending" in text:
        _spans_of(_EXPECT_SEND, text, spans)
    if "334" in text:
        _smtp_answers(text, spans)
    if "requirepass" in lowered or "masterauth" in lowered or "masteruser" in lowered:
        _spans_of(_REDIS_CONFIG_REPLY, text, spans)
        _redis_directives(text, spans)
    if "/" in text and any(map(lowered.__contains__, _ORACLE_WORDS)) and _ORACLE_WORD.search(text):
        _oracle(text, spans)
    if "/" in text and "@" in text:
        _spans_of(_EASY_CONNECT, text, spans)
    if "+login" in text:
        _spans_of(_PLUS_LOGIN, text, spans)
    if "-k " in text and "-s " in text:
        _spans_of(_KEY_SECRET_FLAGS, text, spans)
    if "p " in text and any(map(lowered.__contains__, _STORE_FILES)):
        _store_passwords(text, spans)
    if "\\" in text and ":" in text:
        _domain_logins(text, spans)
    if "jdbc:" in lowered and "[" in text:
        _spans_of(_JDBC_ARGUMENTS, text, spans)
    if "encrypt_string" in text:
        _encrypted_strings(text, spans)
    if "-v" in text:  # -v, --value
        _named_settings(text, spans)
    if "port" in lowered or "invalid" in lowered or "input string" in lowered:
        _quoted_ports(text, spans)
    if "isql" in lowered or "iusql" in lowered:
        _spans_of(_ODBC_LOGIN, text, spans)
    if "connection info string" in text or "unexpected spaces found" in text:
        _libpq_words(text, spans)
