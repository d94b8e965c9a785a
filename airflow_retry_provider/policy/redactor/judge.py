"""Redaction's judgement of a value: what its key means, what the value means, what it looks like,
and where it stands (docs/REDACTION.md's table, the rows "key's meaning" to "position").

The structure readers (``urls``, ``assignments``, ``commands``, ``tables``, ``shapes``) find a
value; the functions here say whether it is a secret: a key that names a secret (``_secret_key``),
a placeholder or a word of the sentence (``_not_secret``, ``_prose_after_colon``), a random run
(``_looks_random``), a run named as a hash or an id by the words before it (``_named_hash``).
"""

from __future__ import annotations

import math
import string
from collections import Counter
from itertools import groupby

from airflow_retry_provider.policy import secret_words
from airflow_retry_provider.policy.engine import LiteralSet, Pattern, pattern
from airflow_retry_provider.policy.redactor.spans import MASK

# A word that names a secret (detect-secrets' KeywordDetector DENYLIST, plus the key words of
# HTTP, cloud SDKs and connection strings, plus other languages' words: policy/secret_words.py);
# a key that *ends* in key/keys/auth is one too.
_FOREIGN_WORDS = secret_words.words()


# a network device's configuration line (Cisco IOS and NX-OS, Arista EOS, Juniper set lines): a
# secret's word after up to six words at the line's start, an optional encryption type or hash
# name, then the value (username x privilege 15 secret 9 $9$..., password 7 0822..., enable
# secret 5 $1$..., snmp-server community X RO, key-string X, tacacs-server key 7 X, set system
# login user x authentication encrypted-password "$6$..."); in lower case, as devices print them
# an encryption type's number (0 plain, 5 MD5, 7 Cisco's reversible, 8 PBKDF2, 9 scrypt) or name
_DEVICE_KINDS = ("sha512", "sha256", "md5", "plaintext", "encrypted", "ascii", "ascii-text", "hex", "simple", "unencrypted", "cipher", "irreversible-cipher", "ENC", "enc")  # fmt: skip


# ---------------------------------------------------------------------------------------------
_NOT_SECRETS = frozenset(
    {"", MASK, "null", "none", "nil", "true", "false", "on", "off", "undefined", "bearer", "basic", "token", "digest",
     "negotiate", "ntlm", "<redacted>", "[redacted]", "redacted",
     "%s", "%r", "%d", "?", "{}", "<token>", "<password>", "<secret>",
     "yes", "no",  # MySQL's "(using password: YES)"
     "get", "post", "put", "patch", "delete",  # a request's method ("auth: POST https://..."), no value
     # a value another tool already masked: Ansible's no_log, gcloud's --log-http, a hidden field
     "value_specified_in_no_log_parameter", "[hidden]", "<hidden>", "(hidden)", "hidden", "<masked>",
     "[masked]", "masked", "[filtered]", "filtered", "[secure]", "<omitted>", "[omitted]", "---", "--",
     "not-set", "not_set", "notset", "unset", "(unset)", "<unset>", "(not set)", "<not set>",  # a template's default
     *(ANSWER_WORDS := (  # yes/no/hidden/none in the languages of policy/secret_words.py
         "si", "sí", "oui", "non", "ja", "nein", "não", "nao", "sim", "nenhuma", "nenhum", "ninguna",
         "ninguno", "aucun", "aucune", "masqué", "masquée", "caché", "cachée", "oculta", "oculto",
         "versteckt", "verborgen", "nee", "evet", "hayır", "tak", "nie", "да", "нет", "скрыт",
         "скрыто", "예", "아니오", "아니요", "숨김", "없음", "はい", "いいえ", "なし", "非表示", "是", "否",
         "无", "隐藏", "نعم", "لا", "مخفية", "مخفي", "هاں", "हाँ", "नहीं", "छिपा"))}
)  # fmt: skip

_MASK_CHARACTERS = "*•●xX#"
"""The characters a tool repeats in place of a secret it masks (``*********``, ``••••``, ``xxxxxx``)."""


def _tool_mask(value: str) -> bool:
    """A mask the tool printed, as long as it likes (Grafana's ``GF_DATABASE_PASSWORD=*********``), perhaps beside
    the few characters it shows (Hoplite's ``8Rv*****``, ``****4242``): a run of one mask character, three or more
    and at least half the value."""
    if max(map(value.count, _MASK_CHARACTERS)) * 2 < len(value):
        return (
            False  # too few mask characters for a run of half the value (counted in C: a value may be long)
        )
    run = max((len(list(group)) for c, group in groupby(value) if c in _MASK_CHARACTERS), default=0)
    return run >= 3 and run * 2 >= len(value)


# a mask a tool printed in place of a secret, with spaces or dashes around it: "--- Token Redacted ---"
_MASK_PHRASE = pattern(
    r"^[-=*#\[(<\s]*(?:\w+\s+)?(?:redacted|hidden|masked|filtered|omitted|removed)[-=*#\])>\s]*$"
)


# an error's code in brackets after the word that names what failed (H2's "Wrong user name or
# password [28000-224]": SQLSTATE and version), not a value given for it
_BRACKETED_CODE = pattern(r"^\[[0-9][0-9.:-]*(?:\][.,;:]?)?$")  # a bare value ends before "]"


_AUTHINFO_ITEMS = ('"U:', '"I:', '"R:')
"""sendmail's authinfo items that name a user, an authorization id or a realm (``"U:postmaster@mg.example.com"``),
each quoted after its letter: names, whatever follows (an address reads as ``user:x@host``)."""


# OpenSSL's error string where a signature or a key was to be (Borica's "P_SIGN: error:1C800064:Provider
# routines::bad decrypt"): error:, the code's 8 hex digits, a colon
_OPENSSL_ERROR = pattern(r"^error:[0-9A-Fa-f]{8}:")


# a placeholder in braces, a variable's or a setting's (${pg_password}, Spring's ${db.password}, WeeChat's
# ${sec.data.x}), its closing brace perhaps cut by a bare value's end: resolved by the tool, not a value
_PLACEHOLDER = pattern(r"^\$\{[A-Za-z_][\w.-]*\}?$")


def _error_code(value: str) -> bool:
    """A word after a secret's name that is an error's code in brackets, not the secret."""
    return _BRACKETED_CODE.match(value) is not None


LONG_NUMBER = 20
"""Digits only, this many or more: a number (a fiscal document's key, a parcel's), not a PIN or a password."""


def _not_secret(value: str) -> bool:
    """A placeholder, not a value: ``***``, ``null``, ``%s``, ``<token>``, a shell variable in capitals
    (``$TOKEN``; ``$ecret1`` is a value), any name in braces (``${pg_password}``, ``${db.password}``)."""
    if value.lower() in _NOT_SECRETS or _MASK_PHRASE.match(value.lower()) is not None:
        return True
    if _tool_mask(value) or _OPENSSL_ERROR.match(value) is not None:
        return True
    if value.startswith("%(") and value[2:].removesuffix(")s").replace("_", "").isalnum():
        return True  # a named bind parameter (psycopg's password_hash = %(password_hash)s), not its value
    if value[:1] == "$" and value[1:].isdigit():
        return True  # a numbered bind parameter (api_token = $1) or a shell's positional one
    if value.startswith("arn:") and value.count(":") >= 5:
        return True  # a resource's name (SecretId='arn:aws:secretsmanager:...'), not the secret it names
    if _REFERENCE.match(value) is not None:
        return True  # where the secret is kept (cosign's --key env://COSIGN_PRIVATE_KEY), not the secret
    if _file_path(value):  # the file that holds it (k3sup's --ssh-key /opt/airflow/keys/edge_ed25519)
        return True
    if value.startswith(_SSH_PUBLIC_KEY_TYPES):
        return True  # a public key (--authorized_keys "ssh-ed25519 AAAA..."): published by design
    if len(value) >= LONG_NUMBER and value.isdigit():
        return True  # a document's or a parcel's number (Brazil's 44-digit NF-e access key), no credential
    if len(value) == 42 and value[:2] in ("0x", "0X") and not value[2:].translate(_HEX):
        return (
            True  # an Ethereum-style account's address (0x and 40 hex digits), public; a private key has 64
        )
    if _PLACEHOLDER.match(value) is not None:
        return True  # ${pg_password}, ${db.password}, or ${NAME cut before its brace by a bare value's end
    name = value[1:] if value[:1] == "$" else ""
    return (
        name.isupper() and name.replace("_", "A").isalnum() and not name[0].isdigit()
    )  # $TOKEN, not $ecret1


