"""Secrets recognisable by their shape alone, wherever they stand: PEM and PuTTY private keys, the
vendor prefixes gitleaks' rules do not cover, crypt(3) password hashes, and the high-entropy
catch-all (judged by ``judge._looks_random`` and ``judge._named_hash``)."""

from __future__ import annotations

import base64
import binascii
import json
import string
from collections.abc import Callable

from airflow_retry_provider.policy import vendor
from airflow_retry_provider.policy.engine import Pattern, pattern
from airflow_retry_provider.policy.redactor.judge import (
    _HEX,
    _collection_segment,
    _domain_name,
    _id_key,
    _key_before,
    _key_shaped,
    _looks_random,
    _looks_secret,
    _mixed,
    _named_hash,
    _object_name,
    _readable,
    _secret_column,
    _secret_segment,
    _tool_mask,
    _typed_object_id,
)
from airflow_retry_provider.policy.redactor.spans import Span, _matches, _spans_of

LONG_WORD = 15
"""A whitespace-separated word this long may hold a vendor token or a random run: only then are they looked for."""


# PEM and PuTTY private keys, to the END line or, cut short, to the end of the text
# (detect-secrets' PrivateKeyDetector lists the same BEGIN lines)
_PEM = pattern(
    r"-{4,5} ?BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)? ?-{4,5}"
    r"(?s:.*?)(?:-{4,5} ?END[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)? ?-{4,5}|$)"
    r"|PuTTY-User-Key-File-\d(?s:.*?)(?:Private-MAC:[^\r\n]*|$)"
)


# a password hash in crypt(3)'s form, which a device's config, /etc/shadow or htpasswd print: an
# offline guess recovers the password (Cisco's types 5, 8 and 9, Juniper's $9$ and $6$, $apr1$, bcrypt),
# or in the PHC string format, its parameters joined by commas ($argon2id$v=19$m=4096,t=3,p=1$<salt>$<hash>)
_CRYPT_HASH = pattern(
    r"(?:^|[^\w$])(\$(?:1|1[a-d]|2[abxy]|5|6|7|8|9|y|gy|apr1|sha1|md5)\$[\w./$+=-]{8,}"
    r"|\$(?:argon2(?:id|i|d)|scrypt|pbkdf2(?:-sha[0-9]{1,3})?)\$[\w./$+=,-]{8,})"
)


