"""Assignments in any syntax: ``k=v``, ``k: v``, ``"k": "v"``, reprs and escaped JSON at any depth,
``key value`` after a secret's name, YAML (lists and block scalars), XML elements and name/value
pairs, credential pairs, Erlang tuples, a tool's echo of a setting, pydantic's inputs, and a key
word of another language followed by its modifier."""

from __future__ import annotations

import re
from typing import Any

from airflow_retry_provider.policy import secret_words
from airflow_retry_provider.policy.engine import Pattern, pattern
from airflow_retry_provider.policy.redactor.judge import (
    _AUTHINFO_ITEMS,
    _DEVICE_KINDS,
    _FOREIGN_WORDS,
    _NAMING_KEYS,
    _OUTRIGHT_WORDS,
    _PASSWORD_KEYS,
    _SPACED_KEY,
    PROSE_WORDS,
    _before_next_key,
    _bracketed_name,
    _compact,
    _credential_scope,
    _domain_name,
    _flag_prose,
    _id_key,
    _identity,
    _key_before,
    _looks_random,
    _looks_secret,
    _next_assignment,
    _not_secret,
    _prose_after_colon,
    _public_key,
    _readable,
    _secret_column,
    _secret_key,
    _secret_name,
    _spaced_value,
)
from airflow_retry_provider.policy.redactor.spans import (
    _QUOTED,
    MASK,
    MAX_TABLE_LINES,
    Span,
    _content,
    _escaped_line_end,
    _matches,
    _quoted_content,
    _spans_of,
)

# A key's characters: Unicode letters, digits and marks (RE2's \w is ASCII only: пароль_бд, 密码,
# पासवर्ड with its vowel signs), _ . and -
_KEY_CHAR = r"[\pL\pN\pM_.-]"


_KEY = (
    # pasw: a misspelt password key (keystorePasword: Tomcat refuses it and says so, value and all)
    rf"{_KEY_CHAR}*(?:pass|pasw|pwd|token|secret|credential|signature|cookie|session-?id|salt|"
    + "|".join(_FOREIGN_WORDS)
    + rf"|api-?key|access-?key|private-?key|account-?key)"
    # then the rest of the word, and perhaps a connecting word and one more (token de acceso, senha
    # do banco, clau secreta del comerç)
    rf"{_KEY_CHAR}*(?:[ \t](?:de|do|da|del|di|du|des|der|van|von|of|от|для)(?:[ \t]\pL+){{1,4}})?"
    # or the kind of secret after it, with no linking word (clé API, Schlüssel SSH)
    r"(?:[ \t](?:api|ssh|gpg|pgp|jwt|aws|s3|db|sql|smtp|ldap|ftp|vpn|wifi|wi-fi|hmac|oauth|tls|ssl))?"
    rf"|{_KEY_CHAR}*(?:key|keys|[_.-]auth(?:tok)?|pw|psw|psk|hmac)|auth|sig|session|sid"  # upw=, dbpw=, psw= (SMSC.ru), wpa_psk=, x_hmac=
    # or with an environment's suffix (dotenvx's DOTENV_PRIVATE_KEY_PRODUCTION=, API_KEY_PROD=)
    rf"|{_KEY_CHAR}*key[_.-](?:prod|production|dev|development|staging|stage|test|live|sandbox|local)"
    r"|--?pas"  # a password's flag cut short, as a tool that takes any prefix of a switch reads it (gbak's -pas)
    # a token's abbreviation, as a camel-case or separated last word (TranzilaTK=, card_tk=) or alone
    # (and a product's runtime licence key, CData's drivers' RTK=)
    rf"|{_KEY_CHAR}*(?-i:[a-z]TK)|(?:{_KEY_CHAR}*[_.-])?r?tk"
    rf"|{_KEY_CHAR}*auth[_-]?(?:data|string|value|info)"  # the contents of a credential (Barion's AuthData, auth_string)
    r"|userinfo"  # a parsed URI's user:password (Elixir's %URI{userinfo: "u:x"}, Go's url.Userinfo)
    # a one-time or personal code, as a whole word or after a separator (pin=, card.pin:, pin_code=, mfa_code=);
    # a verifier (OAuth 1.0's oauth_verifier, PKCE's code_verifier, a webhook's verification code)
    rf"|(?:{_KEY_CHAR}*[_.-])?(?:pin(?:[_-]?code)?|otp|totp|mfa[_-]?code|2fa[_-]?code|recovery[_-]?codes?|backup[_-]?codes?|security[_-]?answer|verifier)"
    # a product's registration or activation code, which registers a system as the customer's (SUSE's
    # AutoYaST <reg_code>, SUSEConnect's --regcode, a licence's activation_code)
    rf"|(?:{_KEY_CHAR}*[_.-])?(?:reg|registration|activation|licen[cs]e)[_-]?code"
    rf"|{_KEY_CHAR}*(?-i:[a-z]Pin(?:Code)?)"  # a PIN as a camel-case last word (Aramex's AccountPin)
    # a cipher's initialisation vector set beside its key (KG Inicis' INIAPI_IV, aes_iv, NewebPay's
    # HashIV): key material
    rf"|{_KEY_CHAR}*[_.-]iv|{_KEY_CHAR}*(?-i:[a-z]IV)|iv"
    r"|x-[\w-]*-session"  # a session header (X-Metabase-Session: <uuid>)  # SSSD's ldap_default_authtok
    r"|snmp[_.-]?community|community(?:[_-]?string)?"  # an SNMP community string: the agent's password
    rf"|{_KEY_CHAR}*(?:api|app)[_-]?hash"  # an application's hash is its secret (Telegram's api_hash, MTProto's)
    # a request's signature named sign, alone or as a last word (Alipay's sign=, Kdniao's DataSign=, data_sign)
    rf"|{_KEY_CHAR}*(?-i:[a-z]Sign)|(?:{_KEY_CHAR}*[_.-])?sign"
)


# = or :, full-width too (密码：x), or : then a YAML list item; after a subscript's closing bracket too
# (Python's conf["password"] = x, PHP's $config['db_pass'] = x, Ruby's ENV['TOKEN'] = x, Perl's
# $Self->{DatabasePw} = 'x' and $conf{'password'} = 'x'), a nested parameter's too, percent-encoded or
# not (a form's or a query's user[password]=x, params%5BsecretKey%5D=x); or a dotted leader, as a table
# of settings prints it (php artisan about's "webhook_secret ........ x")
_SEP = r"(\\*(?:[\"']\]?|[\"']?\})?[ \t]*(?::=|=>|==?|:|：|＝| \.{4,})[ \t]*(?:\r?\n[ \t]*-[ \t]+)?|(?:\]|%5[dD])=)"


_VALUE = (
    # a string in triple quotes, one line of it (grafana.ini's password = """#x;y""", Python's, TOML's)
    r"(\"\"\"[^\"\r\n]*|'''[^'\r\n]*"
    f"|[bB]?{_QUOTED}"  # a string, or Python's bytes (curve_secretkey=b'...')
    rf"|\[[ \t]*{_QUOTED}"  # a list's first item (Elixir's and Ruby's "x-api-key" => ["x"], Go's http.Header)
    r"|\{(?:[^}\r\n]|\}\})*\}?"  # {braced} (ODBC: PWD={a;b}; }} is a literal })
    # a bare word (not starting with "(": Key (id)=(5)), ending before a repr's escaped line end (\r\n)
    r"|[^\s&;,，；、。\"'<>()\]}\\](?:[^\s&;,，；、。\"'<>)\]}\\]|\\+[^\s&;,，；、。\"'<>)\]}\\rn])*)"
)


# key=value, "key": "value", key: value, key value, '--key', 'value', where the key names a secret;
# a word in parentheses may stand between the key and its colon, saying which or how (Redsys' "clau
# secreta del comerç (SHA-256): x", Paytrail's "salainen avain (SECRET_KEY): x", in full-width parentheses
# too: bitFlyer's "APIシークレット（先頭のみ）: x", its first characters only), or the key may be
# the parenthesised word itself ("(SECRET_KEY): x")
_KEY_VALUE = pattern(
    rf"(?:^|%5[bB]|[^\pL\pN\pM_.-])({_KEY})(?:[ \t]*\([^()\r\n]{{1,40}}\)|[ \t]*（[^（）\r\n]{{1,40}}）|\))?{_SEP}{_VALUE}",
    ignore_case=True,
)


# OAuth 2.0's authorization code in a token request's body, beside its grant_type (RFC 6749 4.1.3):
# "code": "def502...", code=SplxlOBeZQQYbYS6WxSbIA
_OAUTH_CODE = pattern(rf"(?:^|[^\pL\pN\pM_.-])code{_SEP}{_VALUE}", ignore_case=True)


def _oauth_codes(text: str, spans: list[Span]) -> None:
    """The authorization code of a token request: a credential, unlike an error's ``"code": "SIGN_ERROR"``."""
    for match in _matches(_OAUTH_CODE, text, spans):
        start, end = _content(text, *match.span(2))
        value = text[start:end]
        if len(value) >= 8 and not value.isdigit() and not _readable(value) and not _not_secret(value):
            spans.append((start, end))


# a JSON object or a dict's repr as a value: a brace, then a quoted key and its colon
# an object's first field: a quoted key (JSON, a repr), or a bare one (JavaScript, YAML's flow style)
_JSON_OBJECT = pattern(r"\{[ \t]*(?:\\*[\"'][^\"'\r\n]{1,64}\\*[\"']|[A-Za-z_$][\w$-]{0,63})[ \t]*:")


# a setting's value wrapped in an object of its own (Spring Cloud Config's and Steeltoe's property sources:
# "spring.datasource.password":{"value":"x","origin":...}): the field's string is the value (group 1)
_WRAPPED_VALUE = pattern(r"\{[ \t]*[\"']value[\"'][ \t]*:[ \t]*[\"']([^\"'\r\n]*)[\"']")