_PATH_STARTS = ("/", "~/", "./", "../")
_PATH_SEPARATORS = str.maketrans("/_.~-", "     ")


_KEY_FILES = (".pem", ".key", ".crt", ".cer", ".der", ".p12", ".pfx", ".jks", ".keystore", ".ppk", ".asc", ".gpg")  # fmt: skip
"""The extensions of files that hold a key or a certificate."""


def _file_path(value: str) -> bool:
    """A file's path of two or more names, each made of words (``/opt/airflow/certs/Inter_API_Chave.key``,
    ``~/.ssh/id_ed25519``), or a key file's name (Dendrite's ``private_key: matrix_key.pem``). A base64
    run that starts with ``/`` mixes its cases at random (``/ylhkpcpE/TIZkfoaNo...``): it is no path."""
    rooted = value.startswith(_PATH_STARTS) and value.count("/") >= 2 and not value.endswith("/")
    key_file = "/" not in value and value.lower().endswith(_KEY_FILES)
    if not (rooted or key_file):
        return False
    pieces = value.translate(_PATH_SEPARATORS).split()
    return all(_word_piece(piece.rstrip("0123456789")) for piece in pieces)


def _word_piece(piece: str) -> bool:
    """Letters in one case or capitalised (``opt``, ``API``, ``Chave``), or nothing but digits."""
    return not piece or (piece.isalpha() and (piece.islower() or piece.isupper() or piece.istitle()))


# the next key of a connection string or a property list (ODBC's ;Database=, asadmin's
# user=u:password=x:serverName=h), a value after its = (base64's padding, :SGVsbG8=}, is none)
_NEXT_KEY = pattern(r"[;:][ \t]*[A-Za-z][\w ]{0,40}=[^\s=}'\"]")


def _before_next_key(text: str, start: int, end: int) -> int:
    """Where the value ``text[start:end]`` ends: before the next key of its list (``x:serverName=h``), the
    separator just before it included (``user=u:password=x``: the value after ``u`` is the next key)."""
    opening = max(0, start - 1)
    following = _NEXT_KEY.search(text[opening:end])
    return end if following is None else max(start, opening + following.start())


# a reference to where a secret is kept, as signing and CI tools take one in place of the secret: an
# environment variable (cosign's env://NAME, Dagger's env:NAME), a file, a key manager's URI (cosign's
# awskms://, gcpkms://, azurekms://, hashivault://, k8s://), a password manager's (1Password's op://,
# Dashlane's dl://, Keeper's keeper://), a keyring's entry
_REFERENCE = pattern(
    r"^(?:env:(?://)?[A-Za-z_][A-Za-z0-9_]*"
    r"|(?:file|awskms|gcpkms|azurekms|hashivault|k8s|op|dl|keeper|keyring|pkcs11|vault):(?://)?[\w./@:-]+"
    # an interpolation that reads a file or the environment when the config loads (Jenkins
    # configuration-as-code's ${readFile:/run/secrets/x}, Kafka's config providers' ${file:/p:key}, ${env:NAME});
    # a bare value ends before its "}"
    r"|\$\{(?:readFile|readFileBase64|file|env):[\w./@:-]+\}?"
    # a keychain's item or a variable, as Apple's notarisation tools take a password (altool's -p
    # @keychain:AC_PASSWORD, @env:AC_PASSWORD)
    r"|@(?:keychain|env):[\w.-]+"
    # a program's read of its environment, as its source is shown (Node-RED's settings.js credentialSecret:
    # process.env.NODE_RED_CREDENTIAL_SECRET, Vite's import.meta.env.X, os.environ["X"], $_ENV['X']); a
    # call's (os.getenv("X")) ends the value before its "(" and reads as a name
    r"|(?:process|import\.meta|Deno)\.env\.[A-Za-z_]\w*"
    r"|(?:os\.environ|process\.env|ENV|\$_ENV|\$_SERVER)\[(?:[\"'][A-Za-z_]\w*(?:[\"']\]?)?)?)$"
)


# a key whose value is a name, place, kind or time, not the secret itself: secret_name=, token_url=
_NAME_SUFFIXES = (
    "file", "path", "dir", "url", "uri", "name", "type", "arn", "expiry", "expires", "expires_at",
    "expiration", "ttl", "timeout", "length", "count", "rate", "ratio", "format", "mode", "version", "policy", "scope",
    "scheme",  # how a password is hashed (mailcow's MAILCOW_PASS_SCHEME=BLF-CRYPT)
    "validity", "lifetime",  # how long a token lives (SuperTokens' access_token_validity: 3600)
    "method", "endpoint", "location", "_id", "-id", ".id", "keyid", "provider", "manager", "store",
    # a hash of a secret, not the secret (kubeadm's --discovery-token-ca-cert-hash sha256:...)
    "hash", "digest", "fingerprint", "checksum",
    "stdin",  # docker login --password-stdin: the secret comes from standard input, the next word is not it
    "timestamp",  # a signature's time (Whoop's X-WHOOP-Signature-Timestamp: 1752560041928)
    "label",  # a token's or a key's label, its name (pkcs11-tool's --token-label etl-signing)
)  # fmt: skip


# keys ending in a naming suffix (an id, a hash) whose value is the credential itself: a session's
# id, AppRole's secret_id, a password's hash (PRTG's passhash= logs in as the password does) or digest
# (WS-Security's PasswordDigest, which logs in again within its time), an application's hash (Telegram's api_hash)
_SECRET_IDS = ("sessionid", "secretid", "appid", "passhash", "pwhash", "passwordhash", "passworddigest", "apihash", "apphash")  # fmt: skip
"""Written without ``_`` and ``-`` (:func:`_compact`). An app's id is the credential of Open Exchange
Rates' and OpenWeatherMap's query strings."""


def _identity(key: str, value: str) -> int:
    """How much of a secret-named key's ``value`` names whose secret it is, kept: the user of a
    user-and-password key's ``user:password`` (``--auth=etl:x``, ZooKeeper's ``digest:user:x``),
    Proxmox's token identity, a token's scope (:func:`_scoped_token`), a key's UUID id (:func:`_uuid_key_id`),
    or the site a key is for (:func:`_site_key`)."""
    if _user_and_password_key(key) and ":" in value and "://" not in value:
        return _digest_user(value) or value.index(":") + 1
    return _token_identity(value) or _scoped_token(value) or _uuid_key_id(value) or _site_key(value)