# secrets recognisable on their own (a vendor's prefix) that gitleaks' rules (policy/vendor.py,
# data/gitleaks.json) do not cover, or cover more narrowly; where a line says detect-secrets, the
# pattern is that plugin's (detect_secrets/plugins/<name>.py, Apache-2.0), in RE2 form. Taken out
# because gitleaks' rules hide them (checked on every sample of the tests and corpora): GitLab's
# glpat-/gldt-/glft-/glsoat-/glrt-, Artifactory's AKCp, Stripe's sk_/rk_/pk_, PyPI, Google's AIza, DigitalOcean, Shopify, Databricks, Linear, PlanetScale, Alibaba's LTAI.
_VENDOR = pattern(
    r"(?:^|[^\w-])("
    r"(?:A3T[A-Z0-9]|ABIA|ACCA|AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA)[A-Z0-9]{16}"  # AWS key id (aws.py + AWS's id prefixes)
    r"|key-[0-9a-f]{32}"  # Mailgun's private API key (gitleaks' rule asks for "mailgun" in its key)
    r"|[0-9a-f]{32}-[0-9a-f]{8}-[0-9a-f]{8}"  # Mailgun's newer keys (a sending key: <32 hex>-<8 hex>-<8 hex>)
    r"|pat-(?:na|eu|ap)[0-9]-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"  # HubSpot's private app token
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
    r"|sk_[A-Za-z0-9]{24,}"  # sk_... secret keys past Stripe's sk_live_/sk_test_: Openpay's sk_<32 hex>, Clerk, Paystack
    # not in detect-secrets: vendors' documented prefixes
    r"|ya29\.[\w-]{20,}|GOCSPX-[\w-]{20,}|1//0[\w-]{30,}"  # Google OAuth token, client secret, refresh token
    r"|hf_[A-Za-z0-9]{30,}|api_org_[A-Za-z0-9]{30,}"  # Hugging Face
    r"|r8_[A-Za-z0-9]{30,}|gsk_[A-Za-z0-9]{40,}|pplx-[A-Za-z0-9]{40,}"  # Replicate, Groq, Perplexity
    r"|hv[sbr]\.[\w-]{20,}"  # HashiCorp Vault
    r"|dckr_pat_[\w-]{20,}|rubygems_[a-f0-9]{48}|oy2[a-z0-9]{43}"  # Docker Hub, RubyGems, NuGet
    r"|ATBB[\w=.-]{20,}|ATATT[\w=.-]{20,}"  # Bitbucket app password, Atlassian API token
    r"|glc_[A-Za-z0-9+/=]{32,}|glsa_[A-Za-z0-9]{32}_[a-f0-9]{8}"  # Grafana
    r"|[0-9a-f]{36}NRAL"  # New Relic's ingest license key (40 characters, the last four NRAL)
    r"|NRAK-[A-Z0-9]{27}|ntn_[A-Za-z0-9]{40,}|PMAK-[a-f0-9]{24}-[a-f0-9]{34}"  # New Relic, Notion, Postman
    r"|sntry[su]_[\w=+/]{40,}|sbp_[a-f0-9]{40}"  # Sentry, Supabase
    r"|dp\.(?:pt|st|ct|sa|scim|audit)\.[A-Za-z0-9]{40,}|pul-[a-f0-9]{40}|nfp_[A-Za-z0-9]{36}"  # Doppler, Pulumi, Netlify
    r"|[A-Za-z0-9]{14}\.atlasv1\.[\w-]{60,}|AGE-SECRET-KEY-1[0-9A-Z]{58}"  # Terraform Cloud, age
    r"|AKID[A-Za-z0-9]{32}"  # Tencent Cloud
    r"|AKfyc[\w-]{40,}"  # a Google Apps Script deployment's id (/macros/s/<id>/exec: a web app's only credential)
    r"|S[A-Z2-7]{55}(?:[A-Z2-7]{2})?"  # an Ed25519 seed in base32 (a NATS nkey's SU..., a Stellar secret key's S...)
    r")"
)


# a password a person chose, wherever it stands (a positional argument, a tuple's item, a
# connect string's user/'x'@db, a proxy's login=user:x): a word of 8 to 40 characters that mixes
# capitals, small letters, digits and one of ! # $ ^ & * ~ ? (Tulipe#2019, Settle!2024q2,
# Pr0xy-Egress!9; not % or +, which encode a URL's or a form's text, though @ and % may stand before
# the symbol: P@ssw0rd-Wh-2026!, Hn4%wq9Z!x; a word starts with neither). Over every corpus's 3,598
# strings on-call must read, no word has that mix, nor any word of Airflow's own sources; checked
# in Python (_chosen): the pattern finds the words that hold one of the symbols; an XML element's
# text too, its & written &amp; (an answer file's <Value>T9r&amp;Wq4zXe7</Value>)
_CHOSEN = pattern(
    r"(?:^|[\s'\"(\[{,;=:>])"
    r"([A-Za-z0-9_@%-]{0,39}(?:&amp;|[!#$^&*~?])(?:&amp;|[A-Za-z0-9!#$^&*~?_-]){0,39})"
    r"(?:$|[\s'\"(),\]};@<])"
)  # then "(" too: MyBatis' parameters name their types after them (7hG!xq2Pw#Lm(String))
_CHOSEN_SYMBOLS = "!#$^&*~?"
CHOSEN_LENGTHS = (8, 40)
"""The lengths of a chosen password (from, to) that its shape alone hides."""