# key<space>value, '--key', 'value': only the key and the space are matched, the value is read in
# Python, so a value that is not a secret is not consumed ("pass password=x" still shows its key).
# A keyword's colon may stand before the key after an opening bracket or a comma: Clojure's {:password "x"}.
# No group: RE2 then finds a match's bounds with its DFA alone, where a group made it read a long
# match again with its NFA (5 ms for a 16 KiB word of key characters, 0.1 ms without); the key is
# the match less the character before it and the separator after it (_spaced_key)
_KEY_SPACE = pattern(
    rf"(?:^|[\s\"'(\[{{,，。；、（【「]|[{{(\[,][ \t]*:)(?:{_KEY})(?:\\*[\"'][ \t]*,[ \t]*|[ \t]+)",
    ignore_case=True,
)
# after a space, only with a string for its value (a Common Lisp structure's :PASSWORD "x"): a text of
# "password :" again and again is no run of keys to read one by one (10 KiB took 6 ms, not 4); or
# Raku's colon pair, its word in angle brackets (DBIish.connect('Pg', :user<u>, :password<x>))
_KEYWORD_STRING = pattern(
    rf"[ \t]:({_KEY})(?:[ \t]+\"([^\"\\\r\n]{{1,256}})\"|<([^<>\s]{{1,256}})>)", ignore_case=True
)


# a key word of another language, then one or two words that say which (Vietnamese "mật khẩu merchant:",
# Polish "klucz CRC=": languages that put the modifier after the noun)
_MODIFIED_KEY = pattern(
    rf"(?:^|[^\pL\pN\pM_.-])({'|'.join(_FOREIGN_WORDS)})[ \t]+(\pL{{2,16}}(?:[ \t]\pL{{2,16}})?)[ \t]*(?::|=|：|＝)[ \t]*{_VALUE}",
    ignore_case=True,
)


# XML: <Password>x</Password>, <ns:ApiKey><![CDATA[x]]></ns:ApiKey>
_XML_ELEMENT = pattern(
    r"<([\w:.-]*(?:pass|pwd|secret|token|credential|signature|api[-_]?key|access[-_]?key|private[-_]?key"
    r"|account[-_]?key|session[-_]?key|auth[-_]?key|client[-_]?key|[_.-]key|(?-i:[a-z]Key)|[_.-]pw|"  # <hmac_key>,
    r"(?:reg|registration|activation|licen[cs]e)[-_]?code|"  # <reg_code> (AutoYaST)
    r"session[-_]?id|"  # a SOAP login's answer (Salesforce's, Speedex's <sessionId>): the session's bearer credential
    # <applicationKey>, not <key> (a plist's name)
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
    # and Spring Boot's "Failed to bind properties": "Property: db.password / Value: "x""; each line perhaps
    # after a log's prefix (a Pod spec an Airflow task prints: [<time>] INFO -     - name: "X" / [<time>] INFO -       value: "x")
    pattern(
        r"\b(?:name|property):[ \t]*[\"']?([\w.-]+)[\"']?[ \t]*\r?\n"
        r"(?:\[[^\]\r\n]{1,64}\][ \t]*(?:\{[^}\r\n]{0,80}\}[ \t]*)?[A-Z]{3,8}[ \t]+-[ \t])?[ \t]*value:[ \t]*([^\r\n]*)",
        ignore_case=True,
    ),
    pattern(r"<[\w:.-]+[ \t][^<>]*?\b(?:name|key)[ \t]*=[ \t]*[\"']([^\"'<>]*)[\"'][^<>/]*>([^<]*)<", ignore_case=True),
    # Hadoop's configuration XML (core-site, hive-site, hdfs-site...), as services print it:
    # <property><name>javax.jdo.option.ConnectionPassword</name><value>x</value></property>
    pattern(
        r"<(?:name|key)>[ \t]*([^<>\r\n]{1,200}?)[ \t]*</(?:name|key)>\s{0,200}<value>([^<]*)</value>",
        ignore_case=True,
    ),
    # a property's key and value in brackets, as a config library logs it (Archaius's "adding property
    # key [db.password], value [x]")
    pattern(r"\b(?:name|key|property)[ \t]*\[([\w.-]{1,128})\],?[ \t]*value[ \t]*\[([^\]\r\n]*)\]", ignore_case=True),
    # YAML's flow style: {name: DB_PASS, value: x}
    pattern(r"\bname:[ \t]*[\"']?([\w.-]+)[\"']?[ \t]*,[ \t]*value:[ \t]*([^,}\]\r\n]*)", ignore_case=True),
    # a declared block named for a secret, its value the default (HCL: Terraform's and Packer's
    # variable "db_password" { default = "x" }, Nomad's and Waypoint's variable/input blocks)
    pattern(
        r"\b(?:variable|input|param|parameter|output|secret)[ \t]+\"([^\"\r\n]{1,64})\"[ \t]*\{[^{}]{0,256}?"
        r"\b(?:default|value)[ \t]*=[ \t]*(\"[^\"\r\n]*\")",
        ignore_case=True,
    ),
)  # fmt: skip


# a personal access token named by its abbreviation, as CI systems and CLIs name it in the environment:
# AZURE_DEVOPS_EXT_PAT=x, GITHUB_PAT=x, gitlab_pat: x (PAT as a word of its own: not PATH, PATTERN)
_ACCESS_TOKEN_ENV = pattern(r"(?:^|[^\w])(?:[A-Za-z0-9]+_)*(?:PAT|pat)[ \t]*[=:][ \t]*([^\s\"'&;,]{8,})")


# a (user, password) pair given to a credential's constructor or an auth argument: requests'
# auth=('u', 'p'), http_auth= (opensearch-py), HTTPBasicAuth('u', 'p'), aiohttp's BasicAuth, .NET's
# NetworkCredential("u", "p"), exchangelib's Credentials("DOMAIN\\u", "p"), Huawei's BasicCredentials(ak, sk):
# a class named Credential(s), with one word before it at most (Azure's ClientSecretCredential takes a
# tenant and a client id first; a getter's call is lower case: keyring.get_credential("svc", "user"))
_CREDENTIAL_PAIR = pattern(
    r"(?:(?i:\b(?:[a-z_]{0,30}auth|network_?credential|username_?password_?credentials?|password_?credential))"
    r"|\b(?:[A-Z][a-z]+)?Credentials?)[ \t]*(?:=|:|\()[ \t]*\(?[ \t]*"
    # the user may hold escaped characters (a Windows domain user in a repr: 'ACME\\\\svc_etl')
    r"(?:\\*\"(?:[^\"\r\n\\]|\\\\)*\\*\"|\\*'(?:[^'\r\n\\]|\\\\)*\\*')[ \t]*,[ \t]*(?:\\*\"([^\"\r\n\\]*)|\\*'([^'\r\n\\]*))"
)


# a secret's reference as Kapitan writes it, ?{backend:path[:hash]} (?{gkms:prod/db_password:3f8c1a7e}): where
# the secret is kept, not the secret
_REFERENCE_TAG = "?{"


# what a reveal prints after a reference is its secret (kapitan refs --reveal's "?{gkms:...} -> x")
_REVEAL = pattern(r"\?\{[^{}\s]{1,256}\}[ \t]*(?:->|=>)[ \t]*([^\s'\"]+)")


def _in_reference(text: str, key_start: int) -> bool:
    """Whether the key at ``key_start`` is a path's word inside a secret's reference (``?{gkms:a/db_password:h}``)."""
    opening = text.rfind(_REFERENCE_TAG, max(0, key_start - 256), key_start)
    return opening >= 0 and not any(c in "} \t\r\n" for c in text[opening:key_start])


# sendmail's authinfo items, each quoted after its letter (U: the user, I: the authorization id, R: the
# realm, M: the mechanisms): P: is the password, P= the same in base64 ("U:reports" "P:x" "M:LOGIN")
_AUTHINFO_NEXT = tuple(f" {item}" for item in _AUTHINFO_ITEMS)
_AUTHINFO_PASSWORD = pattern(
    r"\"[UIR][:=][^\"\r\n]*\"(?:[ \t]+\"[A-Z][:=][^\"\r\n]*\")*?[ \t]+\"P[:=]([^\"\r\n]{1,256})\""
)


# a one-time code a message sends, after a verification code's words in any language (``secret_words.CODE_WORDS``):
# the first number of 4 to 8 digits on the line that is a word of its own (not DH-250326-0917's, not a date's),
# before any mask (a code hidden already, "验证码是***", leaves the phone's 138****5521 alone)
_SENT_CODE = pattern(
    "(?i:"
    + "|".join(map(re.escape, secret_words.CODE_WORDS))
    + r")[^\r\n*]{0,80}?(?:[^\w\r\n*-])([0-9]{4,8})(?:[^\w-]|$)"
)


# a code phrase a password-authenticated transfer prints for its peer to type (magic-wormhole's "Wormhole
# code is: 4-hamburger-vocalist-uproot", croc's): a channel's number, then words joined by dashes, after "code"
_CODE_PHRASE = pattern(r"(?i:\bcode)\b[^\r\n]{0,24}?[\s:=\"']([0-9]{1,4}(?:-[a-z]{2,16}){2,6})(?:[^\w-]|$)")
_OUTCOME_WORDS = ("error", "status", "exit", "return", "response", "http", "reason")
"""Words before "code" that make it an outcome's code (``error code: 404-not-found``), not a phrase to type."""


def _code_phrases(text: str, lowered: str, spans: list[Span]) -> None:
    for match in _matches(_CODE_PHRASE, text, spans):
        before = lowered[max(0, match.start() - 16) : match.start()]
        if not any(word in before for word in _OUTCOME_WORDS):
            spans.append(match.span(1))


