"""Remove secrets from text before it is stored, logged or shown (retry reasons, dead letters, ledger).

Redaction errs on the side of hiding too much: a value after ``token=`` is hidden even when it
was harmless. Each secret is replaced by ``***``; the text around it is kept. The families
covered, and why this is a private stdlib list modelled on detect-secrets' plugins rather than
detect-secrets itself, are in docs/CLASSIFICATION.md ("Redaction").

Every pattern runs in time linear in the text: a match can only start at the beginning of a
word (a look-behind), and no quantifier gives back what it took (possessive quantifiers), so
no input makes a pattern try each start against each end. ``bench/redact.py`` holds the proof.
Patterns are ASCII (``re.ASCII``): secrets are, and a Unicode word class in a look-behind costs
five times as much per character.
"""

from __future__ import annotations

import re

MASK = "***"
ELLIPSIS = "…"

# scheme://user:password@host: the password runs to the LAST @ of the word, so it may hold / and @
_URI = re.compile(r"(?<![\w+.-])[a-zA-Z][\w+.-]*+://(?P<rest>[^\s\"'<>]++)", re.ASCII)
_PORT = re.compile(r"\d{1,5}(?:[/?#]|$)")  # https://host:443/a@b: a port, not a password

# PEM private keys, to the END line or, cut short, to the end of the text
_PEM = re.compile(
    r"-----BEGIN[A-Z ]{0,40}PRIVATE KEY(?: BLOCK)?-----"
    r"(?:.*?-----END[A-Z ]{0,40}PRIVATE KEY(?: BLOCK)?-----|.*+)",
    re.DOTALL | re.ASCII,
)

# Cookie: a=b; c=d / Set-Cookie: id=...: the whole value, to the end of the line
_COOKIE = re.compile(
    r"(?P<head>(?<![\w-])(?:set-)?cookie[\"']?\s*+[:=]\s*+)(?P<secret>[^\r\n]++)", re.IGNORECASE | re.ASCII
)

# Authorization: Bearer abc / Basic abc / Digest ... / authorization=abc
_AUTHORIZATION = re.compile(
    r"(?P<head>(?<!\w)authorization[\"']?\s*+[:=]\s*+[\"']?(?:(?:bearer|basic|token|digest|negotiate)\s++)?)"
    r"(?P<secret>[^\s\"',;]++)",
    re.IGNORECASE | re.ASCII,
)
_BEARER = re.compile(r"(?P<head>(?<![\w-])bearer\s++)(?P<secret>[\w.~+/=-]{8,}+)", re.IGNORECASE | re.ASCII)
# a bare Basic credential: base64 of user:password (checked by _looks_encoded, not an English word)
_BASIC = re.compile(
    r"(?P<head>(?<![\w-])basic\s++)(?P<secret>[A-Za-z0-9+/]{8,}+=*+)(?![^\s\"',;])", re.IGNORECASE | re.ASCII
)

# key=value, "key": "value", key: value, where the key names a secret (_SECRET_KEY); "https://" is no key
_KEY_SEP = re.compile(r"(?<![\w-])(?P<key>[\w-]++)[\"']?\s*+[:=](?!//)\s*+", re.ASCII)
_VALUE = re.compile(r"\"[^\"\r\n]*+\"?|'[^'\r\n]*+'?|[^\s&;,\"')\]}]++")
_SECRET_KEY = re.compile(
    r"pass|pwd|token|secret|credential|signature|api-?key|access-?key|private-?key|account-?key|"
    r"session-?id|cookie|^(?:auth|sig|session)$|key$|keys$",
    re.IGNORECASE | re.ASCII,
)

# secrets that travel in a URL path: chat webhooks
_WEBHOOK = re.compile(
    r"(?P<head>(?:hooks\.slack\.com/(?:services|workflows|triggers)/"
    r"|discord(?:app)?\.com/api/webhooks/"
    r"|\.webhook\.office\.com/webhookb2/"
    r"|chat\.googleapis\.com/v1/spaces/))"
    r"(?P<secret>[^\s\"'<>]++)",
    re.IGNORECASE | re.ASCII,
)

# secrets recognisable on their own (a vendor's prefix)
_STANDALONE = re.compile(
    r"(?<![\w-])(?:"
    r"(?:AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|A3T[A-Z0-9])[A-Z0-9]{16}"  # AWS access key id
    r"|eyJ[\w-]{5,}+\.[\w-]{5,}+\.[\w-]*+"  # JSON Web Token
    r"|gh[pousr]_[A-Za-z0-9]{30,}+|github_pat_\w{22,}+"  # GitHub tokens
    r"|glpat-[\w-]{20,}+"  # GitLab personal access token
    r"|xox[abprse]-[A-Za-z0-9-]{10,}+|xapp-[A-Za-z0-9-]{10,}+"  # Slack tokens
    r"|AIza[\w-]{35}|ya29\.[\w-]{20,}+"  # Google API key, OAuth access token
    r"|(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{10,}+|whsec_[A-Za-z0-9]{20,}+"  # Stripe
    r"|sk-[\w-]{20,}+"  # API secret keys in the sk-... style (OpenAI, Anthropic)
    r"|SG\.[\w-]{16,}+\.[\w-]{16,}+"  # SendGrid
    r"|npm_[A-Za-z0-9]{36}|pypi-[\w-]{50,}+"  # package registries
    r"|hv[sb]\.[\w-]{20,}+"  # HashiCorp Vault
    r"|dop_v1_[a-f0-9]{64}"  # DigitalOcean
    r")",
    re.ASCII,
)