def _chosen(word: str) -> bool:
    """A chosen password's mix: capitals, small letters, digits and a symbol; not a format (``%H5x``),
    a pattern's class (``a-zA-Z0-9_$``), a variable (``$Db2Pass``) or a keyword argument (``**kw``)."""
    word = word.replace("&amp;", "&")  # an XML element's text (R&amp;D-2024 mixes no small letters)
    return (
        CHOSEN_LENGTHS[0] <= len(word) <= CHOSEN_LENGTHS[1]
        and word[0] not in _CHOSEN_SYMBOLS + "@%"
        and _mixed(word)
        and not any(span in word for span in ("a-z", "A-Z", "0-9"))
        and not _tool_mask(word)  # Hoplite's 8Rv*****: the tool masked it, showing its first characters
    )


def _words_shaped(
    pattern_: Pattern, shaped: Callable[[str], bool], text: str, spans: list[Span], readable: list[Span]
) -> None:
    """Every word ``pattern_`` finds (its group 1) that has the ``shaped`` mix (:func:`_chosen`,
    :func:`_passphrase`), unless a key naming an id holds it (Onfleet's ``taskId=kc8SS1tzuZ~jqjl...``); a
    ``readable`` user at its start stays."""
    for match in _matches(pattern_, text, spans):
        if shaped(match.group(1)):
            key = _key_before(text, match.start(1))
            if key is None or not _id_key(key):
                # the user of a pair and its % stay (Samba's -U svc-domjoin%x, in an argv list)
                start, end = match.span(1)
                user = next(
                    (finish + 1 for begin, finish in readable if begin == start < finish < end), start
                )
                spans.append((user, end))


# a passphrase a person chose, joined by dashes (Horse-Battery-Staple-91, Pr0ducer-Queue-2024,
# p4ssw0rd-Tunnel-88): three to six pieces of two to twelve letters or digits, with capitals, small
# letters and digits in the whole; checked in Python (_passphrase)
_PASSPHRASE = pattern(
    r"(?:^|[\s'\"(\[{,;=:])((?:[A-Za-z0-9]{2,12}-){2,5}[A-Za-z0-9]{2,12})(?:$|[\s'\"),\]};@])"
)
PASSPHRASE_LENGTHS = (12, 40)
"""The lengths of a dashed passphrase (from, to) that its shape alone hides."""


def _passphrase(word: str) -> bool:
    """A dashed passphrase's mix: capitals, small letters and digits, and pieces that are words or
    numbers: no piece in camel case (``ScriptBuildTask``: a generated name), none all capitals
    (``ETL-CORE-JOB1``: a key), none of letters and digits mixed beyond a word's leetspeak."""
    if not PASSPHRASE_LENGTHS[0] <= len(word) <= PASSPHRASE_LENGTHS[1]:
        return False
    if not _mixed(word):
        return False
    for piece in word.split("-"):
        if piece.isdigit():
            continue
        if piece[1:] != piece[1:].lower() or (piece.isupper() and len(piece) > 1):
            return False  # camel case or capitals: a name, a key, an id
        if sum(c.isdigit() for c in piece) > 2:
            return False  # more digits than a word's leetspeak: an id (build-7f3a9c2e)
    return True


# the high-entropy catch-all: a long run of base64 / hex characters (detect-secrets'
# Base64HighEntropyString and HexHighEntropyString charsets), judged in Python (_looks_random)
_RUN = pattern(r"(?:^|[^A-Za-z0-9+/_-])([A-Za-z0-9+/_-]{20,}=*)")  # also after = (X=<random>)


MAX_RUNS = 100
"""The high-entropy catch-all judges at most this many long runs of a text (a long traceback has
many paths), then stops: the other families still run on the whole text."""


def _pem(text: str, spans: list[Span]) -> None:
    for match in _matches(_PEM, text, spans):
        start, end = match.span()
        if end == len(text) and text[start] == "-" and "END" not in text[start:end]:
            end = _key_end(text, start)
        spans.append((start, end))


# a PEM key's armour: its BEGIN and END lines name the key's type, not its secret
_ARMOUR = pattern(r"-{4,5} ?(?:BEGIN|END)[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)? ?-{4,5}")


def _past_breaks(text: str, at: int, step: int) -> int:
    """From ``at``, past the spaces and line breaks (a JSON string's escaped ``\\n`` too) that way."""
    while True:
        piece = text[at : at + 2] if step > 0 else text[max(at - 2, 0) : at]
        if piece in ("\\n", "\\r"):
            at += 2 * step
        elif piece and piece[0 if step > 0 else -1] in " \t\r\n":
            at += step
        else:
            return at