# a signature a verifier quotes back, as it received it or as it computed it, in a text about a
# signature ("received":"<hex>", Kiwify's "recebida=<hex> calculada=<hex>", expected: <base64>)
_COMPARED_SIGNATURE = pattern(
    r"(?i:\b(?:expected|received|computed|calculated|got|actual|recebida|recebido|calculada|calculado|esperada|esperado"
    r"|recibida|recibido|reçue|reçu|calculée|attendue|attendu|erwartet|berechnet|erhalten))[\"']?[ \t]*(?:[=:][ \t]*)?[\"']?"
    r"([0-9a-fA-F]{32,128}|[A-Za-z0-9+/_-]{32,256}={0,2})(?:[^\w+/=-]|$)"
)


_SIGNATURE_WORDS = (
    "signature",
    "signing",
    "hmac",
    "assinatura",
    "firma ",  # not "confirmation"
    "подпис",
    "签名",
    "署名",
    "서명",
    "imza",
    "md5sig",  # Skrill's status callback: "md5sig mismatch: expected <hex> got <hex>"
    "sig mismatch",
)
"""Words a text about a signature holds (signature, HMAC, in some of the languages of policy/secret_words.py),
none inside a common word ("signed" is in "assigned", "firma" in "confirmation")."""


# what a plain digest is computed over, as a verifier logs it: a secret joined to the request's fields
# (Skrill's md5sig is the MD5 of merchant_id, transaction_id, the MD5 of the secret word, amount...:
# "md5 input: 90210345INV-...<secret's MD5>49.90EUR2"), all of it hidden; an HMAC's string to sign holds
# no key and stays (AWS's "The String-to-Sign should have been ...")
_DIGEST_INPUT = pattern(
    r"(?i:\b(?:md5|sha-?1|sha-?256|sha-?512|hash|digest|checksum)[ _-]?(?:input|source|base)"
    r"|\b(?:string|text|data)[ _-]to[ _-](?:hash|digest|md5))"
    r"[\"']?[ \t]*[=:][ \t]*[\"']?([^\s\"'][^\r\n\"']{7,511})"
)


# an object that holds a credential, and beside it the request's proof: a hash, a checksum or a digest
# there is the request's signature, not a file's digest (İletimerkezi's {"key": "x", "hash": "<HMAC of
# key and secret>"}, NetEase Yunxin's headers {'AppKey': 'x', 'Nonce': ..., 'CheckSum': '<sha1>'},
# SALESmanago's {"apiKey": "x", "requestTime": ..., "sha": "<sha1>"})
_FLAT_OBJECT = pattern(r"\{([^{}\r\n]{1,1000})\}")


_FIELD_NAME = pattern(r"[\"']([\w-]{1,40})[\"'][ \t]*:")


_PROOF_FIELD = pattern(
    r"(?i:[\"'](?:hash|sha(?:1|256)?|digest|sign|checksum|mac)[\"'])[ \t]*:[ \t]*[\"']([^\"'\r\n]{8,256})[\"']"
)


# a wallet's recovery phrase (BIP-39's 12 to 24 lower-case words) under a key naming a seed or a
# mnemonic (renterd's RENTERD_SEED='w1 ... w12', seed_phrase:, MNEMONIC=); a generator's seed is a
# number (RANDOM_SEED=42) and never matches
_SEED_PHRASE = pattern(
    r"(?i:seed|mnemonic)(?i:[_ -]?(?:phrase|words))?[\"']?[ \t]*[=:][ \t]*[\"']?((?:[a-z]{3,8}[ \t]+){11,23}[a-z]{3,8})\b"
)


# a secret's name and its value as two string arguments of a call, the name first: PHP's
# define('AUTH_KEY', 'x'), Go's os.Setenv("API_TOKEN", "x"), C's setenv("K", "x", 1), Java's
# System.setProperty("javax.net.ssl.keyStorePassword", "x"), Python's os.environ.setdefault('K', 'x')
# and configparser's set('db', 'password', 'x'), PowerShell's SetEnvironmentVariable("K", "x");
# the name must follow "(" or "," (an argument, not a sentence's quoted word), checked in Python
_CALL_PAIR = pattern(
    r"(?:'([\pL\pN_.-]{1,64})'|\"([\pL\pN_.-]{1,64})\")[ \t]*,[ \t]*"
    r"(?:'((?:[^'\\\r\n]|\\.)*)'|\"((?:[^\"\\\r\n]|\\.)*)\")"
)


# a setter or a builder given a secret as its one string argument: setPassword("x"), withApiKey("x"),
# set_token('x'), .password("x") (JDBC's and the AWS SDKs' builders), PHP's ->auth('x') (phpredis);
# the name is judged in Python
_SETTER_CALL = pattern(
    r"(?:(\.|->)|^|[^\w$.])([A-Za-z_]\w{0,48})\([ \t]*(?:'((?:[^'\\\r\n]|\\.){1,256})'|\"((?:[^\"\\\r\n]|\\.){1,256})\")[ \t]*\)"
)


def _setter_key(name: str, builder: bool) -> str | None:
    """The key a setter or a ``builder``'s method sets (``setPassword`` -> ``Password``, ``.password`` -> ``password``), or None."""
    if builder and not name.lower().startswith(("get", "load", "read", "fetch", "find")):
        return name
    for prefix in ("set_", "with_", "set", "with"):
        rest = name[len(prefix) :]
        if (
            name.lower().startswith(prefix)
            and rest[:1].isupper()
            or prefix.endswith("_")
            and name.startswith(prefix)
        ):
            return rest
    if name.lower() in _OPTION_CALLS:
        return name  # a config language's option, called (syslog-ng's password("x"), a Gradle block's)
    return None


_OPTION_CALLS = ("password", "passwd", "passphrase", "secret", "token", "apikey", "api_key", "credentials")
"""Option names a config language writes as a call with its value: the call sets the option."""


# a user's key whose value is its name and password (curlftpfs' -o user=name:x, coturn's user=name:x)
_USER_PAIR_KEY = pattern(r"(?:^|[\s'\",(])(?:user|username|login)[ \t]*=[ \t]*([^\s:'\",@/=]+):([^\s'\",]+)")


def _user_pairs(text: str, spans: list[Span]) -> None:
    """The password of ``user=name:password``: not a user and its group (``1000:1000``, ``app:app``)."""
    for match in _matches(_USER_PAIR_KEY, text, spans):
        start, end = match.span(2)
        end = _before_next_key(text, start, end)  # a property list (user=u:password=x:serverName=h)
        secret = text[start:end]
        if secret and not secret.isdigit() and secret != match.group(1) and not _not_secret(secret):
            spans.append((start, end))


# a user and a password as an unquoted parenthesised pair (and a new password third) after a key
# that names a login: IBM Connect:Direct's snodeid=(user,pw[,newpw]) and pnodeid=, a mainframe's
# userid=(u,p), auth=(u, p) as a config echoes it; the key's ending is judged in Python
_LOGIN_TUPLE = pattern(
    r"(?:^|[^\w-])([A-Za-z_][\w-]{0,40})[ \t]*[=:][ \t]*\([ \t]*([^\s,()'\"=]+)[ \t]*,[ \t]*([^\s,()'\"=]+)"
    r"(?:[ \t]*,[ \t]*([^\s,()'\"=]+))?[ \t]*\)"
)


# the same pair quoted in a vector after a keyword (clj-http's :basic-auth ["user" "pw"], EDN)
_LOGIN_VECTOR = pattern(
    r"(?:^|[\s{(\[,]):([A-Za-z_][\w-]{0,40})[ \t]+\[[ \t]*\"([^\"\r\n]{1,64})\"[ \t,]+\"([^\"\r\n]{1,256})\""
    r"(?:[ \t,]+\"([^\"\r\n]{1,256})\")?[ \t]*\]"
)


_LOGIN_KEY_ENDINGS = ("id", "auth", "login", "logon", "cred", "creds", "credential", "credentials", "user")
"""A key ending so names who logs in; its pair's second element is a password (bare ``id`` is not)."""


# an Erlang or Elixir option tuple whose atom names a secret: {password, "x"}, {secret_key, <<"x">>};
# or a header's, its name a binary (gun's and hackney's {<<"x-api-key">>, <<"x">>})
_ERLANG_TUPLE = pattern(
    r"\{[ \t]*(?::?([a-z][\w@]*)|<<\"([A-Za-z][\w-]{0,63})\">>)[ \t]*,[ \t]*(?:<<)?(?:\"([^\"\r\n]*)\"|'([^'\r\n]*)'|([^\s,}>'\"]+))"
)


# a tool's echo of a setting it set: a quoted setting name, words, then the quoted value (Meltano's
# "setting 'password' was set in `.env`: 'x'", "set option 'token' to 'x'")
_SETTING_ECHO = pattern(
    r"(?i:setting|option|parameter|variable|property|key)[ \t]+['\"`]([\w.-]{1,60})['\"`]"
    r"[^\r\n'\"]{0,60}?(?::|[ \t]to)[ \t]*(?:'([^'\r\n]*)'|\"([^\"\r\n]*)\")"
)


_SETTING_WORDS = ("setting ", "option ", "parameter ", "variable ", "property ", "key '", 'key "', "key `")


# pydantic's ValidationError: the field's path on one line, its input on the next
# ("db.senha\n  String should have at least 12 characters [type=..., input_value='x', ...]")
_PYDANTIC_INPUT = pattern(
    rf"(?m)^([\w.\[\]-]{{1,128}})\r?\n[ \t]+[^\r\n]*?\[type=[\w.-]+, input_value=({_QUOTED}|[^,\]\r\n]+)"
)


_WORD_STOPS = frozenset(" \t\r\n&;,\"'<>()[]{}=:")