# a signing key's id and its scope, as an HMAC scheme's Credential= gives them (AWS's SigV4 and its kin:
# Credential=<key id>/<yyyymmdd>/<region>/<service>/aws4_request), and a signed URL's X-Amz-Credential=,
# X-Goog-Credential=
_CREDENTIAL_SCOPE = pattern(  # an AKIA id hidden: ***/<date>; URL-encoded in a query (<email>%2F<date>)
    r"^(?:[A-Za-z0-9_.@%-]{1,128}|\*\*\*)(?:/|%2F)[0-9]{8}(?:/|%2F|,|&|$)"
)


def _credential_scope(value: str) -> bool:
    """Whether an HMAC scheme's ``Credential=`` value is a key's id and its scope (``lk_prod_3114/20250625``):
    no secret, the proof being ``Signature=``'s; an AWS key's id is hidden by its vendor's shape wherever it stands."""
    return _CREDENTIAL_SCOPE.match(value) is not None


def _site_key(value: str) -> int:
    """How much of a ``<host>:<key>`` key names its site, to be kept: the host (Flywheel's API key
    ``neurolab.flywheel.io:<key>``); a port after a host is no key."""
    host, colon, secret = value.partition(":")
    return len(host) + 1 if colon and _domain_name(host) and secret and not secret.isdigit() else 0


def _digest_user(value: str) -> int:
    """How much of ZooKeeper's ``digest:user:password`` names its scheme and user, to be kept; 0 for any other value."""
    if value[:7].lower() == "digest:" and value.count(":") >= 2:
        return value.index(":", 7) + 1
    return 0


def _user_and_password_key(key: str) -> bool:
    """A key whose value is ``user:password`` (``--auth=etl:x``, an OAuth client's ``credential:
    'client_id:client_secret'``, any ``*_auth`` or ``*-auth``: ``--proxy-auth``, Galera's
    ``wsrep_sst_auth=sst_user:x``): only the password is hidden."""
    lowered = key.lstrip("-").lower()
    return lowered in ("userinfo", "auth", "authorization", "credential", "credentials") or lowered.endswith(
        ("_auth", "-auth", ".auth")
    )


def _token_identity(value: str) -> int:
    """How much of ``value`` names whose token it is, to be kept: Proxmox's API token
    ``user@realm!tokenid=<uuid>`` keeps ``user@realm!tokenid=``; any other value keeps nothing."""
    identity, equals, secret = value.partition("=")
    user, at, realm_token = identity.partition("@")
    realm, bang, token_id = realm_token.partition("!")
    uuid = _uuid(secret) or secret == MASK  # (hidden already: redacting twice changes nothing)
    if equals and at and bang and user and realm and token_id and uuid:
        return len(identity) + 1
    return 0


def _authorization_id(value: str) -> int:
    """How much of an Authorization header's ``id:secret`` credential names it, to be kept: the id (Uploadcare's
    ``Uploadcare.Simple <public key>:<secret key>``), as curl's ``-u id:secret`` keeps its user (a
    vendor's key id is hidden by its shape wherever it stands: ``AWS AKIA...:<signature>``); a signed
    request's time between them stays too (Lalamove's ``hmac <key>:<milliseconds>:<signature>``); and a
    token that begins with its user's number and a dot (Etsy's ``Bearer <user id>.<token>``) keeps the number."""
    number, dot, token = value.partition(".")
    if (
        dot
        and number.isdigit()
        and len(number) >= 5
        and (len(token) >= 20 or token == MASK)
        and "." not in token
    ):
        return len(number) + 1
    named, colon, secret = value.rpartition(":")
    identity, _, time = named.partition(":")
    if colon and identity and secret and (not time or time.isdigit()) and "/" not in value:
        return len(named) + 1
    return 0


def _uuid_key_id(value: str) -> int:
    """How much of a ``<uuid>:<secret>`` key names it, to be kept: the key's id (Prisma Cloud's
    ``<access key id>::<secret key>``, a role's id before its secret), as curl's ``-u`` keeps its user."""
    identity, colon, rest = value.partition(":")
    secret = rest.lstrip(":")
    if colon and _uuid(identity) and secret and ":" not in secret:
        return len(value) - len(secret)
    return 0


def _uuid(text: str) -> bool:
    """A UUID: 8-4-4-4-12 hexadecimal digits."""
    pieces = text.split("-")
    return [len(piece) for piece in pieces] == [8, 4, 4, 4, 12] and not "".join(pieces).translate(_HEX)


def _scoped_token(value: str) -> int:
    """How much of a token names its scope before its secret, to be kept: names of words before
    its last colon, a random run after it (Launchable's ``v1:<organisation>/<workspace>:<key>``)."""
    scope, colon, secret = value.rpartition(":")
    names = scope.replace(":", "/").split("/")
    random = _looks_random(secret) or secret == MASK  # (hidden already: redacting twice changes nothing)
    if colon and all(name and _readable(name) for name in names) and random:
        return len(scope) + 1
    return 0


def _domain_name(word: str, labels: int = 3) -> bool:
    """A host's name with its domain: ``labels`` or more labels (:func:`_domain_label`), the last of
    letters (``db-1.prod.acme.io``)."""
    parts = word.split(".")
    return len(parts) >= labels and parts[-1].isalpha() and all(map(_domain_label, parts))


def _domain_label(label: str) -> bool:
    """A label of a host's name: letters, digits and ``-``, or a service record's ``_`` (Upsun's
    ``<id>.postgresql.service._.eu-5.platformsh.site``)."""
    return label.replace("-", "").replace("_", "").isalnum() or (label != "" and set(label) == {"_"})


# the key just before a value: taskId=, "order_id": , \"purchaseUuid\":\" in an escaped payload (group 1)
_KEY_BEFORE = pattern(r"([A-Za-z][\w.-]{0,40})\\*[\"']?[ \t]*[:=][ \t]*\\*[\"']?$")


def _key_before(text: str, start: int) -> str | None:
    """The key written just before the value at ``text[start]`` (``taskId=``, ``"order_id": "``), or None."""
    match = _KEY_BEFORE.search(text[max(0, start - 48) : start])
    return None if match is None else match.group(1)


_BARE_IDS = frozenset({"id", "ids", "uuid", "guid", "adid", "gaid", "oaid", "idfa", "idfv"})
"""Ids spelled as one word: a mobile device's advertising ids (Adjust's ``adid``, Google's ``gaid``,
Apple's ``idfa``), which a measurement callback carries beside its secret."""


def _id_key(key: str) -> bool:
    """A key named as an object's id (``id``, ``zone_id``, ``OSSAccessKeyId``, ``client_id``): its value is what
    on-call looks up, however random, unless the id is a credential (``session_id``, ``app_id``)."""
    named_id = key.lower() in _BARE_IDS or key.endswith(
        ("_id", "-id", ".id", "Id", "ID", "_ids", "Ids", "_uuid", "Uuid", "UUID", "_guid", "Guid", "GUID")
    )  # a UUID's key names an id too (Zettle's purchaseUuid)
    return named_id and not _compact(key).endswith(_SECRET_IDS)


# keys that end in "key" and name a row, an object or a parameter: a name, not a secret
_NAMING_KEYS = (
    "parameterkey", "objectkey", "s3key", "partitionkey", "sortkey", "rangekey", "tagkey",
    "foreignkey", "routingkey", "cachekey", "dedupkey", "idempotencykey", "groupkey", "monkey", "turkey",
    "hockey", "whiskey", "projectkey", "issuekey", "bucketkey", "publickey", "pubkey", "publickeys", "pubkeys",
    "publishablekey",  # a key a page's script publishes (Stripe's STRIPE_PUBLISHABLE_KEY, Clerk's)
    # an event's or an alert's key for deduplication (incident.io's deduplication_key, ilert's alertKey,
    # PagerDuty's v1 incident_key): it names the alert so that a repeat joins it
    "deduplicationkey", "alertkey", "incidentkey", "correlationkey", "messagekey", "lookupkey",
    "snapshotkey",  # a visual test's snapshot, named by its commit (reg-suit's "snapshot key: '<sha>'")
    "websocketkey",  # a WebSocket handshake's nonce (Sec-WebSocket-Key), random for each connection, no credential
)  # fmt: skip
"""Keys that name an object, not a secret, written without ``_`` and ``-`` (``partition_key``,
``project-key`` and ``partitionKey`` alike)."""