_ARMOUR_REACH = 80
"""How far from a span's end its armour line may start or end (the longest armour is 75 characters)."""


def _armour_near(text: str, at: int) -> list[Span]:
    """The armour lines within reach of ``at``, each with the line breaks after a BEGIN or before an END."""
    offset = max(0, at - _ARMOUR_REACH)
    window = text[offset : at + _ARMOUR_REACH]
    if "PRIVATE KEY" not in window:
        return []
    found: list[Span] = []
    for match in _ARMOUR.finditer(window):
        start, end = offset + match.start(), offset + match.end()
        if "BEGIN" not in match.group():
            start = _past_breaks(text, start, -1)
        found.append((start, _past_breaks(text, end, 1)))
    return found


def unarmoured(text: str, spans: list[Span]) -> list[Span]:
    """``spans`` with a PEM key's armour left out of each (``-----BEGIN ENCRYPTED PRIVATE KEY-----``
    stays: on-call reads that the key is encrypted); the base64 between is hidden, by whichever family
    found it (its shape, or a ``private_key`` key). Only the armour near a span's ends is looked for."""
    found: list[Span] = []
    for start, end in spans:
        for line_start, line_end in _armour_near(text, start):
            if line_start <= start < line_end:
                start = line_end
        for line_start, line_end in _armour_near(text, end):
            if line_start < end <= line_end:
                end = line_start
        if end > start:
            found.append((start, end))
    return found


_BASE64 = frozenset(string.ascii_letters + string.digits + "+/=")


def _key_end(text: str, start: int) -> int:
    """Where a PEM key cut short ends (an excerpt, ``BEGIN PRIVATE KEY----- MIIEvQ...`` and no END
    line): after the last line that goes on with its body (a run of base64, not of letters alone, after a log's
    prefix), not at the text's end, so the log below stays readable (Maskinporten's trace id)."""
    end = text.find("\n", start)
    while end >= 0:
        line_end = text.find("\n", end + 1)
        line = text[end + 1 : len(text) if line_end < 0 else line_end]
        head, dash, rest = line.partition(" - ")
        words = (rest if dash and head.startswith("[") else line).split()  # [<time>] INFO - <body>
        word = words[0] if words else ""
        if not (len(word) >= 8 and set(word) <= _BASE64 and (word.endswith("=") or not word.isalpha())):
            return end
        end = line_end
    return len(text)


def _random_part(token: str, whole: bool) -> Span:
    """The part of a run to hide: from its first to its last random piece (split at ``/``), so
    ``<token>/sendMessage`` keeps its path. When the ``whole`` run looks random, a piece is random
    unless it is a word; otherwise only a piece random on its own is (an API key as a path's
    segment: ``/v1/<88 hex>/sms/send.json``), a hex digest's length excepted (an object's name, a
    run's id) unless it ends the path right after the API's version (Infura's ``/v3/<32 hex>``: the
    endpoint is the project's key; Sinch's ``/xms/v1/<32 hex>/batches`` names a plan), or a
    piece after a segment that names a credential (``/api/<40 hex>``). An object's id after its collection's noun stays (``/Accounts/<id>``)."""
    if "/" not in token:
        return (0, len(token)) if whole else (0, 0)
    first = last = -1
    offset = 0
    previous = ""
    named = False  # a piece was an object's id
    pieces = token.split("/")
    for index, piece in enumerate(pieces):
        keyed = _secret_segment(f"/{previous}/")  # /integrations/<key>: a collection of credentials
        member = not (keyed and not _readable(piece)) and not _long_key(piece)  # /periods/<64 random>/: a key
        if member and _collection_segment(f"/{previous.lower()}/"):
            named = True  # /Accounts/<id>: the id of an account; /payments/<id>, of a payment
        elif whole and not keyed and _short_hex(piece):
            named = True  # /reporting/test/<24 hex>: an object's id (MongoDB's ObjectId), too short for a key
        elif (
            # (deploy/<Deployment>-<ReplicaSet hash>-<suffix>: a Pod's name, cut in short words, is no key;
            # /api/outEBelgeV2/: an endpoint's name, shorter than a key)
            (
                not _readable(piece)
                and not _typed_object_id(piece)
                and not _object_name(piece, piece.split("-"))
                and (whole or len(piece) >= KEYED_LENGTH)
            )
            if whole or keyed
            else _random_piece(piece, keyed=_version_segment(previous) and index == len(pieces) - 1)
        ):
            first = offset if first < 0 else first
            last = offset + len(piece)
        offset += len(piece) + 1
        previous = piece
    if first >= 0:
        return first, last
    return (0, 0) if named or not whole else (0, len(token))