def _setting_echoes(text: str, spans: list[Span]) -> None:
    """A quoted setting's value after its quoted name, when the name is a secret's."""
    for match in _matches(_SETTING_ECHO, text, spans):
        if _secret_name(match.group(1)):
            for index in (2, 3):
                start, end = match.span(index)
                if start >= 0 and end > start and not _not_secret(text[start:end]):
                    spans.append((start, end))


def _call_pairs(text: str, spans: list[Span]) -> None:
    for match in _matches(_CALL_PAIR, text, spans):
        before = text[max(0, match.start() - 8) : match.start()].rstrip(" \t")
        key = match.group(1) if match.group(1) is not None else match.group(2)
        group = 3 if match.group(3) is not None else 4
        value = match.group(group)
        if (
            before.endswith(("(", ","))
            and _secret_column(key)
            and not _host_name(key)
            and not _not_secret(value)
            and value.lower() not in PROSE_WORDS
        ):
            spans.append(match.span(group))


def _host_name(word: str) -> bool:
    """A host's name, not a key's (LabKey's ``APIWrapper("labkey.lab.acme.org", "<container>")``): three or
    more lower-case labels, the last of 2 to 6 letters naming no secret (``spring.datasource.password``
    and ``db.conn.pw`` are keys)."""
    top = word.rpartition(".")[2]
    return _domain_name(word) and word.islower() and 2 <= len(top) <= 6 and not _secret_column(top)


# an API's client built with one string: its credential (TodoistAPI("<40 hex>"), WebClient("..."))
_CLIENT_SUFFIXES = ("API", "Api", "Client", "SDK", "Sdk")


def _client_key(value: str) -> bool:
    """A client's one string argument shaped as a key: random, or 16+ letters and digits in one run
    with both cases (``EZAK8f2d...``) or 24+ of them, after a word naming its mode at most (Scale's
    ``live_<32 hex>``); not a host, a path, a URL or a name of words (``cache_primary_01``)."""
    mode, underscore, rest = value.partition("_")
    keys = (value, rest) if underscore and mode.isalpha() and len(mode) <= 8 else (value,)
    return any(
        _looks_random(key)
        or (
            len(key) >= 16
            and key.isalnum()
            and key.isascii()
            and any(c.isdigit() for c in key)
            and ((any(c.isupper() for c in key) and any(c.islower() for c in key)) or len(key) >= 24)
        )
        for key in keys
    )


def _one_string_calls(text: str, spans: list[Span], setters: bool, clients: bool) -> None:
    """A call's one string argument: a setter's or a builder's secret (``setters``: the text has a key
    word), or a client's key, shaped as a key (``clients``: a client's class is called), not a host,
    a name or a path."""
    for match in _matches(_SETTER_CALL, text, spans):
        name = match.group(2)
        group = 3 if match.group(3) is not None else 4
        value = match.group(group)
        key = _setter_key(name, builder=match.group(1) is not None) if setters else None
        if (key and _secret_column(key) and not _not_secret(value) and value.lower() not in PROSE_WORDS) or (
            clients
            and name[:1].isupper()  # a class (easypost.EasyPostClient), not a getter (.getClient)
            and name.endswith(_CLIENT_SUFFIXES)
            and _client_key(value)
        ):
            spans.append(match.span(group))


def _login_tuples(text: str, spans: list[Span], pattern_: Pattern = _LOGIN_TUPLE) -> None:
    for match in _matches(pattern_, text, spans):
        key = match.group(1).lower()
        if key == "id" or not key.endswith(_LOGIN_KEY_ENDINGS) or match.group(2).isdigit():
            continue  # id=(1,2): numbers, not a user
        for group in (3, 4):
            value = match.group(group)
            if value is not None and not value.isdigit() and not _not_secret(value):
                spans.append(match.span(group))


def _proofs_beside_credentials(text: str, spans: list[Span]) -> None:
    for match in _matches(_FLAT_OBJECT, text, spans):
        fields = match.group(1)
        if not any(_secret_column(name.group(1)) for name in _matches(_FIELD_NAME, fields, [])):
            continue
        start = match.start(1)
        for proof in _matches(_PROOF_FIELD, fields, []):
            if _looks_secret(proof.group(1)):
                spans.append((start + proof.start(1), start + proof.end(1)))


def _erlang_tuples(text: str, spans: list[Span]) -> None:
    """An option tuple's value when its atom or its binary name names a secret (``{password, "x"}``)."""
    for match in _matches(_ERLANG_TUPLE, text, spans):
        name = match.group(1) if match.group(1) is not None else match.group(2)
        if _secret_name(name) or name.lower() == "pw":
            for index in (3, 4, 5):
                start, end = match.span(index)
                if start >= 0:
                    if end > start and not _not_secret(text[start:end]):
                        spans.append((start, end))
                    break


def _modified_keys(text: str, spans: list[Span]) -> None:
    for match in _matches(_MODIFIED_KEY, text, spans):
        if any(word in PROSE_WORDS for word in match.group(2).lower().split()):
            continue
        raw_start, raw_end = match.span(3)
        start, end = _content(text, raw_start, raw_end)
        if end > start and text[end - 1] in "'\"" and start > raw_start:
            end -= 1
        value = text[start:end]
        if _next_assignment(value) or _error_object(text[raw_start:raw_end]):
            continue  # 토큰 발급 실패: {"code": ...}: a sentence's key word before an error, judged by its fields
        if not _not_secret(value) and not (start == raw_start and _prose_after_colon(text, start, value)):
            spans.append((start, end))


# a key word, then (after words of the sentence, each checked in Python) a value in typographic
# quotes, which no source code writes around a name: パスワード「x」, mot de passe incorrect « x »,
# Passwort „x“, пароль «x»
_TYPOGRAPHIC = pattern(
    rf"(?:^|[^\pL\pN\pM_.-])({_KEY})((?:[ \t]+\pL+){{0,2}})[ \t]*"
    r"(?:「([^」\r\n]{1,128})」|『([^』\r\n]{1,128})』|«[ \t\x{a0}]*([^»\r\n]{1,128}?)[ \t\x{a0}]*»"
    r"|„([^“”\r\n]{1,128})[“”]|“([^”\r\n]{1,128})”|‘([^’\r\n]{1,128})’)",
    ignore_case=True,
)


def _typographic_values(text: str, spans: list[Span]) -> None:
    """A value in typographic quotes right after a secret's key word, or after words of the
    sentence that say it failed (``incorrect``, ``falsch``): not a user's name after ``for user``."""
    for match in _matches(_TYPOGRAPHIC, text, spans):
        if not _secret_key(match.group(1)) or any(
            w not in PROSE_WORDS for w in match.group(2).lower().split()
        ):
            continue
        for index in range(3, 9):
            start, end = match.span(index)
            if start >= 0 and not _not_secret(text[start:end]):
                spans.append((start, end))


_TYPOGRAPHIC_QUOTES = ("「", "『", "«", "„", "“", "‘")


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


_DDL_VERBS = (
    "create",
    "create or replace",
    "drop",
    "alter",
    "describe",
    "show",
    "if not exists",
    "if exists",
    "scoped",  # SQL Server's CREATE DATABASE SCOPED CREDENTIAL name
    # a cluster's object named after its verb and kind (kubectl -n data get secret <name> -o yaml)
    " get",
    " delete",
    " edit",
    " patch",
)


_OUTCOMES = ("created", "deleted", "configured", "unchanged", "patched", "replaced", "labeled", "annotated")
"""What a cluster's tool says it did to an object named before it (kubectl's and Kanister's ``secret 'x' created``)."""


_SPACED_VALUE_CHARS = 256
"""A value read after ``key<space>`` is at most this long (the scan is bounded, so it stays linear)."""


_BARE_STOPS = frozenset(" \t\r\n&;,\"'<>)]}，。；、）】」")  # and a script's full-width punctuation


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


_KEY_SPACE_STARTS = "\"'([{,，。；、（【「"
"""The characters ``_KEY_SPACE`` matches before a key (besides white space)."""


def _spaced_key(text: str, match: Any) -> Span:
    """The key of a ``_KEY_SPACE`` match: without the character before it and the separator after it
    (spaces, or ``', '`` between two quoted arguments)."""
    start, end = match.span()
    if text[start].isspace() or text[start] in _KEY_SPACE_STARTS:
        start += 1  # the character before the key
    keyword = text[start:end].lstrip(" \t")
    if keyword.startswith(":"):
        start = end - len(keyword) + 1  # a keyword's colon (Clojure's {:a 1, :password "x"}, EDN)
    end = len(text[start:end].rstrip(" \t").rstrip(",").rstrip(" \t").rstrip("\"'").rstrip("\\")) + start
    return start, end


_KEY_USES = ("shared", "signing", "hmac", "webhook", "master", "encryption")
"""Words naming what a key is for: ``shared key x`` is a secret where ``API key x`` may name a public id
(LiveKit's ``invalid token signature for API key <id>``)."""


def _modifier(text: str, key_start: int) -> str:
    """The word before a key (``shared`` of ``shared key``, ``snapshot`` of ``snapshot key:``), in lower case."""
    return text[max(0, key_start - 16) : key_start].rstrip(" \t").rpartition(" ")[2].lower()


def _naming_words(text: str, key_start: int) -> bool:
    """Whether ``key`` at ``key_start`` is an object's key in two words (reg-suit's ``snapshot key: '<sha>'``,
    ``cache key``, ``sort key``): the words together are a naming key's (:data:`judge._NAMING_KEYS`)."""
    return _compact(_modifier(text, key_start) + "key").endswith(_NAMING_KEYS)


def _flag_key(word: str) -> bool:
    """Whether ``word`` is a whole key as ``_KEY_SPACE`` reads one (``--new-pin``)."""
    match = _KEY_SPACE.match(f" {word} ")
    return match is not None and match.end() == len(word) + 2