_NOT_SECRETS = {"***", "bearer", "basic", "token", "digest", "negotiate"}  # already hidden, or a scheme
_KEY_WORDS = ("pass", "pwd", "token", "key", "secret", "credential", "sig", "auth", "session", "cookie")


def _mask_secret(match: re.Match[str]) -> str:
    secret = match.group("secret")
    if len(secret) >= 2 and secret[0] == secret[-1] and secret[0] in "\"'":
        return f"{match.group('head')}{secret[0]}{MASK}{secret[0]}"
    return f"{match.group('head')}{MASK}"


def _mask_uri(match: re.Match[str]) -> str:
    whole, rest = match.group(0), match.group("rest")
    at = rest.rfind("@")
    colon = rest.find(":", 0, at)
    if at < 0 or colon < 0 or "/" in rest[:colon] or rest[colon + 1 : at] == MASK:
        return whole
    if _PORT.match(rest, colon + 1) and "/" in rest[colon + 1 : at]:
        return whole
    return f"{whole[: len(whole) - len(rest)]}{rest[: colon + 1]}{MASK}{rest[at:]}"


def _mask_key_values(text: str) -> str:
    """Hide the value after every key that names a secret.

    A loop rather than one ``sub``: the value of a harmless key (``url=https://x?token=abc``) is
    not consumed, so the keys inside it are still seen, and each character is looked at once.
    """
    parts: list[str] = []
    kept = pos = 0
    while (key := _KEY_SEP.search(text, pos)) is not None:
        pos = key.end()
        value = _VALUE.match(text, pos) if _SECRET_KEY.search(key.group("key")) else None
        if value is None or value.group().strip("\"'").lower() in _NOT_SECRETS:
            continue
        secret = value.group()
        quote = secret[0] if len(secret) >= 2 and secret[0] == secret[-1] and secret[0] in "\"'" else ""
        parts += [text[kept:pos], quote, MASK, quote]
        kept = pos = value.end()
    return "".join(parts) + text[kept:] if parts else text


def _mask_basic(match: re.Match[str]) -> str:
    secret = match.group("secret")
    encoded = (
        secret.endswith("=") or any(c.isdigit() or c in "+/" for c in secret) or not secret[1:].islower()
    )
    return f"{match.group('head')}{MASK}" if encoded else match.group(0)


def cut(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, ending in ``…`` when anything was cut.

    The last word of a cut text is dropped whole (half a secret is not recognisable as one),
    unless it is longer than half the limit: a text of one huge word keeps its start.
    """
    if len(text) <= limit:
        return text
    head = text[: limit - 1]
    space = max(head.rfind(" "), head.rfind("\n"), head.rfind("\t"))
    if len(head) - space - 1 <= limit // 2:
        head = head[: space + 1]
    return head + ELLIPSIS


def redact(text: str, limit: int | None = None) -> str:
    """Return ``text`` with secrets (passwords, tokens, keys, signatures, cookies) replaced by ``***``.

    :param limit: when set, the text is cut (see :func:`cut`) BEFORE it is redacted, so the work
        is bounded by what is kept, and the result has at most ``limit`` characters.

    Each pattern runs only when the text holds the literal it needs (``://``, ``bearer``, a key
    word...): a plain error message costs a few substring checks.
    """
    if limit is not None:
        text = cut(text, limit)
    lowered = text.lower()
    if "private key" in lowered:
        text = _PEM.sub(MASK, text)
    if "://" in text:
        text = _URI.sub(_mask_uri, text)
    if "hook" in lowered or "chat." in lowered:
        text = _WEBHOOK.sub(_mask_secret, text)
    if "cookie" in lowered:
        text = _COOKIE.sub(_mask_secret, text)
    if "authorization" in lowered:
        text = _AUTHORIZATION.sub(_mask_secret, text)
    if "bearer" in lowered:
        text = _BEARER.sub(_mask_secret, text)
    if "basic" in lowered:
        text = _BASIC.sub(_mask_basic, text)
    if any(word in lowered for word in _KEY_WORDS):
        text = _mask_key_values(text)
    return _STANDALONE.sub(MASK, text)