KEYED_LENGTH = 16
"""The shortest segment a credential's segment (``/api/``, ``/token/``) names as a key: a shorter one is an
endpoint's name (Birfatura's ``/api/outEBelgeV2/SendDocument``)."""


def _short_hex(piece: str) -> bool:
    """Fewer hex digits than a key of hex has (32): an object's id in a path (MongoDB's 24-digit ObjectId,
    Perfecto's ``/reporting/test/<24 hex>``, a short commit), however random the path around it looks."""
    return bool(piece) and len(piece) < 32 and not piece.translate(_HEX)


_DIGEST_LENGTHS = (32, 40, 56, 64, 96, 128)
"""The lengths of hex digests (MD5, SHA-1, SHA-224, SHA-256, SHA-384, SHA-512): an object's name in a path."""


LONG_KEY = 48
"""A random segment this long is a key after any noun: a collection names its members by ids of 10 to 36
characters (``/payments/<id>``); Fio banka's ``/periods/<64-character token>/`` is no member's."""


def _long_key(piece: str) -> bool:
    """A path's segment of ``LONG_KEY`` or more letters of both cases and digits, changing kind as a
    random run does."""
    return len(piece) >= LONG_KEY and _key_shaped(piece)


def _random_piece(piece: str, keyed: bool) -> bool:
    """A path's segment that is a secret on its own, in a run that is not random as a whole (a hex
    digest too when its place makes it a key: ``keyed``)."""
    if not keyed and not piece.translate(_HEX) and len(piece) in _DIGEST_LENGTHS:
        return False
    return _looks_random(piece)


def _version_segment(piece: str) -> bool:
    """An API's version as a path's segment (``v3``)."""
    return 2 <= len(piece) <= 3 and piece[0] in "vV" and piece[1:].isdigit()


def _in_url(lowered: str, start: int) -> bool:
    """Whether a run continues a URL (after its scheme, unbroken): its name is then read where its
    hidden part starts (``/receiver/v1/http/<key>``), not in the host's words (``collection.eu``)."""
    before = lowered[max(0, start - 128) : start]
    scheme = before.rfind("://")
    return scheme >= 0 and not any(c in before[scheme:] for c in " \t\n\"'<>")


def _named_from(lowered: str, begin: int) -> str:
    """The words before a run at ``begin`` that may name it: up to 128 characters, from its URL's
    scheme on when it stands in a URL (the words before a URL name the URL, not a piece of its path:
    ``requests.exceptions.HTTPError: ... for url: https://mainnet.infura.io/v3/<key>``)."""
    before = lowered[max(0, begin - 128) : begin]
    if _in_url(lowered, begin):
        before = before[before.rfind("://") :]
    return before


# a host and its port after a node's id, up to the end of the address
_PEER_HOST = pattern(r"@[A-Za-z0-9][\w-]*(?:\.[\w-]+)+:\d{2,5}(?:[^\w.:/@]|$)")


def _peer_id(text: str, start: int, end: int) -> bool:
    """A node's id before its ``@host:port`` with no scheme or user before it: a peer's address, public
    (Storj's satellite ``<id>@us1.storj.io:7777``, Tendermint's ``<node id>@host:26656``, Lightning's
    ``<public key>@host:9735``), where ``https://<key>@host`` and ``user:<password>@host`` hold a secret."""
    if text[end : end + 1] != "@":
        return False
    before = text[max(0, start - 3) : start]
    return not before.endswith((":", "//")) and _PEER_HOST.match(text[end : end + 300]) is not None