_REQUEST_TOKENS = (
    "requesttoken",
    "idempotencytoken",
    "nexttoken",
    "pagetoken",
    "continuationtoken",
    "transactiontoken",
)
"""Tokens that name a request or a page, not a credential (CloudFormation's ``RequestToken`` and
``ClientRequestToken``, an idempotency token, a list's ``NextToken``), written as :func:`_compact` does."""


# a naming key that is a secret's in one tool: AMQP's routing key names a route (orders.created, kept by
# its key), PagerDuty's routing_key is the integration's secret (32 hex, hidden for its shape)
_ROUTING_KEYS = ("routingkey",)


# flags that name a key by its id (GnuPG's and duplicity's --encrypt-key 9F3C2A1B, aptly's -gpg-key), not a secret
_KEY_ID_FLAGS = frozenset({"encrypt-key", "sign-key", "hidden-encrypt-key", "default-key", "trusted-key", "local-user", "gpg-key"})  # fmt: skip


# Python's "SomeTokenError: message": an exception's name, not a key
_EXCEPTION_SUFFIXES = ("error", "exception", "warning", "fault", "failure")


# Russian and Ukrainian words built on ключ (key) that name no key: to include, exclude, connect,
# switch (Исключение: an exception; підключення: a connection; включить, отключено)
_KEY_ROOT_WORDS = (
    "включ",
    "выключ",
    "отключ",
    "исключ",
    "подключ",
    "переключ",
    "заключ",
    "виключ",
    "підключ",
    "перемикач",
)


# an exception's qualified name, whatever its own (oss2.exceptions.SignatureDoesNotMatch: {...})
_EXCEPTION_MODULES = ("exceptions.", "errors.", "exc.")


# a flag whose name is a verb and what it acts on: its value names the object (mkstore's
# -createCredential <alias> ..., --delete-token <name>), the secret, if any, comes later
_ACTION_FLAG_VERBS = ("create", "delete", "modify", "list", "remove", "describe", "show", "rename")


# key<space>value is a secret only after an identifier whose last word names one, joined by _ . -
# or by nothing (a CamelCase directive, lowered: Apache's AuthLDAPBindPassword, BindPassword)
_SPACED_KEY = pattern(
    r"(?:(?:[a-z0-9_.-]*[_.-])?pass"  # pass, ftp_pass as a word of their own (not bypass, D0ckerPass)
    # a dotted setting's words too (Spark's spark.hadoop.fs.s3a.access.key <key>)
    r"|[a-z0-9_.-]*(?:password|passwd|passphrase|pwd|secret|token|api[_.-]?key|access[_.-]?key"
    r"|secret[_.-]?key|private[_.-]?key|account[_.-]?key|credentials?|client[_.-]?secret"
    r"|requirepass|masterauth"  # Redis's config directives, echoed as they are written: requirepass "x"
    r"|bindpw|rootpw|[_.-]pw|authtok|psk"  # nslcd's, slapd's; ldap_pw; SSSD's ldap_default_authtok; a Wi-Fi psk
    r"|(?:shared|signing|hmac|webhook|master|encryption)[_-]key"  # a key named by its use: shared_key x
    + "".join(f"|{word}" for word in secret_words.words())  # any language's word: 密钥 x, कुंजी x
    + r"))(?:は|が|を|는|은|를|을|가|이|为|是|為)?$"  # a particle after the key: パスワードは x, 비밀번호는 x
)


_PASSWORD_KEYS = (
    "pass",
    "pwd",
    "secret",
    "pw",
    *secret_words.PASSPHRASE_WORDS,
)  # values that may hold spaces (passphrases)


# salt: a hash's salt is a secret key (WordPress's AUTH_SALT, Drupal's hash_salt, Django's SECRET_KEY_FALLBACKS' kin)
_ENGLISH_KEY_WORDS = ("pass", "pw", "token", "key", "secret", "credential", "sig", "auth", "session", "cookie", "salt")  # fmt: skip


_KEY_WORDS = (*_ENGLISH_KEY_WORDS, *_FOREIGN_WORDS)


_OUTRIGHT_WORDS = ("pass", "pwd", "secret", "token", "credential")
"""Words that name a secret outright: a value under a key holding one is a secret, even one equal to an id."""


_XML_WORDS = (*_OUTRIGHT_WORDS, "signature", "key", *_FOREIGN_WORDS)


_HEXDIGITS = frozenset(string.hexdigits)


_HEX = str.maketrans("", "", "0123456789abcdefABCDEF")


_CASES = str.maketrans(string.ascii_uppercase + string.ascii_lowercase, "U" * 26 + "l" * 26)
_KINDS = str.maketrans(string.digits, "d" * 10)


_HASH_WORDS = LiteralSet((
    "sha", "md5", "hash", "digest", "commit", "checksum", "etag", "fingerprint", "thumbprint", "serial",
    "revision", "rev ",
    "oid", "blob", "tree", "trace", "span", "request", "correlation", "uuid", "guid", "object", "build",
    "image", "layer", "integrity", "crc", "git", "head ", "head:", "head=", "head)", "version", "_id", "-id", " id", "id=", "id:",
    "id>", 'id"', "id'",  # <HostId>, "RequestId": (an id's key, in XML, JSON or a repr)
    "idx=", 'idx"', "idx'", "idx:",  # an index's key (Khalti's pidx=)
    "cert ", "cert=", "cert:", "cert\"",  # a certificate's fingerprint (openfortivpn's trusted-cert = <sha256>)
    "container", "ref ", "ref:", "ref=", "refs/", "reference", "checkout", "merge", "rebase", "revert", "reset", "cherry-pick", "fetch",
    "want ", "pack", "parent", "ocid1.", "arn:", "run '", "run_", "job ", "job '", "job_", "ssh-rsa", "ssh-ed25519", "ssh-dss", "event", "updating", "change", "check sum", "public", "peer",
    "chunk",  # a buffer's chunk id (Fluentd's chunk="<32 hex>")
    "nonce",  # a nonce is sent in the clear to be used once (ACME's Replay-Nonce, a checkout's nonce)
    "boundary=",  # a multipart body's boundary (Content-Type: multipart/form-data; boundary=<random>)
    # an object named by its noun just before its id (Comet's "experiment <32 hex>", Swarm's "node <25>")
    "experiment", "node ", "dataset", "model ", "artifact", "pipeline", "workflow", "deployment",
    "instance", "volume", "snapshot", "service ", "task ", "workspace", "project ", "batch ", "component ",
    "cluster ",  # a compute cluster's generated name (Dask Gateway's "Cluster 'prod.<32 hex>'")
    "branch",  # a branch's head commit (Bencher's "Branch: main (<40 hex>)")
    # a stored object's id after its noun (Elasticsearch's "document [<20>]", Firestore's, a row's)
    "document", "record", "collection", "partition", "shard", "spreadsheet", "channel ",
    # a ledger's entries, public by design: a transaction's hash (tx <hash>), an account's address (a TRON one, base58)
    "tx ", "txid", "address",
    *secret_words.ID_WORDS,  # an identifier, in the languages of policy/secret_words.py
    *secret_words.REQUEST_WORDS,  # a request, in those languages
    *secret_words.PUBLIC_KEY_WORDS,  # a public key, in those languages (δημόσιο κλειδί pk_...)
))  # fmt: skip
"""Words that name a run as a hash or an id, found in one pass (a text of 100 KB asks for its runs' ~100
neighbourhoods: one substring search per word was an eighth of redact()'s time under the profiler)."""