def _keyword_strings(text: str, spans: list[Span]) -> None:
    for match in _matches(_KEYWORD_STRING, text, spans):
        value = 2 if match.start(2) >= 0 else 3
        if _secret_key(match.group(1)) and not _not_secret(match.group(value)):
            spans.append(match.span(value))


def _key_space_values(text: str, spans: list[Span]) -> None:
    for match in _matches(_KEY_SPACE, text, spans):
        key_start, key_end = _spaced_key(text, match)
        key = text[key_start:key_end]
        modifier = _modifier(text, key_start)
        if key.lower() == "key" and modifier in _KEY_USES:
            key = f"{modifier}_key"  # a key named by its use: "using shared key 'x'"
        if key.lower() == "key" and _naming_words(text, key_start):
            continue  # "cache key abc-123": an object's key
        start, end = _next_word(text, match.end())
        end = _escaped_line_end(text, start, end)
        value = text[start:end]
        if key.startswith("-") and value.startswith("-") and text[end : end + 1] == " " and _flag_key(value):
            # a switch named for a secret, then a flag that is one (pkcs11-tool's --init-pin --new-pin x):
            # the match took the space before it, so it is read here, once
            key_start, key_end, key = start, end, value
            start, end = _next_word(text, end + 1)
            end = _escaped_line_end(text, start, end)
            value = text[start:end]
        if start > match.end() and text[end + 1 : end + 2] == ":":
            continue  # a JSON object's next key ("...credentials","responseCode":"99"): no value
        kind = value.lower()
        if (_SPACED_KEY.match(kind) is not None or kind == "key") and text[end : end + 1] in (" ", "\t"):
            # the key's own kind is the next word: "private key passphrase x", "client secret key x",
            # "secret key x"
            key = value if kind != "key" else f"{key}_key"
            start, end = _next_word(text, end + 1)
            end = _escaped_line_end(text, start, end)
            value = text[start:end]
        if value.lower() in _FORM_WORDS and text[end : end + 1] == " " and text[end + 1 : end + 2] in "\"'`":
            # the value's form named between key and quoted value: "invalid secret key format '"x"'"
            start, end = _next_word(text, end + 1)
            end = _escaped_line_end(text, start, end)
            value = text[start:end]
        if value.lower() in _LINKING_WORDS and text[end : end + 1] == " " and not key.startswith("-"):
            # said in a sentence: "detected your API key as x", "the signing key in use=x"
            start, end = _next_word(text, end + 1)
            if value.lower() == "in" and text[start:end].lower().startswith(("use=", "use:")):
                start += 4  # key in use=x, key in use: x
                if start == end and text[end : end + 1] == " ":
                    start, end = _next_word(text, end + 1)
            value = text[start:end]
            if _linked_secret(value) and _secret_key(key):
                spans.append((start, end))
            continue
        if _next_assignment(value):
            continue
        if not key.startswith("-") and _block_label(text, end):
            continue  # credentials "app.terraform.io" {: a block's label, its fields are judged each
        if value.endswith((":", "：")) and not key.startswith("-"):
            continue  # the key goes on to its colon (סיסמת המשתמש: x, the user's password): not a value
        if text[max(0, key_start - 24) : key_start].lower().rstrip().endswith(_DDL_VERBS):
            continue  # CREATE SECRET s3_prod (...): the object's name, its fields are judged each
        if text[end : end + 24].lstrip(" \t\"'").startswith(_OUTCOMES):
            continue  # secret 's3-secret-m2x7q' created: an object's name, then what was done to it
        if text[max(0, key_start - 24) : key_start].lower().rstrip(" \t\"':").endswith("authorization"):
            continue  # Authorization: Token <id>:<secret>: the scheme's credential is the header family's
        if value.startswith("(") or value.lower() in _DEVICE_KINDS:
            continue  # a sub-expression (-Password (ConvertTo-SecureString ...), judged by its own
            # family) or a device's encryption type (secret sha512 $6$...: the crypt family's)
        if _public_key(text, key_start, key_end):
            continue  # öffentlicher Schlüssel x, открытый ключ x: published
        if _bracketed_name(value):
            continue  # a property's name (Archaius's "key [db.password], value [x]")
        if value.rstrip(",)").lower() == key.lower():
            continue  # a parameter named as its type (.NET's "CancellationToken cancellationToken)"), no value
        if _compact(key).endswith(_PAIR_KEYS) and _user_then_secret(text, start, end, spans):
            continue  # credentials USER PASSWORD (CoreDNS's etcd plugin): the user stays, the password goes
        if _braced_secrets(text, end, spans) and _secret_key(key):
            continue  # add password <router glob> {x} {y} (RANCID's .cloginrc): the target stays, the braces go
        if value.startswith("{") and text[end : end + 1] == "}":
            start, value = start + 1, value[1:]  # a word in braces (Tcl's set password {x}): the braces stay
        if end > start and not _not_secret(value) and _secret_key(key):
            if key.startswith("-") and _flag_prose(text, start, value):
                continue  # the flag named in a sentence: "Retry with --password prompting enabled."
            if _spaced_value(key, value) or _statement(text, start, end):
                start += _identity(key, value)  # chisel's --auth user:password: the user is kept
                spans.append((start, end))


def _statement(text: str, start: int, end: int) -> bool:
    """Whether the value at ``start:end`` is quoted and ends a config's statement (UnrealIRCd's and BIND's
    ``password "x";``): the value whatever its shape, a word too, unless a sentence's (``"required";``)."""
    quote = text[start - 1 : start]
    return (
        quote in ("'", '"')
        and text[end : end + 2] == f"{quote};"
        and text[start:end].lower() not in PROSE_WORDS
    )


# the secrets in braces after a password's target, as Tcl writes a word with any character in it
# (RANCID's .cloginrc: add password <router glob> {x} {y}): a word each, not an object
_BRACED_SECRETS = pattern(r"[ \t]+\{([^{}\s\"']{1,256})\}(?:[ \t]+\{([^{}\s\"']{1,256})\})?(?:\s|$)")


def _braced_secrets(text: str, end: int, spans: list[Span]) -> bool:
    """Whether braced words follow the value that ends at ``end``: then they, not it, are the secrets."""
    braced = _BRACED_SECRETS.match(text, end)
    if braced is None:
        return False
    spans.extend(braced.span(group) for group in (1, 2) if braced.group(group) is not None)
    return True


_PAIR_KEYS = ("credentials", "credential", "creds")
"""Keys whose value is a user, then its secret after a space (CoreDNS's ``credentials USER PASSWORD``)."""


_PREPOSITIONS = frozenset(
    {"for", "from", "in", "of", "to", "with", "at", "on", "by", "as", "and", "or", "not"}
)
"""The small words a sentence puts after "credentials" ("credentials for [realm]"): no user's name."""


def _user_then_secret(text: str, start: int, end: int, spans: list[Span]) -> bool:
    """Whether the word at ``text[start:end]`` is a user's name (not a sentence's word: "credentials for
    [realm]") followed on its line by a secret-shaped word (not a path or a bracket), which is then hidden."""
    user = text[start:end]
    if (
        _looks_secret(user)
        or user.lower() in _PREPOSITIONS
        or not user.replace("_", "").replace("-", "").replace(".", "").isalnum()
        or text[end : end + 1] != " "
    ):
        return False
    secret_start, secret_end = _next_word(text, end + 1)
    secret = text[secret_start:secret_end]
    if (
        not _looks_secret(secret)
        or _not_secret(secret)
        or "/" in secret
        or secret.startswith(("[", "(", "<"))
        or secret.endswith(":")
    ):
        return False
    spans.append((secret_start, secret_end))
    return True


_FORM_WORDS = ("format", "value")
"""A word naming the form of a key's value, said between the key and its quoted value."""


_LINKING_WORDS = ("as", "is", "was", "in")
"""A word that links a key to its value in a sentence (``key as x``, ``key in use=x``)."""


_HEADER_WORDS = ("headers", "user-agent", "content-type", "'accept'", '"accept"')
"""Words that say a line's keys are a request's headers (``{'User-Agent': ..., 'key': ...}``)."""


def _request_header(text: str, key_start: int) -> bool:
    """Whether the key at ``key_start`` is a request's header (its line names headers before it): a
    header named ``key`` carries an API key, letters alone or not (TCMB EVDS's ``'key': 'fCYYbgNNLL'``)."""
    line_start = text.rfind("\n", 0, key_start) + 1
    before = text[line_start:key_start].lower()
    return any(word in before for word in _HEADER_WORDS)


def _snake_name(value: str) -> bool:
    """A name in lower-case words joined by ``_`` or ``-``, a version's short piece among them
    (Flipt's flag key ``momo_retry_v2``); a random key has a long piece mixing letters and digits."""
    pieces = value.replace("-", "_").split("_")
    return len(pieces) >= 2 and all(
        piece.isalnum() and piece.islower() and (piece.isalpha() or len(piece) <= 3) for piece in pieces
    )


def _block_label(text: str, end: int) -> bool:
    """Whether the word ending at ``end`` is quoted and opens a block (HCL's ``credentials "<host>" {``)."""
    closing = end if text[end : end + 1] in ('"', "'") else end - 1
    return (
        text[closing : closing + 1] in ('"', "'") and text[closing + 1 : closing + 4].lstrip(" \t")[:1] == "{"
    )


def _linked_secret(value: str) -> bool:
    """A value a sentence gives after a key and a linking word: shaped as a secret (10+ characters,
    letters and digits, no separator of a path; with ``_`` or ``-`` only in both cases, as base64url is
    and a snake_case name is not), not a word of the sentence."""
    return (
        len(value) >= 10
        and any(c.isdigit() for c in value)
        and any(c.isalpha() for c in value)
        and not any(c in "./:" for c in value)
        and (not any(c in "_-" for c in value) or (value.lower() != value and value.upper() != value))
        and _looks_secret(value)
    )