_HOST_REST = pattern(r"(?:\.[A-Za-z0-9_-]+)+")


def _host_label(text: str, start: int, end: int) -> bool:
    """A host's first label, however random, before its domain (two labels or more) with no user's ``@``
    or ``:`` before it: a managed database's or a cluster's generated name (Upsun's ``<26 random>.postgresql.
    service._.eu-5.platformsh.site``), which on-call reads to know which one failed. A host's name is
    written in lower case; a run of both cases before a dot is a secret's (``<key>.sig.value``)."""
    rest = _HOST_REST.match(text[end : end + 253])
    if rest is None or text[max(0, start - 1) : start] in ("@", ":"):
        return False
    run = text[start:end]
    return run.islower() and run.isalnum() and _domain_name(run + rest.group())


_BASE32 = frozenset(string.ascii_uppercase + "234567")


def _base32_public_key(run: str) -> bool:
    """An Ed25519 public key in base32 (NATS's nkeys: a user's U..., an account's A..., a server's N...;
    a Stellar account's G...): 56 capitals and digits, what on-call reads to know who connected. Its
    seed, S and 55 or 57 more, is a vendor's shape (``_VENDOR``)."""
    return len(run) == 56 and run[0] in "UANOCXG" and set(run) <= _BASE32


# a URI with no user, password, query or fragment: an address, nothing secret in it
_PLAIN_URI = pattern(r"^[a-z][a-z0-9+.-]{1,20}://[\w.:/-]+$")


MAX_ENCODED_URI = 512
"""At most this many characters of base64 are decoded to be judged as a URI."""


_BASE64_BEGIN = base64.b64encode(b"-----BEGI").decode()
"""How a PEM block starts in base64, to its last whole group of three bytes."""


_PUBLIC_ARMOURS = (b"CERTIFICATE", b"PUBLIC KEY")
"""What a public PEM block's BEGIN line names: a certificate (or its request), a public key (PGP's too)."""


def _encoded_armour(run: str) -> bool:
    """Base64 of a public PEM block: its first line, decoded, begins a certificate or a public key
    (a kubeconfig's ``certificate-authority-data``, cosign's ``cosign.pub`` in a Kubernetes secret)."""
    try:
        head = base64.b64decode(run[:64], validate=True)
    except (binascii.Error, ValueError):
        return False
    line = head.partition(b"\n")[0]
    return (
        line.startswith(b"-----BEGIN ")
        and b"PRIVATE" not in line
        and any(word in line for word in _PUBLIC_ARMOURS)
    )


_ENCODED_OBJECT = "eyJ"
"""Base64 of ``{"``: a JSON object's start."""


def _plain_field(key: str, value: object) -> bool:
    """A field of an object that shows nothing secret: a key that names no secret, a value that is a number,
    a flag, or a string that does not look like one (``"status": "400"``, ``"scope": "https://..."``)."""
    if _secret_column(key):
        return False
    if isinstance(value, list):
        return all(_plain_field("", item) for item in value)
    if isinstance(value, str):
        return not _looks_secret(value)
    return not isinstance(value, dict)


def _encoded_report(decoded: str) -> bool:
    """A JSON object, one level deep, every field of it plain (:func:`_plain_field`): a server's answer in
    base64 (an IMAP server's XOAUTH2 challenge, ``+ eyJzdGF0dXMiOiI0MDAi...``: ``{"status": "400", ...}``)."""
    try:
        fields = json.loads(decoded)
    except ValueError:
        return False
    return isinstance(fields, dict) and bool(fields) and all(_plain_field(k, v) for k, v in fields.items())