# a business object's noun just before its id, in English, Portuguese and Spanish (Iugu's "cliente
# <32 hex>"): read in the run's own neighbourhood only, even for hex (a client's name lines above names no run)
_OBJECT_NOUNS = (
    "customer ",
    "cliente ",
    "tenant ",
    "invoice ",
    "fatura ",
    "factura ",
    "subscription ",
    "order ",
    "pedido ",
    "item ",  # a media server's or a store's item (Jellyfin's "for item <32 hex>")
    "zone ",  # a DNS zone's (Cloudflare's "[zone <32 hex>]")
)


BASE64_ENTROPY_LIMIT = 4.5
"""detect-secrets' Base64HighEntropyString default: a base64 run above this is random."""


HEX_ENTROPY_LIMIT = 3.0
"""detect-secrets' HexHighEntropyString default, for hex runs of 32+ characters not named as a hash."""


def _has_digit(word: str) -> bool:
    return any(c.isdigit() for c in word)


def _mixed(word: str) -> bool:
    """Capitals, small letters and digits, all three: the mix of a secret a person chose or a key."""
    return (
        any(c.isupper() for c in word) and any(c.islower() for c in word) and any(c.isdigit() for c in word)
    )


def _bracketed_name(value: str) -> bool:
    """A dotted name of words in brackets, a comma after it or not (``[feed.source.password],``): a
    property's name that a config library logs beside its value, not the value."""
    inner = value.rstrip(",;")
    inner = inner[1:-1] if inner.startswith("[") and inner.endswith("]") else ""
    return "." in inner and all(map(_readable, inner.split(".")))


def _prose(value: str) -> bool:
    """A word of a sentence, not a value: a lower-case word or an error code (``provided.``,
    ``[unauthorized_client]``, ``invalid_grant``), a bracketed one, or punctuation alone."""
    word = value.strip("[](){}<>.,;:!?'\"`")
    return (
        not word
        or (word.replace("_", "").replace("-", "").replace("/", "").isalpha() and word.islower())
        or word.lower() in PROSE_WORDS  # a script with no case: 틀렸습니다, 错误
    )


def _looks_secret(value: str) -> bool:
    """A value after ``key<space>``: 6+ characters with a digit, a symbol or an inner capital, not an ARN or
    URL, not a word of the sentence (``Invalid client secret provided.``)."""
    if len(value) < 6 or value.lower().startswith("arn:") or "://" in value or _prose(value):
        return False
    if value.startswith(_PATH_STARTS):
        return False  # a file that holds it (auth-user-pass /etc/openvpn/x.auth), not the secret
    if value.isalpha() and value.isupper():
        return False  # a constant's or a message's word (PASSWORD INVALID), not a password
    # an inner capital, not "not lower case": a word of a script with no case (만료되었거나, expired) is prose
    return any(not c.isalpha() for c in value) or any(c.isupper() for c in value[1:])


_SOURCE_FILES = (".py", ".java", ".go", ".rb", ".js", ".ts", ".scala", ".kt", ".php", ".cs", ".rs", ".sh", ".ex", ".exs",
                 ".erl", ".clj", ".hs", ".ml", ".cr", ".zig", ".dart", ".lua", ".jl", ".swift", ".cpp", ".groovy")  # fmt: skip
"""A key that is a source file: ``{cafe24_token.py:33}`` in Airflow's log prefix is a file and its line."""


def _public_key(text: str, key_start: int, key_end: int) -> bool:
    """Whether the key at ``text[key_start:key_end]`` names a public key, published by design: after
    ``public`` (WireGuard's ``public key: x``), or *public key* in another language (``öffentlicher
    Schlüssel x``, ``открытый ключ: x``: policy/secret_words.py's ``PUBLIC_KEY_WORDS``)."""
    if text[max(0, key_start - 7) : key_start].lower() in ("public ", "public-"):
        return True
    return text[max(0, key_end - 32) : key_end].lower().endswith(secret_words.PUBLIC_KEY_WORDS)


def _next_assignment(value: str) -> bool:
    """Whether a key's value is the next assignment (``Token token=x``, ``토큰 갱신 요청: mall_id=acmestore``): its
    own key is judged by the key family, this key has no value of its own."""
    name, equals, _ = value.partition("=")
    return bool(equals) and name.replace("_", "").replace("-", "").isalnum()


def _compact(key: str) -> str:
    """A key's name in lower case without its ``_`` and ``-``: ``partition_key``, ``project-key`` and
    ``partitionKey`` are one name."""
    return key.lower().replace("_", "").replace("-", "")


def _secret_key(key: str) -> bool:
    """Whether a matched key really names a secret (not ``secret_name``, ``token_url``, ``PWD=/home``;
    ``secret_id`` is Vault AppRole's credential, ``token_id`` and ``key_id`` name one)."""
    lowered = key.lower().lstrip("-")
    if key.startswith("-") and lowered in _KEY_ID_FLAGS:
        return False
    if key.startswith("--no-"):
        return False  # a negated flag is a switch, it takes no value (hci's --no-token-check, --no-password)
    compact = _compact(key)
    if (
        compact.endswith(_NAMING_KEYS)
        or compact.endswith(_REQUEST_TOKENS)
        or lowered.endswith(_EXCEPTION_SUFFIXES)
        or lowered.endswith(_SOURCE_FILES)
    ):
        return False
    if lowered.startswith(_EXCEPTION_MODULES) or any(
        f".{module}" in lowered for module in _EXCEPTION_MODULES
    ):
        return False
    if key.startswith("-") and lowered.lstrip("-").startswith(_ACTION_FLAG_VERBS):
        return False
    if any(word in lowered for word in _KEY_ROOT_WORDS):
        return False
    named = lowered.endswith(_NAME_SUFFIXES) or _id_key(key)  # ClientCredentialsClientId: the client's id
    return not named or compact.endswith(_SECRET_IDS)


def _spaced_value(key: str, value: str) -> bool:
    """Whether ``key value`` (no = or :) is a secret: a flag's argument (``--password x``,
    ``-storepass x``), or a secret after an identifier naming one (``aws_secret_access_key x``)."""
    if value.startswith("-") or _error_code(value):
        return False  # the next flag (the value was asked for), or an error's code in brackets
    if key.startswith("-"):
        if key.lower().endswith("key") and _key_name(value):
            return False  # a key named for the tool to find (notation sign --key prod-signing)
        return not (value.isalpha() and value.islower() and len(value) <= 4)  # --password via the CLI
    if key.lower() in ("requirepass", "masterauth"):
        return True  # Redis's config line, echoed: requirepass "foobared" (any value is the password)
    return _SPACED_KEY.match(key.lower()) is not None and _looks_secret(value)


def _key_name(value: str) -> bool:
    """A stored key's name: lower-case words joined by ``-`` or ``_`` (``prod-signing``, ``release_key``)."""
    words = value.replace("_", "-").split("-")
    return len(words) >= 2 and all(word.isalpha() and word.islower() for word in words)