_ACCESS_KEY_IDS = ("accesskey", "accesskeyid")
"""Names of an access key's id, written without ``_`` and ``-`` (``access_key_id``, ``AccessKeyID``)."""


_SECRET_KEY_NAMES = ("secretkey", "secret_key", "secret-key", "secretaccesskey", "secret_access_key",
                     "accesskeysecret", "access_key_secret", "access-key-secret")  # fmt: skip


# a run of counters (dbt's "PASS=41 WARN=0 ERROR=1", ZAP's "WARN-NEW: 7<tab>PASS: 52"): a count beside
# another KEY=count or KEY: count is not a password
_COUNTER = r"[A-Z_-]{2,24}(?:=|: ?)\d{1,9}"
_NEXT_COUNTER = pattern(rf"^[ \t]+{_COUNTER}(?:[ \t]|$)")
_PREVIOUS_COUNTER = pattern(rf"(?:^|[ \t]){_COUNTER}[ \t]+$")


def _counter(text: str, key_start: int, key: str, end: int, value: str) -> bool:
    """A small integer under a key in capitals beside another ``KEY=integer`` or ``KEY: integer`` on its
    line: a summary's counter, not a secret (``password=4711 RETRIES=3``: a lower-case key is no counter's label)."""
    if not (value.isdigit() and len(value) <= 6 and key.isupper()):
        return False
    line_end = text.find("\n", end)
    after = text[end : line_end if line_end >= 0 else len(text)]
    before = text[text.rfind("\n", 0, key_start) + 1 : key_start]
    return _NEXT_COUNTER.match(after) is not None or _PREVIOUS_COUNTER.search(before) is not None


# a property named in brackets, then its value in brackets: Tomcat's digester, "failed to set property
# [keystorePassword] to [x]", and Java messages written the same way
_BRACKETED = pattern(rf"\[({_KEY})\][ \t]+to[ \t]+\[([^\]\r\n]{{1,256}})\]", ignore_case=True)


def _bracketed(text: str, spans: list[Span]) -> None:
    for match in _matches(_BRACKETED, text, spans):
        if _secret_key(match.group(1)) and not _not_secret(match.group(2)):
            spans.append(match.span(2))


def _object_key(key: str, value: str) -> bool:
    """An object's key, not a secret, under a name ending in ``key``: 2 to 10 capital letters
    (Confluence's ``spaceKey=FINOPS``, Jira's and SonarQube's ``projectKey``), or capitals then
    digits only (a shipment's, an order's code: Yurtiçi Kargo's ``cargoKey=ESR20261206004417``), or
    a Jira issue's key, its project's then a dash and a number (Xray's ``testPlanKey=DWH-412``): no
    credential is one short upper-case word, nor a word's prefix and a number. A credential's key
    (``api_key``, ``license-key``, ``secretKey``) names no object, whatever its value's shape."""
    if _compact(key).endswith(("hashkey", "primarykey")):
        return _attribute_name(value.strip("[](),"))  # a list's first name too: primary_key: [order_id, line]
    if _compact(key).endswith(_CREDENTIAL_KEYS):
        return False
    prefix = value.rstrip("0123456789")
    if prefix.endswith("-") and prefix != value:
        prefix = prefix[:-1]  # DWH-412: an issue's key
    return (
        key.lower().endswith("key")
        and 2 <= len(prefix) <= 10
        and len(value) <= 32
        and value.isascii()
        and prefix.isalpha()
        and prefix.isupper()
    )


_CREDENTIAL_KEYS = ("apikey", "licensekey", "licencekey", "secretkey", "privatekey", "authkey", "signingkey")
"""Names of a key that is a credential, written with or without ``_`` and ``-`` (``api_key``, ``license-key``)."""


def _attribute_name(value: str) -> bool:
    """A table's attribute named as its hash key (DynamoDB's ``HashKey=user_id``), where a payment
    gateway's ``HashKey`` is its merchant's secret (ECPay's, NewebPay's, Easypaisa's): a name has no
    digits mixed into letters of both cases, and one number at most (``GSI1PK``, not ``K7QX2M9VTR4N``)."""
    numbers = len("".join(c if c.isdigit() else " " for c in value).split())
    mixed = numbers > 0 and value.lower() != value and value.upper() != value
    return value.replace("_", "").isalnum() and not mixed and numbers <= 1


def _access_key_id(key: str, value: str, text: str) -> bool:
    """An access key beside a secret key in the same text names the key pair's id (Druid's
    ``druid.s3.accessKey`` and ``druid.s3.secretKey``, MinIO's ``AccessKeyID``): the id is readable
    when it is shaped as one (one case: ``AKIA...``, ``SCW...``, a name), not as a random mixed-case
    run, which some APIs call an access key and use as a secret (MoMo's ``accessKey``)."""
    lowered = key.lower()
    if "secret" in lowered or not _compact(key).endswith(_ACCESS_KEY_IDS):
        return False  # aws_secret_access_key, SecretAccessKey: the secret itself
    mixed = value.upper() != value and value.lower() != value
    if not lowered.endswith("id") and mixed and not _readable(value):
        return False  # named no id, and shaped as a secret
    return any(name in text.lower() for name in _SECRET_KEY_NAMES)


_GO_FIELD = pattern(r"[A-Z][A-Za-z0-9]*:")


def _go_empty_field(text: str, key_start: int, key: str, sep: str, value: str) -> bool:
    """Go's ``%+v`` of a struct with an empty field: ``{... SessionToken: UseSSL:false}``, the "value"
    is the next field's name and value."""
    if sep != ": " or _GO_FIELD.match(key + ":") is None or _GO_FIELD.match(value) is None:
        return False
    line_start = text.rfind("\n", 0, key_start) + 1
    return "{" in text[line_start:key_start]


# an error's body: an object with a field naming an error ({"error": "invalid_client", ...}, python-ldap's
# {'msgtype': 97, 'result': 49, 'desc': 'Invalid credentials', 'info': '... data 52e'})
_ERROR_OBJECT = pattern(
    r"[{,][ \t]*\\*[\"']?(?:error|errors|err|errcode|errmsg|error_code|error_description|code|message|msg|status|detail|desc)"
    r"\\*[\"']?[ \t]*:",
    ignore_case=True,
)


def _error_object(value: str) -> bool:
    """An object that holds an error's fields (``{"code": "BadRequest", "message": ...}``)."""
    return _JSON_OBJECT.match(value) is not None and _ERROR_OBJECT.search(value) is not None


_LABELLED_ARGUMENT = pattern(r"[A-Za-z_]\w{0,40}[ \t]*[:=]")


MAX_NESTED_OBJECTS = 4
"""At most this many objects nested in a secret-named key's object are opened to judge their fields."""


def _signed_time(value: str) -> bool:
    """A signature header's time, ``t=`` and a Unix time in seconds or milliseconds."""
    return value.startswith("t=") and value[2:].isdigit() and 9 <= len(value) - 2 <= 13


# the signature after a signature header's time and its comma, past its own short name (s=, v1=, sign=)
_SIGNATURE_AFTER_TIME = pattern(r"(?:[a-z][a-z0-9]{0,9}=)?([^\s,;'\"]+)")


_LOGGED_DIGEST = "{SHA256}"
"""What a client writes before the digest it logs in place of a token (keystoneauth's ``X-Auth-Token: {SHA256}<hex>``)."""


_HEX_DIGEST = pattern(r"[0-9a-f]{64}(?:[^0-9A-Za-z]|$)")


# an SMTP reply's enhanced status after its code (RFC 3463: "rejected the AUTH: 535 5.7.3 Authentication
# unsuccessful"): the code is the server's answer, no value
_ENHANCED_STATUS = pattern(r" [245]\.[0-9]{1,3}\.[0-9]{1,3}(?:[^0-9.]|$)")


_KEY_NAME_LENGTH = 12
"""Capital letters only, at most this many, under a key's name: a name (a merchant's), no random key."""


_KEY_NOUNS = frozenset({"key", "chave", "clave", "llave", "clé", "cle", "chiave", "schlüssel", "sleutel"})
"""The noun "key" alone, in the languages whose nested parameters name it (``produto[chave]``)."""