def _encoded_public(run: str) -> bool:
    """Base64 of what is public: a certificate or a public key (:func:`_encoded_armour`), a URI (a
    Kubernetes secret's data holding an endpoint, ``aHR0cDovL21pbmlv...``; Webex's ids,
    ``ciscospark://us/ROOM/<uuid>``) or a plain report (:func:`_encoded_report`): decoded only to be
    judged; a credential in it (user, password, query, a field named for a secret) keeps it hidden."""
    if run.startswith(_BASE64_BEGIN) and _encoded_armour(run):
        return True
    if len(run) > MAX_ENCODED_URI or not run.isascii():
        return False
    try:
        decoded = base64.b64decode(run + "=" * (-len(run) % 4), validate=True).decode("ascii")
    except (binascii.Error, UnicodeDecodeError):
        return False
    return _PLAIN_URI.match(decoded) is not None or (
        run.startswith(_ENCODED_OBJECT) and _encoded_report(decoded)
    )


_KEYS_OF_SECRETS = ("private", "secret", "pass", "token", "key")
"""Words that make an id's key a secret's own (``private_key_id``, ``ibm_api_key_id``, ``Private-Merchant-Id``)."""


def _named_id(key: str) -> bool:
    """Whether the key just before a random run names an id in its own case (a Go struct's
    ``ApplicationCredentialID:<hex>``, whose words the lowered text no longer shows), and not a secret's."""
    return _id_key(key) and not any(word in key.lower() for word in _KEYS_OF_SECRETS)


_GREP_LINE = pattern(r":[\w.-]+(?:/[\w.-]+)*:[0-9]+:")
"""A path and a line number after a commit, ``<sha>:dags/config/dev.env:7:``, as git grep prints a match."""


# a package's unit id as GHC and Cabal print it in a call stack (``in crm-sync-0.4.2-<22 random>:CrmSync.Db``):
# the package's name, its version, then its build's hash
_UNIT_ID = pattern(r"^[A-Za-z][\w-]*-[0-9]+(?:\.[0-9]+)*-[A-Za-z0-9]{8,64}$")


def _unit_id(text: str, start: int, end: int) -> bool:
    """Whether the run at ``text[start:end]`` ends a package's unit id that starts before it (the run starts
    after the version's last dot)."""
    if text[start - 1 : start] != "." or not text[start : start + 1].isdigit():
        return False
    reach = max(0, start - 128)
    word_start = max(reach, max(text.rfind(c, reach, start) for c in " \t\n(") + 1)
    return _UNIT_ID.match(text[word_start:end]) is not None


_PUBLISHED_RECORDS = ("_acme-challenge",)
"""Names of DNS records whose value is published by design: an ACME challenge's TXT record (dns-lexicon's
``create <domain> TXT --name _acme-challenge.<host> --content <43 random>``, certbot's and lego's logs)."""


def _published_record(lowered: str, start: int) -> bool:
    """Whether the run at ``start`` stands on a line that names a published record."""
    line_start = lowered.rfind("\n", 0, start) + 1
    line_end = lowered.find("\n", start)
    line_end = len(lowered) if line_end < 0 else line_end
    return any(lowered.find(record, line_start, line_end) >= 0 for record in _PUBLISHED_RECORDS)


def _random_runs(text: str, lowered: str, spans: list[Span], readable: list[Span]) -> None:
    judged: dict[str, bool] = {}  # a text that repeats a token judges it once
    published = any(record in lowered for record in _PUBLISHED_RECORDS)
    for count, match in enumerate(_RUN.finditer(text)):
        if count == MAX_RUNS:
            return
        start, end = match.span(1)
        if text[start - 1 : start] == "%" and not text[start : start + 2].translate(_HEX):
            start += 2  # a byte percent-encoded before the run (EDGE_ENROLL_TOKEN%3D<token>: an encoded =)
        token = text[start:end]
        random = judged.get(token)
        if random is None:
            random = judged[token] = _looks_random(token)
        if not random and "/" not in token:
            continue
        first, last = _random_part(token, random)
        if last <= first:
            continue
        begin = start + first if _in_url(lowered, start) else start
        if _peer_id(text, start, end) or _host_label(text, start, end) or _base32_public_key(token):
            continue
        if _encoded_public(token) or _unit_id(text, start, end):
            continue
        if published and _published_record(lowered, start):
            continue
        hidden, before = token[first:last], _named_from(lowered, begin)
        long_member = _long_key(hidden) and _collection_segment(before)  # /periods/<64-character token>/
        # a digest then its size (Bazel's <sha256>-1087) is judged as the digest
        digest = hidden.rstrip("0123456789").removesuffix("-")
        if not hidden.translate(_HEX) and _GREP_LINE.match(text, start + last) is not None:
            continue  # a commit before a path and a line, as git grep prints a match (git-secrets' findings)
        if _after_id_flag(text, begin) or _named_id(_key_before(text, begin) or ""):
            continue
        if long_member or not _named_hash(before, hexadecimal=not digest.translate(_HEX)):
            if not any(opening <= begin < finish for opening, finish in readable):
                spans.append((begin, start + last))  # not a URL's path beside its query's secret