PROSE_WORDS = frozenset(
    {"required", "missing", "invalid", "incorrect", "expired", "empty", "wrong", "denied", "rejected",
     "mismatch", "provided", "revoked", "unknown", "needed", "unset", "changed", "reset", "not", "is",
     "was", "must", "should", "has", "have", "for", "the", "and", "failed", "none", "ok", "error",
     "refused", "blank", "absent", "malformed", "unauthorized", "forbidden", "too", "of", "does",
     "cannot", "can't", "did", "set", "yes", "no", "disabled", "enabled", *ANSWER_WORDS,
     "hidden", "informada", "informado", "fourni", "fournie", "angegeben", "dado", "dada", "given",
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


_SENTENCE_STOPS = frozenset(",，、;；.。")
"""What ends a clause of a sentence, in Latin and East Asian punctuation."""


def _caseless(word: str) -> bool:
    """Letters of a script with no case (Japanese, Chinese, Hebrew, Arabic, Thai...): a word, never a password."""
    return not word.isascii() and word.isalpha() and not any(c.isupper() or c.islower() for c in word)


def _next_word_is_prose(text: str, at: int) -> bool:
    """Whether the text at ``at`` goes on as a sentence: a space, or a clause's stop then a space, and a
    word that is no key (``imza geçerli``, not ``user: x``)."""
    if text[at : at + 1] in _SENTENCE_STOPS:
        at += 1
    if text[at : at + 1] != " ":
        return False
    word = text[at + 1 : at + 41].split(" ", 1)[0].split("\n", 1)[0]
    letters = word.rstrip(".,;!?，、。")
    return bool(letters) and letters.isalpha() and (letters.islower() or _caseless(letters))


def _foreign(key: str) -> bool:
    """A key in another language than English (``şifre``, ``sifre``, ``пароль``): a sentence after it is in that language."""
    lowered = key.lower()
    return not key.isascii() or any(word in lowered for word in _FOREIGN_WORDS)


def _prose_after_colon(text: str, start: int, value: str, key: str = "") -> bool:
    """A bare value after ``key:`` that is a word of the sentence: a listed word, punctuation alone,
    a word of letters followed by another lower-case word (``could not find``, ``Received control``),
    a word in a script with no case (``パスワード: 設定済み``), or a lower-case word that is not ASCII, is
    two letters, or follows another language's key (:func:`_foreign`), going on as a sentence
    (``пароль: не требуется``, ``Κωδικός πρόσβασης: σωστός, το...``, ``şifre: gerekmiyor, imza geçerli``)."""
    word = value.rstrip(".,;:!?，、。")
    if not word.strip("-_*.") or word.lower() in PROSE_WORDS:
        return True
    after = start + len(value)
    if len(word) == 3 and word.isdigit() and "100" <= word < "600" and text[after : after + 1] == " ":
        # an HTTP status and its reason or request id: "token: 401 Unauthorized", "keys: 401 (request ...)"
        return text[after + 1 : after + 2].isupper() or text[after + 1 : after + 2] == "("
    if _caseless(word):
        return True
    if word.isalpha() and word.islower() and (len(word) <= 2 or not word.isascii() or _foreign(key)):
        return _next_word_is_prose(text, start + len(word))
    return (
        len(word) >= 4
        and word == value
        and word.isalpha()
        and (word.islower() or word.istitle())
        and text[after : after + 1] == " "
        and text[after + 1 : after + 2].islower()
    )


_PARTICIPLE_ENDINGS = ("ing", "ed")


def _flag_prose(text: str, start: int, value: str) -> bool:
    """A flag named in a sentence, not given a value: the word after it is a listed word
    (``--password required``) or a lower-case participle that the sentence goes on after
    (``Retry with --password prompting enabled.``, ``--token expired,``)."""
    word = value.rstrip(".,;:!?)")
    if word.lower() in PROSE_WORDS:
        return True
    if not (word.isalpha() and word.islower() and word.endswith(_PARTICIPLE_ENDINGS)):
        return False
    after = start + len(word)
    follows = text[after : after + 2]
    return follows[:1] in (".", ",", ";", ":", "!", "?", ")") or (
        follows[:1] == " " and follows[1:].islower()
    )


def _secret_column(name: str, words: tuple[str, ...] = _KEY_WORDS) -> bool:
    """Whether one word (a column's, a parameter's, an element's name) names a secret: it holds one of
    ``words`` and :func:`_secret_key` agrees."""
    lowered = name.lower()
    return bool(name) and " " not in name and any(w in lowered for w in words) and _secret_key(name)


def _secret_name(name: str) -> bool:
    """:func:`_secret_column` with the words that name a secret alone (an element's, an option's name:
    ``<Password>``, ``{password, "x"}``; not ``auth`` or ``session``)."""
    return _secret_column(name, _XML_WORDS)


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
        if (cases.count("Ul") + cases.count("lU")) / len(piece) >= 0.3 and not _camel_words(piece):
            return False
    return True


def _camel_words(piece: str) -> bool:
    """An identifier in camel case of short words, each of two letters or more with a vowel
    (``FindByCommunicationDataRequest``, a SOAP action), where a random mix of cases has a word of one
    letter or none (``qQwxgasogayJbH``)."""
    words = "".join(f" {c}" if c.isupper() else c for c in piece).split()
    return all(len(word) >= 2 and any(c in "aeiouyAEIOUY" for c in word) for word in words)


_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
"""Crockford's base32, a ULID's alphabet."""
ULID_YEARS = (1451606400000, 2082758400000)
"""The times a ULID's first ten characters may give, in milliseconds: 2016 to 2036."""


def _ulid(token: str) -> bool:
    """A ULID (26 characters of Crockford's base32, the first ten a time in milliseconds): a sortable id a
    request or a record is given (``01J1ZK8Q4R7V2M5N9T3WXYBCDE``), as a UUID is."""
    if len(token) != 26 or not token.isupper() or any(c not in _CROCKFORD for c in token):
        return False
    time = 0
    for character in token[:10]:
        time = time * 32 + _CROCKFORD.index(character)
    return ULID_YEARS[0] <= time <= ULID_YEARS[1]


def _looks_random(token: str) -> bool:
    """The entropy catch-all: detect-secrets' thresholds, with what operators read kept."""
    token = token.rstrip("=")
    if len(token) < 20:
        return False
    digits = token.strip("_")  # hex digits after an underscore (Lacework's secret key, _<32 hex>)
    if "-" in digits and all(len(piece) >= 32 for piece in digits.split("-")):
        digits = digits.replace("-", "")  # hex keys joined by a dash (Sklik's <32 hex>-<32 hex> token)
    if not digits.translate(_HEX):
        has_digit = any(c.isdigit() for c in digits)
        return (
            len(digits) >= 32
            and has_digit
            and not digits.isdigit()
            and _entropy(digits.lower()) > HEX_ENTROPY_LIMIT
        )
    if _uuid(token) or _ulid(token):
        return False
    pieces = token.split("-")
    if _aws_resource_id(pieces) or _typed_object_id(token):
        return False  # (a typed id inside a run's path stays too: shapes._random_part)
    if token.startswith(_SSH_PUBLIC_KEYS):
        return False  # an SSH public key's blob (known_hosts, BadHostKeyException): public by design
    if _mixed_run(token):
        return True
    if _object_name(token, pieces):
        return False
    if _short_random(token):
        return True
    if math.log2(len(set(token))) <= BASE64_ENTROPY_LIMIT:
        return False  # the entropy is at most log2 of the characters used: no need to count them
    return _entropy(token) > BASE64_ENTROPY_LIMIT and not _readable(token)


SHORT_RUN = 40
"""Below this length a random run does not reliably reach the base64 entropy limit (log2 of 22
characters is 4.46; four random 32-character keys in ten stay under it)."""
SHORT_RUN_SLACK = 0.25
"""How far below the most a short run's entropy may be: almost every character differs."""
MIXED_RUN_SLACK = 0.6
"""The same, for a run whose characters change kind (upper, lower, digit) as often as chance makes them."""
MIXED_CHANGES = 0.45
"""The share of neighbours of different kinds that reads as chance: about 0.62 in a random run, 0.2
in a camel-case name (``getUserById2``)."""


def _short_random(token: str) -> bool:
    """A short random key (``Zx9yK2mQp4RtVb7NwL3sQw``: 20 to 39 characters, upper and lower case and
    digits, perhaps ``-``, ``_`` and ``+``), which detect-secrets' limit cannot see: not made of words, and either almost no
    character repeated (entropy within ``SHORT_RUN_SLACK`` of the most its length allows) or its
    characters' kinds changing as in a random run (Honeycomb's 22-character keys: a random run of
    that length repeats a few characters about half of the time)."""
    if not (
        len(token) < SHORT_RUN
        and token.replace("-", "").replace("_", "").replace("+", "").isalnum()
        and token.isascii()
        and _mixed(token)
    ):
        return False
    if _labelled(token):
        return False
    deficit = math.log2(len(token)) - _entropy(token)
    if deficit >= MIXED_RUN_SLACK or (deficit >= SHORT_RUN_SLACK and _kind_changes(token) < MIXED_CHANGES):
        return False
    return not _readable(token)


KEY_SHAPED_LENGTH = 12
"""The shortest key :func:`_key_shaped` reads where a name was expected."""


def _key_shaped(word: str) -> bool:
    """A key where a name is expected (a URL's lone user: Gemfury's ``https://<token>@push.fury.io``):
    12+ letters and digits, upper and lower case and digits, their kinds changing as in a random run.
    A user's name changes kind a few times (``etlLoader2``), a random key at almost every step."""
    return (
        len(word) >= KEY_SHAPED_LENGTH
        and word.isalnum()
        and word.isascii()
        and _mixed(word)
        and _kind_changes(word) >= MIXED_CHANGES
        and not _readable(word)
    )


def _labelled(token: str) -> bool:
    """An id with a word for its kind or place beside its random part (``pay_5iHMDxy4ABR4YB``,
    ``rzp_live_kVUjMpj1D3r6mR``, ``8f3a2b1c4d5e6f70-IAD``): its first or last piece (split at ``-``
    and ``_``) is letters of one case, or hex. Vendors' secret prefixes (``sk_live_``) are their own family's."""
    pieces = token.replace("_", "-").split("-")
    if len(pieces) < 2:
        return False
    return any(
        piece.isalpha() and (piece.islower() or piece.isupper()) or not piece.translate(_HEX)
        for piece in (pieces[0], pieces[-1])
        if piece
    )


def _kind_changes(token: str) -> float:
    """The share of neighbouring characters of different kinds (upper, lower, digit)."""
    kinds = token.translate(_CASES).translate(_KINDS)
    return sum(a != b for a, b in zip(kinds, kinds[1:], strict=False)) / (len(kinds) - 1)


# the base64 of an SSH public key blob's length and type name (ssh-rsa, ssh-ed25519, ssh-dss, ecdsa-...)
_SSH_PUBLIC_KEYS = ("AAAAB3NzaC1", "AAAAC3NzaC1", "AAAAE2VjZHNh")
# an SSH public key as authorized_keys writes it: its type, then its blob
_SSH_PUBLIC_KEY_TYPES = tuple(f"{kind} AAAA" for kind in ("ssh-rsa", "ssh-ed25519", "ssh-dss", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521", "sk-ssh-ed25519@openssh.com"))  # fmt: skip


_AWS_ID_PREFIXES = frozenset({"i", "vol", "snap", "sg", "subnet", "vpc", "ami", "eni", "igw", "nat", "rtb", "acl", "eipalloc", "lt", "tgw", "vpce", "pcx", "db", "cluster"})  # fmt: skip


# the type prefixes of API objects' ids (Stripe's ch_/cus_/pi_/evt_/req_..., and the generic ones):
# an id on-call looks up, not a credential (secret prefixes, sk_live_, whsec_, are vendor shapes)
_OBJECT_ID_PREFIXES = frozenset(
    {"ch", "cus", "pi", "pm", "in", "sub", "evt", "req", "txn", "acct", "prod", "price", "cs", "seti",
     "src", "py", "tr", "po", "re", "ii", "il", "job", "run", "msg", "ord", "usr", "org", "proj", "obj",
     "ep", "app",  # Svix's endpoint and application ids
     "prj",  # Vercel's project ids
     "acc", "tx", "user", "webhook",  # Monzo's account, transaction, user and webhook ids (webhook_0000AZ...)
     # a payment's objects, spelled whole or cut short (Stancer's paym_<24>, a refund's refd_)
     "pay", "paym", "payment", "refund", "refd", "invoice", "inv", "cust", "customer", "order", "card", "charge",
     "uid", "id", "oid", "guid"}  # an id spelled as one (WxPusher's UID_<28>), in either case
)  # fmt: skip


_OBJECT_ID_NOUNS = frozenset(
    {"project", "file", "job", "record", "applet", "analysis", "workflow", "container", "database"}
)
"""Object nouns that type an id spelled out before a dash (DNAnexus' ``project-GZ8bQk80Jb3v6PqYy4F2kX1p``)."""


def _typed_object_id(token: str) -> bool:
    """An API object's id: a type prefix, ``_``, letters and digits (``ch_3PQrStUv...``, ``cus_Nffr...``),
    an object's noun, ``-`` and 16 to 40 letters and digits (``project-GZ8b...``), or Gerrit's
    Change-Id (``I`` and a SHA-1's 40 hex digits: a commit's, on every review URL)."""
    prefix, underscore, rest = token.partition("_")
    if len(token) == 41 and token[0] == "I" and not token[1:].translate(_HEX):
        return True
    noun, dash, spelled = token.partition("-")
    if dash and noun in _OBJECT_ID_NOUNS and spelled.isalnum() and 16 <= len(spelled) <= 40:
        return True
    if _typed_hex(token):
        return True
    if underscore and prefix.isalpha() and prefix.islower() and _ulid(rest):
        return True  # a noun then a ULID (Medusa's variant_01JXQ8M4A9F3E2D1C0B9A8Z7Y6, prod_<ULID>)
    return bool(underscore) and prefix.lower() in _OBJECT_ID_PREFIXES and rest.isalnum()


def _typed_hex(token: str) -> bool:
    """A capitalised noun then 16 or more lower-case hex digits: an object's type and its id
    (Digital.ai Release's ``Folder5e1a...``, ``Release8c2d...``); a random key mixes its cases throughout."""
    digits = token.lstrip(string.ascii_letters)
    noun = token[: len(token) - len(digits)]
    return (
        len(noun) >= 4
        and noun.istitle()
        and len(digits) >= 16
        and not digits.translate(_HEX)
        and digits == digits.lower()
    )


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


_SECRET_IN_NAME = (*_OUTRIGHT_WORDS, "key", "sig", "auth", "hmac", "challenge")
"""Words in a key that name its value a secret (a webhook's challenge is the secret it shares: Factorial's)."""


_SECRET_COLLECTIONS = ("keys", "tokens", "secrets", "credentials", "passwords", "hooks", "webhooks",
                       "sessions", "signatures", "invites", "invitations", "shares", "links", "codes")  # fmt: skip
"""Collections whose members' names are themselves secrets (Mattermost's /hooks/<key>, a share link)."""


_SECRET_SEGMENTS = frozenset(
    {"api", "apikey", "api-key", "api_key", "token", "secret", "hook", "integrations", "deploy", "t"}
)
"""A URL path's segment that says what the next one is: a credential (Squadcast's
``/v2/incidents/api/<token>``, Basecamp's chatbot key in ``/integrations/<key>/buckets``, a deploy hook's
``/api/deploy/<40 hex>``, a conda channel's token in ``/t/<token>/<channel>``), whatever object nouns
stand before it."""


def _secret_segment(before: str) -> bool:
    """Whether a URL path's last segment before a run names it as a credential (see :data:`_SECRET_SEGMENTS`),
    or a webhook in a word of its own (Pabbly Connect's ``/sendwebhookdata/<token>``)."""
    if not before.endswith("/"):
        return False
    segment = before[:-1].rpartition("/")[2].lower()
    return segment in _SECRET_SEGMENTS or "webhook" in segment  # /webhook/, /webhooks-v2/, /sendwebhookdata/


_OBJECT_SEGMENTS = frozenset(
    {"service", "account", "project", "organization", "team", "customer", "workspace", "site", "zone",
     "bucket", "cluster", "repository", "pipeline", "dataset", "tenant", "store", "device", "content",
     "app", "job", "task", "folder", "document", "instance", "report"}
)  # fmt: skip
"""Singular nouns of the objects a REST path names by id after them (Fastly's ``/service/<id>/purge``)."""


def _collection_segment(before: str) -> bool:
    """Whether a URL path's last segment before a run names the object it identifies: a plural noun naming a
    collection of objects (``/v2/payments/``, ``/drive/v3/files/``), not a collection of secrets, or an
    object's singular noun (:data:`_OBJECT_SEGMENTS`). The plural may end words joined by ``_`` or ``-``
    (Sendbird's ``/group_channels/``: its last word is judged: ``/api_keys/`` is a collection of secrets).
    A word ending in ``ss`` is no plural (FireHydrant's ``/v1/process/<key>``, ``/access/``, ``/address/``)."""
    if not before.endswith("/"):
        return False
    segment = before[:-1].rpartition("/")[2]
    noun = segment.replace("-", "_").rpartition("_")[2]
    return segment in _OBJECT_SEGMENTS or (
        4 <= len(segment) <= 24
        and segment.replace("_", "").replace("-", "").isalpha()
        and segment.islower()
        and noun.endswith("s")
        and not noun.endswith("ss")
        and noun not in _SECRET_COLLECTIONS
    )


# a signature's version after its time, as Stripe's scheme writes a signature header (t=<unix time>,v1=)
_REPOSITORY_AT = pattern(r"[\w.-]+/[\w.-]+ at $")


_SIGNED_AT = pattern(r"\bt=[0-9]{9,11},v[0-9]=$")


# a decentralized identifier's method, before its id (Radicle's and Bluesky's did:key:z6Mk..., did:plc:):
# a public key or a registry's id, published by design
_DID = pattern(r"\bdid:[a-z0-9]{2,16}:$")


# a run in the value of a key that is "name" alone (Ubicloud's "Machine name: 'vmx9q2...'", "Runner name:
# 'ubicloud-standard-4-vmx9q2...'"): a generated name; not a username (an API key given as the user)
_NAME_KEY = pattern(r"(?i)(?:^|[^\w-])name[\"']?[ \t]*[:=][ \t]*[\"']?[\w.-]*$")


def _named_hash(before: str, hexadecimal: bool = False) -> bool:
    """Whether the words just before a random run (32 characters) name it as a hash or an id
    (``sha256=``, ``commit``, ``request id:``), unless its own key names a secret
    (``fs.azure.account.key.x.blob.core.windows.net=``: "blob" is a hash word, "key" wins). A run whose
    own key names an object or a public key is one whatever words stand near (``partition_key=``,
    ``Sec-WebSocket-Key:``, ``public key:``)."""
    if _secret_segment(before):
        return False  # /incidents/api/<hex>: the segment before says what it is
    if _collection_segment(before):
        return True  # an object's id after its collection in a path: /Accounts/AC<32 hex>/, /payments/<id>
    if _DID.search(before[-24:]) is not None or _NAME_KEY.search(before[-64:]) is not None:
        return True  # did:key:<id>: a decentralized identifier, public; a name
    if _SIGNED_AT.search(before[-24:]) is not None:
        return False  # a signature after its time (Stripe's scheme, Duffel's: t=1750986252,v1=<hex>)
    if hexadecimal and (before.rstrip(" ").endswith("@") or _REPOSITORY_AT.search(before[-128:]) is not None):
        # a repository's commit after its name (infra-config@<40 hex>, netops-scripts @ <40 hex>,
        # "release v2.19.0 for acme-data/ingest-gateway at <40 hex>")
        return True
    stripped = before.rstrip(" \t=:\"'")
    for separator in ",;&(={":
        stripped = stripped.replace(
            separator, " "
        )  # the run's own key: auth_manager=Spotify(client_id='<hex>', a nested object's {"password":{"user":{"id":"<hex>"
    words = stripped.split()
    key = (
        words[-1] if words else ""
    )  # the run's own key, not the field before it (signature="***",serial_no=)
    if (len(words) > 1 and words[-2] == "public") or stripped.lower().endswith(secret_words.PUBLIC_KEY_WORDS):
        return True  # "public key: <base64>" is published (llave pública pk_...)
    own_key = key.strip("'\"{[(").lower()
    if own_key.startswith("private"):
        return False  # whatever it names, a private one is a secret (Kushki's Private-Merchant-Id beside its Public-)
    # its own key names it ('public_key': 'public_d+k+...', deduplication_key=), in two words too (snapshot key:)
    compact = _compact(words[-2] + own_key if len(words) > 1 and own_key == "key" else own_key)
    if compact.endswith(_NAMING_KEYS) and not compact.endswith(_ROUTING_KEYS):
        return True
    # the end of a range (a1b2..c3d4) reads as its start; a hex digest may be named a line above
    window = 80 if before.endswith("..") else len(before) if hexadecimal else 32
    near = before[-32:].lower()
    named = before[-window:].replace("invalid", "")  # "token invalid: <hex>" names no id
    if not _HASH_WORDS.found(named) and not any(
        noun in near or f"{noun.rstrip()}=" in near
        for noun in _OBJECT_NOUNS  # customer=<32 hex> (Kuaidi100)
    ):
        return False
    if len(words) > 1 and any(word in words[-2].lower() for word in _FOREIGN_WORDS):
        return False  # a secret's noun before its adjective: llave privada <hex>, chave secreta
    if len(words) > 1 and words[-2].lower().endswith("signature"):
        return False  # a signature given as its algorithm's digest ("invalid payload signature sha256=<hex>")
    named_secret = key.replace("signal", "")  # APPSIGNAL_REVISION: "sig" in "signal" names no signature
    return not any(word in named_secret for word in _SECRET_IN_NAME) and not compact.endswith(_SECRET_IDS)


PATTERNS: tuple[Pattern, ...] = (
    _MASK_PHRASE,
    _OPENSSL_ERROR,
    _PLACEHOLDER,
    _CREDENTIAL_SCOPE,
    _SIGNED_AT,
    _DID,
    _NAME_KEY,
    _REPOSITORY_AT,
    _BRACKETED_CODE,
    _NEXT_KEY,
    _REFERENCE,
    _KEY_BEFORE,
    _SPACED_KEY,
)
"""This module's patterns (the linear-time test runs each on adversarial input)."""