def _key_values(text: str, spans: list[Span], depth: int = 0) -> None:
    references = _REFERENCE_TAG in text
    for match in _matches(_KEY_VALUE, text, spans):
        (key_start, key_end), (sep_start, sep_end) = match.span(1), match.span(2)
        key, sep = text[key_start:key_end], text[sep_start:sep_end]
        if not _secret_key(key) or text[max(0, key_start - 3) : key_start] == "://":
            continue  # not a secret's name, or the user of a URI (https://x-access-token:...@): the URI's family
        if sep.endswith(("]=", "%5D=", "%5d=")) and key.lower() in _KEY_NOUNS:
            continue  # a nested parameter's key alone: its object's (a form's produto[chave]=x, the product's code)
        if references and _in_reference(text, key_start):
            continue
        if text[max(0, key_start - 4) : key_start] == "did:":
            continue  # did:key:<id>, a decentralized identifier's method: a public id, no key's value
        if _public_key(text, key_start, key_end) or "public" in text[key_end:sep_start].lower():
            continue  # a public key (WireGuard's "public key: x", Statsig's "client key (public, ...)=x") is published
        raw_start, raw_end = match.span(3)
        start, end = _content(text, raw_start, raw_end)
        if text[start:end] in ("Just", "Some") and text[end : end + 2] in (' "', " '"):
            # an optional value's constructor (Haskell's pgPassword = Just "x", OCaml's Some "x"): the string after it
            close = text.find(text[end + 1], end + 2, end + 258)
            start, end = (end + 2, close) if close > 0 else (start, end)
        value = text[start:end]
        if _signed_time(value) and text[end : end + 1] == ",":
            # a signature header's time, then the signature (Knock's t=1750673527000,s=x, FedaPay's): the time stays
            signature = _SIGNATURE_AFTER_TIME.match(text, end + 1)
            if signature is None:
                continue
            raw_start, raw_end = start, end = signature.span(1)  # judged as a bare value of its own
            value = text[start:end]
        if _not_secret(value):
            continue
        if text.startswith(_AUTHINFO_ITEMS, raw_start) or text.startswith(_AUTHINFO_NEXT, raw_end):
            continue  # sendmail's AuthInfo:<host> "U:user" "P:x": the map's host and its user; the password is read alone
        if len(value) == 3 and value.isdigit() and _ENHANCED_STATUS.match(text, end) is not None:
            continue  # an SMTP server's reply after the AUTH it answers
        if (
            _compact(key).endswith("key")
            and value.isalpha()
            and value.isupper()
            and len(value) <= _KEY_NAME_LENGTH
        ):
            continue  # a key given as a name in capitals (Qliro's MerchantApiKey=ACMESE, its merchant's): a key is random
        call, paren, argument = value.partition("(")
        if (
            start == raw_start
            and "." in call
            and _LABELLED_ARGUMENT.match(argument)
            and depth < MAX_NESTED_OBJECTS
        ):
            # a method's call whose first argument is labelled (Swift's credential: Credential.scramSHA256(password:
            # "x")): the pattern's value ran past the parenthesis, over that label, judged as a key of its own
            opening = start + len(call) + 1
            line_end = text.find("\n", opening)
            arguments: list[Span] = []
            _key_values(text[opening : len(text) if line_end < 0 else line_end], arguments, depth + 1)
            spans.extend((opening + begin, opening + finish) for begin, finish in arguments)
            continue
        if start == raw_start and _go_empty_field(text, key_start, key, sep, value):
            continue
        if _access_key_id(key, value, text) or _object_key(key, value):
            continue
        if sep.strip() in ("=", ":") and _counter(text, key_start, key, end, value):
            continue
        if start > raw_start and text[start - 1] in "\"'" and text[start : start + 1] in (" ", "\t"):
            continue  # 'Password: " (spawn_id', 'grep "(password) =" /x': the quote closes a string around
            # the key, it opens no value
        braced = text[raw_start:raw_end]
        if (
            depth < MAX_NESTED_OBJECTS
            and _JSON_OBJECT.match(braced) is not None
            and (_KEY_VALUE.search(braced[1:]) is not None or _error_object(braced))
        ):  # "auth": {"tenantId": "x", "passwordCredentials": {...}}: the object's fields are judged each;
            # so are an error's (トークン取得に失敗しました (HTTP 401): {"error":"invalid_client"}: a sentence's key word)
            fields: list[Span] = []
            _key_values(braced[1:], fields, depth + 1)
            spans.extend((raw_start + 1 + begin, raw_start + 1 + finish) for begin, finish in fields)
            continue
        wrapped = _WRAPPED_VALUE.match(braced) if braced.startswith("{") else None
        if wrapped is not None:
            if not _not_secret(wrapped.group(1)):
                spans.append((raw_start + wrapped.start(1), raw_start + wrapped.end(1)))
            continue  # the string inside, judged alone: a mask the config server printed stays
        kept = _identity(key, value)  # --auth=user:password (HTTPie, xh), PVEAPIToken=user@realm!tokenid=***
        if kept:
            start += kept
            value = text[start:end]
            if _not_secret(value):
                continue  # "auth: Debug: client in": a log's words, no password after the colon
        if sep.rstrip().endswith(":") and value.startswith("//"):
            continue  # a scheme (https://), not a value
        if "://" in value[:24]:
            continue  # a URL ("includes credentials: https://u:***@h/x", DOTENV_KEY=dotenv://:***@...): the URL family hides its secrets
        if start == raw_start and value in _OPTIONALS:
            _optional_value(text, end, spans)
            continue
        if text[start - 1 : end + 1] == _LOGGED_DIGEST and _HEX_DIGEST.match(text, end + 1) is not None:
            continue  # keystoneauth's X-Auth-Token: {SHA256}<hex>: the token's digest, logged in its place
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
            and _prose_after_colon(text, start, value, key)
        ):
            continue  # "token: expired", "AUTH: Received control message": a sentence, not a value
        if start > raw_start and end < len(text) and text[end] == text[start - 1]:
            end = _quote_inside(text, start, end)
        lowered = key.lower()
        if lowered.endswith("pwd") and value.startswith(("/", "~")):
            continue  # the shell's working directory (PWD=/opt/airflow), not ODBC's password
        if lowered == "session" and value.isdigit():
            continue  # a session's number (Exasol's "(Session: 1802316549870271489)"), not its token
        if _compact(key).endswith("credential") and key[:1].isupper() and _credential_scope(value):
            continue  # HMAC-SHA256 Credential=<key id>/<date>: the signing key's id and scope, not the key
        if lowered in ("cookie", "set-cookie") and "=" in value:
            continue  # a cookie header's pairs: the URL family's, which keeps the analytics cookies among them
        if lowered == "sid" and not _looks_random(value):
            continue  # an Oracle database's SID (SID=ORCL), a Twilio object's (SM<32 hex>), not a session's random id
        if lowered in ("key", "keys") and (
            _naming_words(text, key_start)  # "snapshot key: '<sha>'"
            or (not any(c.isdigit() for c in value) and not _request_header(text, key_start))
            or _snake_name(value)
            or "/" in value
            or ("." in value and all(map(_readable, value.split("."))))
        ):
            continue  # a name (<entry key="db.user">, "Key": "bronze/x.parquet"), not an API key (key="T0rCu2...-.B-O3DH")
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
        if bare:
            end = _before_next_key(text, start, end)  # a property list's next key (x:serverName=h)
        spans.append((start, end))


_OPTIONALS = ("Some(", "Just(", "Optional.of(")
"""An optional value's wrapper, as a debug print shows it: Rust's and Scala's ``Some("x")``, Haskell's
``Just "x"`` in parentheses, Java's ``Optional.of("x")``; any other call's arguments are judged each."""


def _optional_value(text: str, end: int, spans: list[Span]) -> None:
    """The quoted string an optional's wrapper holds after a secret's key (fred's ``password: Some("x")``)."""
    quote = text[end : end + 1]
    if quote in ("'", '"'):
        close = text.find(quote, end + 1, end + 1 + _QUOTE_INSIDE)
        if close > end + 1 and "\n" not in text[end:close]:
            spans.append((end + 1, close))


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


_CREDENTIAL_ELEMENTS = (*_CREDENTIAL_KEYS, "accesskey", "accountkey", "sessionkey", "clientkey")
"""Elements named for a credential itself (``<apiKey>``, ``<licenseKey>``), as :func:`_compact` writes them:
hidden whatever their value."""


def _named_by_its_use(element: str) -> bool:
    """An element named ``<use>Key`` in camel case (``applicationKey``, ``rowKey``), not a credential's
    own name (``apiKey``, ``privateKey``): its value is a key when it looks like one, not a readable name."""
    local = element.rsplit(":", 1)[-1]
    return (
        local.endswith("Key")
        and local[-4:-3].islower()
        and not _compact(local).endswith(_CREDENTIAL_ELEMENTS)
    )


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
        value = text[start:end].strip()
        if text[end : end + 2] != "</" and (
            not any(c.isalnum() for c in value) or " " in value.split("\n", 1)[0]
        ):
            continue  # cut short by the text's end after punctuation or a sentence: a usage's "[-p <secret>]",
            # "lxc remote add <name> <token> --accept-certificate' returned ...", no element
        if _named_by_its_use(match.group(1)) and _readable(value):
            continue  # <primaryKey>ORDER_ID</primaryKey>, <rowKey>user-42</rowKey>: a name, not <applicationKey>'s secret
        if value not in ("", MASK):
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
                if not _not_secret(text[start:end].strip()):
                    spans.append((start, end))


# traitlets' TraitError (Jupyter's configuration): the trait's name, then the value it refused
# ("The 'lookup_dn_search_password' trait of a LDAPAuthenticator instance expected a unicode string,
# not the int 73918264.")
_TRAIT_ERROR = pattern(
    r"The '([\w.-]{1,128})' trait of an? [\w.]{1,128} instance [^\r\n]{0,200}?, not the [\w.]{1,40} "
    rf"[bB]?({_QUOTED}|[^\s'\"]+)"
)

# CUE's vet errors: the field's path, then the value it refused ("db.auth.password: conflicting values
# 48213907 and string (mismatched types int and string):", "...password: invalid value \"x\" (out of bound")
_CUE_ERROR = pattern(rf"([\w.\[\]-]{{1,128}}): (?:conflicting values|invalid value) ({_QUOTED}|[^\s'\"]+)")


def _refused_inputs(pattern_: Pattern, text: str, spans: list[Span]) -> None:
    """The input a validator refused (pydantic's ``input_value=``, traitlets' ``not the int x``, CUE's
    ``invalid value x``) when its field names a secret."""
    for match in _matches(pattern_, text, spans):
        field = match.group(1).rstrip("]").rsplit(".", 1)[-1].rsplit("[", 1)[-1]
        if _secret_column(field):
            start, end = _quoted_content(text, *match.span(2))
            if end == match.end(2) and text[end - 1 : end] == "." and end - 1 > start:
                end -= 1  # the sentence's full stop (not the int 73918264.)
            if not _not_secret(text[start:end]):
                spans.append((start, end))