# a flag named as an object's id, its value after a space (zcli's --projectId <22>, --service-id <uuid>)
_ID_FLAG = pattern(r"(?:^|[\s'\"])--?([A-Za-z][\w.-]{0,40}(?:Id|ID|[_-]id))[ \t]+['\"]?$")


def _after_id_flag(text: str, start: int) -> bool:
    """Whether the run at ``start`` is an id flag's value: an object's id, however random, unless the
    flag names a key's id (``--access-key-id``, kept only beside its secret's flag) or a credential
    (``--secret-id``, ``--session-id``)."""
    match = _ID_FLAG.search(text[max(0, start - 48) : start])
    return match is not None and "key" not in match.group(1).lower() and _id_key(match.group(1))


# a flag that names a key pair's id (aliyun's --access-key-id, beside --access-key-secret; certbot's
# --eab-kid, a key's id in JOSE's word, beside --eab-hmac-key)
_ID_FLAG_BEFORE = pattern(r"--[A-Za-z][\w-]*-k?id['\"]?(?:,[ \t]*['\"]|[ \t]+['\"]?|=['\"]?)$")
_SECRET_FLAG = pattern(r"--[\w-]*(?:secret|hmac)")


def _id_flag_value(text: str, span: Span) -> bool:
    """A key pair's id after its ``--*-id`` flag, when the same command has the flag of its secret
    (hidden by its key): the id names the key, on-call reads which one failed."""
    start = span[0]
    return (
        _ID_FLAG_BEFORE.search(text[max(0, start - 64) : start]) is not None
        and _SECRET_FLAG.search(text) is not None
    )


PATTERNS: tuple[Pattern, ...] = (
    _PEM,
    _UNIT_ID,
    _ARMOUR,
    _CRYPT_HASH,
    _VENDOR,
    _CHOSEN,
    _PASSPHRASE,
    _RUN,
    _PEER_HOST,
    _GREP_LINE,
    _ID_FLAG_BEFORE,
    _ID_FLAG,
    _SECRET_FLAG,
    _HOST_REST,
    _PLAIN_URI,
)
"""This module's patterns (the linear-time test runs each on adversarial input)."""


def find(text: str, lowered: str, spans: list[Span], readable: list[Span]) -> None:
    """The secrets known by their shape; nothing random is hidden inside a ``readable`` span."""
    if "PRIVATE KEY" in text or "PuTTY-User-Key" in text:
        _pem(text, spans)
    if "$" in text:
        _spans_of(_CRYPT_HASH, text, spans)
    if any(map(text.__contains__, _CHOSEN_SYMBOLS)):
        _words_shaped(_CHOSEN, _chosen, text, spans, readable)
    if "-" in text:
        _words_shaped(_PASSPHRASE, _passphrase, text, spans, readable)
    if len(text) >= LONG_WORD:  # a word long enough to hold a vendor token, found with a loop (not a
        for word in text.split():  # max(map(len, ...)), which costs more for a few words)
            if len(word) >= LONG_WORD:
                shaped: list[Span] = []
                _spans_of(_VENDOR, text, shaped)
                shaped.extend(vendor.find(text))
                _random_runs(text, lowered, shaped, readable)
                if ("-id" in lowered or "-kid" in lowered) and ("secret" in lowered or "hmac" in lowered):
                    shaped = [span for span in shaped if not _id_flag_value(text, span)]
                spans.extend(shaped)
                break