# a form body (k=v&k=v...), as an HTTP client logs what it posted
_FORM_BODY = pattern(r"[\w.-]+=[^&\s]*(?:&[\w.-]+=[^&\s]*)+")

# a DSN of short keys separated by commas or semicolons that names its user: its p= is the password
# (Percona Toolkit's h=host,P=3306,u=user,p=x,D=db; the query form ?u=x&p=y is the URL family's)
_SHORT_KEY_DSN = pattern(r"(?:^|[\s'\"(])((?:[A-Za-z]{1,2}=[^\s,;'\"]*[,;]){1,12}p=)([^\s,;'\"]+)")


def _short_key_dsns(text: str, spans: list[Span]) -> None:
    for match in _matches(_SHORT_KEY_DSN, text, spans):
        keys = [pair.partition("=")[0] for pair in match.group(1).replace(";", ",").split(",")]
        if "u" in keys and not _not_secret(match.group(2)):
            spans.append(match.span(2))


MIN_SIBLING_CREDENTIAL = 20
"""A value this long, of letters of both cases and digits, beside a secret's key is a credential too."""


def _credential_shaped(value: str) -> bool:
    """20-128 letters and digits with a digit, a capital and a small letter: a generated key."""
    return (
        MIN_SIBLING_CREDENTIAL <= len(value) <= 128
        and value.isalnum()
        and value.isascii()
        and any(c.isdigit() for c in value)
        and any(c.isupper() for c in value)
        and any(c.islower() for c in value)
    )


def _form_siblings(text: str, spans: list[Span]) -> None:
    """Of a form body with a secret's key (Pushover's ``token=x&user=<key>``), every credential-shaped
    value whatever its key but an id's (OAuth's ``client_id``): a sibling of a token is the other half
    of the credential."""
    for match in _matches(_FORM_BODY, text, spans):
        offset = match.start()
        parameters = []
        for part in match.group().split("&"):
            key, _, value = part.rpartition("=")
            parameters.append((key.rpartition("=")[2], offset + len(key) + 1, value))
            offset += len(part) + 1
        if any(_secret_name(key) for key, _, _ in parameters):
            for key, start, value in parameters:
                if _credential_shaped(value) and not _not_secret(value) and not _id_key(key):
                    spans.append((start, start + len(value)))


# a value under a key naming an object's id (merchant_id='2547916', orderId=GLL7TNH9..., an escaped
# payload's \"purchaseUuid\":\"Yx2b...\"), group 2
_ID_ASSIGNMENT = pattern(
    r"(?:^|[^\w.-])([A-Za-z][\w.-]{0,40}?(?:_id|-id|Id|ID|_uuid|Uuid|UUID|_guid|Guid|GUID))\\*[\"']?[ \t]*[:=][ \t]*\\*[\"']?([\w.-]{4,64})"
)


def shown_ids(text: str, spans: list[Span]) -> frozenset[str]:
    """The values ``text`` shows under a key naming an object's id, where no span hides them: each is
    that id wherever else the text gives it (PayU's "notification for <orderId>", Remita's
    ``remitaConsumerKey=<merchant_id>``). A value hidden where its key stands (a private key's id,
    hidden for its shape) is no shown id."""
    shown = set()
    for match in _matches(_ID_ASSIGNMENT, text, [], limit=MAX_IDS):
        start, end = match.span(2)
        if _id_key(match.group(1)) and not any(s < end and start < e for s, e in spans):
            shown.add(match.group(2))
    return frozenset(shown)


MAX_IDS = 32
"""Id assignments read per text, at most."""


def echoed_id(text: str, start: int, end: int, shown: frozenset[str]) -> bool:
    """Whether ``text[start:end]`` is a shown id (:func:`shown_ids`) that no key naming a secret
    outright holds there: a password, secret or token equal to an id stays hidden."""
    if text[start:end] not in shown:
        return False
    key = _key_before(text, start)
    return key is None or not any(word in key.lower() for word in _OUTRIGHT_WORDS)


PATTERNS: tuple[Pattern, ...] = (
    _JSON_OBJECT, _WRAPPED_VALUE, _OAUTH_CODE, _TYPOGRAPHIC,
    _FORM_BODY, _SHORT_KEY_DSN,
    _KEY_VALUE, _KEY_SPACE, _KEYWORD_STRING, _AUTHINFO_PASSWORD, _ENHANCED_STATUS, _MODIFIED_KEY, _XML_ELEMENT, *_NAMED, _CREDENTIAL_PAIR, _SEED_PHRASE, _CALL_PAIR, _SETTER_CALL, _LOGIN_TUPLE,
    _ERLANG_TUPLE, _ACCESS_TOKEN_ENV, _LOGIN_VECTOR, _BRACKETED,
    _SETTING_ECHO, _PYDANTIC_INPUT, _TRAIT_ERROR, _CUE_ERROR, _GO_FIELD, _USER_PAIR_KEY, _ERROR_OBJECT,
    _ID_ASSIGNMENT, _NEXT_COUNTER, _PREVIOUS_COUNTER, _LABELLED_ARGUMENT, _FLAT_OBJECT, _FIELD_NAME, _PROOF_FIELD,
    _REVEAL, _SENT_CODE, _CODE_PHRASE, _HEX_DIGEST, _SIGNATURE_AFTER_TIME, _COMPARED_SIGNATURE, _DIGEST_INPUT, _BRACED_SECRETS,
)  # fmt: skip
"""This module's patterns (the linear-time test runs each on adversarial input)."""


def find(text: str, lowered: str, gates: frozenset[str], spans: list[Span]) -> None:
    """The secrets of assignments; ``gates`` holds the key words of other languages found in ``lowered``."""
    foreign = not gates.isdisjoint(_FOREIGN_WORDS)
    setters = False
    if (  # _KEY_WORDS, spelled out: the hot path of every decision, no call per word
        "pass" in lowered
        or "-pas" in lowered
        or "pasw" in lowered
        or "pw" in lowered
        or "psk" in lowered
        or "psw" in lowered
        or "hmac" in lowered
        or "tk" in lowered
        or "token" in lowered
        or "key" in lowered
        or "secret" in lowered
        or "credential" in lowered
        or "sig" in lowered
        or "auth" in lowered
        or "session" in lowered
        or "sid" in lowered
        or "cookie" in lowered
        or "salt" in lowered
        or "pin" in lowered
        or "iv" in lowered
        or "otp" in lowered
        or "code" in lowered
        or "answer" in lowered
        or "userinfo" in lowered
        or "community" in lowered
        or "hash" in lowered
        or foreign
    ):
        _key_values(text, spans)
        if foreign:
            _modified_keys(text, spans)
        if any(map(text.__contains__, _TYPOGRAPHIC_QUOTES)):
            _typographic_values(text, spans)
        if " " in text or "\t" in text or "," in text:
            _key_space_values(text, spans)
            if " :" in text or "\t:" in text:
                _keyword_strings(text, spans)
        if "<" in text:
            _xml(text, spans)
        if "] to [" in text:
            _bracketed(text, spans)
        if "(" in text and ("'," in text or '",' in text or "' ," in text or '" ,' in text):
            _call_pairs(text, spans)
        setters = '("' in text or "('" in text
        _named(text, spans)
    if "user" in lowered or "login" in lowered:
        _user_pairs(text, spans)
    clients = any(f"{suffix}(" in text for suffix in _CLIENT_SUFFIXES)
    if setters or clients:
        _one_string_calls(text, spans, setters, clients)
    if "&" in text and "=" in text:
        _form_siblings(text, spans)
    if "p=" in text and "u=" in text:
        _short_key_dsns(text, spans)
    if "auth" in lowered or "credential" in lowered:
        _spans_of(_CREDENTIAL_PAIR, text, spans, groups=2)
    if "{" in text and (
        "hash" in lowered
        or "sha" in lowered
        or "sum" in lowered
        or "digest" in lowered
        or "sign" in lowered
        or "mac" in lowered
    ):
        _proofs_beside_credentials(text, spans)
    if ("'" in text or '"' in text or "`" in text) and any(map(lowered.__contains__, _SETTING_WORDS)):
        _setting_echoes(text, spans)
    if "seed" in lowered or "mnemonic" in lowered:
        _spans_of(_SEED_PHRASE, text, spans)
    if "{" in text and "," in text:
        _erlang_tuples(text, spans)
    if "PAT" in text or "_pat" in text:
        for match in _matches(_ACCESS_TOKEN_ENV, text, spans):
            if not _not_secret(match.group(1)):
                spans.append(match.span(1))
    if "(" in text and ("=(" in text or "= (" in text or ":(" in text or ": (" in text):
        _login_tuples(text, spans)
    if ' ["' in text:
        _login_tuples(text, spans, _LOGIN_VECTOR)
    if _REFERENCE_TAG in text:
        _spans_of(_REVEAL, text, spans)
    if not gates.isdisjoint(secret_words.CODE_WORDS):
        _spans_of(_SENT_CODE, text, spans)
    if '"P:' in text or '"P=' in text:
        _spans_of(_AUTHINFO_PASSWORD, text, spans)
    if "code" in lowered and "-" in text:
        _code_phrases(text, lowered, spans)
    if any(map(lowered.__contains__, _SIGNATURE_WORDS)):
        _spans_of(_COMPARED_SIGNATURE, text, spans)
    if "input" in lowered or "source" in lowered or "base" in lowered or " to " in lowered:
        _spans_of(_DIGEST_INPUT, text, spans)
    if "input_value=" in text:
        _refused_inputs(_PYDANTIC_INPUT, text, spans)
    if "' trait of " in text:
        _refused_inputs(_TRAIT_ERROR, text, spans)
    if ": conflicting values " in text or ": invalid value " in text:
        _refused_inputs(_CUE_ERROR, text, spans)
    if "grant_type" in lowered and "code" in lowered:
        _oauth_codes(text, spans)
