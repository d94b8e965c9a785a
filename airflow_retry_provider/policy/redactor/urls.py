"""URLs and HTTP headers: userinfo, query parameters, webhook paths, ``Cookie``, ``Authorization``
with any scheme word and its auth-params, and a bare credential after a scheme word."""

from __future__ import annotations

from typing import Any

from airflow_retry_provider.policy.engine import Pattern, pattern
from airflow_retry_provider.policy.redactor.judge import (
    _AUTHINFO_ITEMS,
    _NEXT_KEY,
    _authorization_id,
    _credential_scope,
    _digest_user,
    _has_digit,
    _id_key,
    _key_shaped,
    _looks_random,
    _looks_secret,
    _not_secret,
    _readable,
    _secret_column,
    _secret_key,
    _token_identity,
    _uuid,
)
from airflow_retry_provider.policy.redactor.spans import MASK, Span, _escaped_line_end, _matches, _spans_of

# scheme://user:password@host: the password runs to the LAST @ of the word, so it may hold / and @,
# unless an earlier @ is followed by a host and a path (_userinfo_end)
# (and a scheme that lost its colon: SQLAlchemy's "Could not parse rfc1738 URL from string 'trino//u:p@h'",
# or a slash: Uptrace's "can't parse DSN: "https:/<key>@api.uptrace.dev"")
_URI = pattern(r"(?:^|[^\w+.-])[a-zA-Z][\w+.-]*(?::?//|:/)([^\s\"'<>]+)")


# user:password@host without a scheme (curl --socks5 u:p@proxy, mysqlsh --uri u:p@db), the user perhaps
# after its domain (impacket's target, domain/user:password@host)
# (also with no user: redis-py's "connecting to :x@cache:6379"), or an e-mail address then :password,
# as a relay's credentials file writes it (Postfix's sasl_passwd: [smtp.example.org]:587 user@example.org:x);
# perhaps after an access method between colons (a CVSROOT's :pserver:user:x@host:/cvsroot)
_USERINFO = pattern(
    r"(?:^|[\s'\"=(\[,])(?::[a-z]+:)?(?:(?:[A-Za-z_][\w.-]*(?:/[A-Za-z_][\w.$-]*)?)?:([^\s:@/'\"]+)@[A-Za-z0-9][\w.-]*(:/)?"
    r"|[\w.+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+:([^\s:@/'\"]*[^\s\d:@/'\"),;\]][^\s:@/'\"]*)(?:[\s'\"]|$))"
)


# a path and its query without a scheme and host (an access log's "GET /callback?code=x HTTP/1.1")
_RELATIVE_URL = pattern(r"(?:^|[\s\"'(\[])(/[^\s\"'<>?]*\?[^\s\"'<>]+)")


# a client built from its server's URL and a token, as source code in a traceback shows it (PyCap's
# Project("https://host/api/", "<token>"), python-gitlab's Gitlab("https://host", "<token>"))
_URL_THEN_TOKEN = pattern(
    r"\([ \t]*[\"'][a-z][a-z0-9+.-]*://[^\"'\s]{1,256}[\"'][ \t]*,[ \t]*[\"']([^\"'\s]{16,256})[\"']"
)


# urllib3's error names a URL by its pool's host, then its path: HTTPSConnectionPool(host='h', port=443):
# Max retries exceeded with url: /e/<key> (Caused by ...)
_POOL_URL = pattern(
    r"ConnectionPool\(host='([^'\s/]{1,253})', port=\d{1,5}\): [^\r\n]{0,80}?with url: (/[^\s\"'<>]*)"
)


# secrets that travel in a URL path: chat webhooks, Telegram bot tokens
_WEBHOOK = pattern(
    # Slack's team and bot ids (T..., B...) name the workspace and the app, Discord's webhook id (a
    # snowflake, digits) names the hook; the last segment is the secret
    r"(?:hooks\.slack\.com/(?:services|workflows|triggers)/(?:[TBA][A-Z0-9]{6,14}/){0,2}"
    r"|discord(?:app)?\.com/api/webhooks/(?:[0-9]{17,20}/)?"
    r"|\.webhook\.office\.com/webhookb2/)([^\s\"'<>]+)"
    r"|api\.telegram\.org/(?:file/)?bot([^\s/\"'<>]+)",
    ignore_case=True,
)


# Cookie: a=b; c=d / Set-Cookie: id=... and Authorization: <scheme> <credentials>, any scheme
# (Bearer, Basic, NTLM, Negotiate, Digest...): the header and the rest of its line, with no
# group (RE2 then finds both ends with its DFA alone); _header_value() reads the value in Python.
# A cookie is hidden to its closing quote or the line's end; an authorization keeps its scheme
# word, and ends at a delimiter unless it is Digest's parameters.
_COOKIE = pattern(r"(?:^|[^\w-]|\\[rn])(?:set-)?cookie\\*[\"']?[ \t]*[:=][^\r\n]*", ignore_case=True)


_AUTHORIZATION = pattern(  # and a vendor's own: X-Authorization, X-Cybozu-Authorization, X-Goog-Authorization
    r"(?:^|[^\w-]|\\[rn])(?:proxy-|x-(?:[\w-]*-)?)?authori[sz]ation\\*[\"']?[ \t]*[:=][^\r\n]*",
    ignore_case=True,
)


# a server's directive sets the header with no colon, its value quoted: NXLog's AddHeaders
# Authorization "Splunk <token>", nginx's proxy_set_header Authorization "Bearer <token>"
_AUTHORIZATION_DIRECTIVE = pattern(
    r"(?:^|[^\w-])(?:proxy-|x-(?:[\w-]*-)?)?authori[sz]ation[ \t]+\\*[\"']([A-Za-z][\w.-]*)[ \t]+([^\s\"'\\]{8,})",
    ignore_case=True,
)


# a bare credential after its scheme word: Bearer <8+ chars>; Basic/NTLM/Negotiate <base64>; not the next
# flag of a command line (sqlmap's --auth-type=Basic --auth-cred=...)
_SCHEME = pattern(
    r"(?:^|[^\w-])(bearer|basic|ntlm|negotiate)[ \t]+([\w.~+/=][\w.~+/=-]{7,})", ignore_case=True
)


# on a Redis line a lone word before @host:port, which Redis reads as the password (redis://x@cache:6379)
_REDIS_USERINFO = pattern(r"(?:^|[\s'\"=(\[,])([^\s:@/'\"]+)@[A-Za-z0-9][\w.-]*:[0-9]{2,5}\b")


_SCHEMES = frozenset({"bearer", "basic", "token", "digest", "negotiate", "ntlm", "aws4-hmac-sha256", "hmac",
                      "sharedkey", "sharedkeylite", "apikey", "key", "dpop", "mac", "oauth", "otp", "sso-key"})  # fmt: skip


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


# a host after a userinfo's @: a dotted name or a name with a port, then the path's first /
_HOST_THEN_PATH = pattern(r"(?:[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+(?::[0-9]{1,5})?|[A-Za-z0-9-]+:[0-9]{1,5})/$")


_USERINFO_ATS = 16
"""At most this many @ before a URL's first / are tried as the end of its userinfo."""


def _userinfo_end(rest: str) -> int:
    """The @ that ends the userinfo of ``rest``: the LAST @ (a password may hold / and @), unless an
    earlier @ is followed by a host and then a path: the later ones are then in the path (the Go
    module proxy's ``/@v/v1.8.3.info``, npm's ``/@scope/name``, ``/pkg@1.2.3``)."""
    last = rest.rfind("@")
    slash = rest.find("/")  # the path starts at the first / after the userinfo's @
    at = rest.find("@")
    for _ in range(_USERINFO_ATS):
        if not 0 <= at < slash < last:
            break
        if _HOST_THEN_PATH.match(rest[at + 1 : slash + 1]) is not None:
            return at
        at = rest.find("@", at + 1)
    return last


def _uri_rest(text: str, start: int, rest: str, end: int, spans: list[Span]) -> None:
    """The password of one URI whose text after ``://`` is ``rest`` (at ``start`` in ``text``)."""
    at = _userinfo_end(rest)
    if at < 0:
        _uri_spaced(text, end, start, rest, spans)
        return
    colon = rest.find(":", 0, at)
    if colon < 0 and "/" not in rest[:at] and (_looks_random(rest[:at]) or _key_shaped(rest[:at])):
        spans.append(
            (start, start + at)
        )  # a key as the user (Sentry's DSN: https://<key>@o1.ingest.sentry.io/2, Gemfury's push URL)
        return
    if colon < 0 or "/" in rest[:colon] or _not_secret(rest[colon + 1 : at]):
        return
    if not _is_port_then_path(rest, colon, at):
        # a random user is a key's id given with its secret (TestingBot's https://<32 hex>:<secret>@hub...)
        spans.append((start if _looks_random(rest[:colon]) else start + colon + 1, start + at))


MAX_QUERY_PARAMETERS = 32
"""At most this many parameters of one URL's query are judged by their shape."""


# a query parameter whose name says its value is a hash, a version or a trace: its shape is no clue
_QUERY_HASH_KEYS = ("sha", "md5", "hash", "digest", "commit", "checksum", "etag", "rev", "ref", "version", "trace",
                    "span", "request", "correlation", "fingerprint", "oid", "uuid", "guid", "integrity")  # fmt: skip


# query parameters that carry a credential by their protocol: OAuth 2.0's authorization code and
# client assertion (RFC 6749 4.1.2, RFC 7523), CAS's service ticket, SAML's response, a one-time code
_QUERY_CREDENTIALS = frozenset({"code", "assertion", "client_assertion", "ticket", "samlresponse", "otp"})


# a resource's structured name (an OCID, an ARN, a URN): an id, whatever its random part looks like
_RESOURCE_NAMES = ("ocid1.", "arn:", "urn:", "arn%3a", "urn%3a", "/")
"""A resource's name, not a credential: an OCID, an ARN, a URN, a path (Azure ML's
``?wsid=/subscriptions/<uuid>/.../workspaces/<name>``, whose random pieces the shapes family judges each)."""


# a query whose user is named gives its password as p= (InfluxDB 1.x: ?u=x&p=y)
_QUERY_USERS = ("u=", "user=", "username=")


def _one_letter_key(key: str, value: str) -> bool:
    """A one-letter parameter, whose name says nothing, holding 12+ letters and digits of both cases:
    a key given in a callback URL (Gumroad's ``post_url=https://x/ping?k=<16>``), not a page or a term."""
    return (
        len(key) == 1
        and key.isalpha()
        and key.lower() != "q"  # a search's terms
        and len(value) >= 12
        and value.isalnum()
        and value.isascii()
        and _has_digit(value)
        and not value.islower()
        and not value.isupper()
    )


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
                or _one_letter_key(key, value)
            ) and not value.isdigit():
                value_start = offset + len(key) + 1
                spans.append((value_start, value_start + len(value)))
                secret = True
            elif (
                not any(word in key.lower() for word in _QUERY_HASH_KEYS)
                and not _id_key(key)
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


_DIGEST_ALGORITHMS = ("sha256:", "sha512:")
"""What an image reference's digest starts with, after its tag's ``@``."""


def _userinfo(text: str, spans: list[Span]) -> None:
    for match in _matches(_USERINFO, text, spans):
        if match.group(3) is not None:
            if match.group(3) != MASK:
                spans.append(match.span(3))  # user@domain:password
            continue
        start, end = match.span(1)
        method = text[match.start() : start].lstrip(" \t\r\n'\"=([,").startswith(":")  # :pserver:user:x@
        if match.group(2) and not method:
            continue  # a backend's scp-style location (restic's sftp:user@host:/path): a name, no password
        if _NEXT_KEY.search(match.group(1)):
            continue  # an ODBC string's next keys (Server=tcp:host,1433;Database=x;PWD=y@z): the key family's
        if text.startswith(_DIGEST_ALGORITHMS, end + 1):
            continue  # an image's tag and digest (library/nginx:1.25@sha256:...), not user:password@host
        if text[start - 3 : start] in _AUTHINFO_ITEMS:
            continue  # sendmail's authinfo item, "U:user@domain": a user's address, no password
        if not text[start:end].isdigit() and text[start:end] != MASK:
            spans.append((start, end))


def _relative_urls(text: str, spans: list[Span], readable: list[Span]) -> None:
    for match in _matches(_RELATIVE_URL, text, spans):
        _query(match.start(1), match.group(1), spans, readable)


_HOOK_SEGMENTS = frozenset({"hook", "hooks", "webhook", "webhooks", "webhookb2", "robot"})


def _hook_segment(segment: str) -> bool:
    """A segment or a host's label naming hooks, however spelt (``webhooks``, ApiX-Drive's ``web-hooks``)."""
    return segment.lower().replace("-", "").replace("_", "") in _HOOK_SEGMENTS


def _hook_path(start: int, rest: str, spans: list[Span]) -> None:
    """A URL whose path is its credential: after a ``hook``/``hooks``/``webhook``/``webhooks``
    segment (Feishu's ``/bot/v2/hook/<uuid>``, Zapier's ``/hooks/catch/<id>/<key>``), each later
    segment that is not a number or a word without digits is hidden; after such a host, the first
    segment (Spike.sh's ``hooks.spike.sh/<key>/push-events``; Slack's ``/services/`` is a word), the
    second after a route of one or two letters (Gitter's ``webhooks.gitter.im/e/<key>``), or the first
    keyed one after an account's number (Latenode's ``webhook.latenode.com/<number>/prod/<key>``)."""
    path = rest.split("?", 1)[0].split("#", 1)[0]
    segments = path.split("/")
    offset = len(segments[0]) + 1
    hook_host = _hook_segment(_host(segments[0]).partition(".")[0])
    key_index = 1 if len(segments) > 2 and 1 <= len(segments[1]) <= 2 and segments[1].isalpha() else 0
    after_hook = numbered = False
    for index, segment in enumerate(segments[1:]):
        keyed = segment and not segment.isdigit() and (not _readable(segment) or _has_digit(segment))
        if keyed and (after_hook or (hook_host and index == key_index)):
            spans.append((start + offset, start + offset + len(segment)))
        numbered = numbered or segment.isdigit()
        if hook_host and index == key_index and not keyed and numbered and index + 2 < len(segments):
            key_index += 1  # an account's number, perhaps a word, then the key (Latenode's /<id>/prod/<uuid>)
        after_hook = after_hook or _hook_segment(segment)
        offset += len(segment) + 1


def _url_then_tokens(text: str, spans: list[Span]) -> None:
    """A call's string after its first argument, a URL: the client's token when it is shaped as one
    (letters and digits, not made of words), not a path, a version or a name."""
    for match in _matches(_URL_THEN_TOKEN, text, spans):
        value = match.group(1)
        shaped = value.replace("-", "").replace("_", "").isalnum() and not value.isdigit()
        if shaped and _has_digit(value) and not _readable(value):
            spans.append(match.span(1))


def _pool_urls(text: str, spans: list[Span]) -> None:
    """urllib3's host and path, read as one URL for a webhook host's key (``host='webhooks.gitter.im'``
    then ``url: /e/<key>``)."""
    for match in _matches(_POOL_URL, text, spans):
        host, path = match.group(1), match.group(2)
        _hook_path(match.start(2) - len(host), host + path, spans)


def _host(authority: str) -> str:
    """The host of a URL's authority (``user:x@hooks.example.com:443``: ``hooks.example.com``)."""
    return authority.rpartition("@")[2].partition(":")[0]


_INTAKE_WORDS = ("receiver", "ingest", "intake", "collector", "ping")
"""Words of a host's first label that name an endpoint taking data by a key in its path."""


def _host_key(start: int, rest: str, spans: list[Span]) -> None:
    """A UUID as the first label of a URL's host is the endpoint's key (Tray.io's trigger URL
    ``https://<uuid>.trayapp.io``): a host names its service by its other labels. So is a UUID as
    the first segment of an intake host's path (Sematext's ``logsene-receiver.sematext.com/<uuid>/_bulk``,
    Healthchecks' ``hc-ping.com/<uuid>``): such an endpoint is told whose data it takes by its key."""
    authority, _, path = rest.partition("/")
    label = _host(authority).partition(".")[0]
    if _uuid(label):
        begin = start + authority.rfind("@") + 1
        spans.append((begin, begin + len(label)))
    segment = path.split("/", 1)[0].split("?", 1)[0]
    if _uuid(segment) and any(word in label.lower() for word in _INTAKE_WORDS):
        begin = start + len(authority) + 1
        spans.append((begin, begin + len(segment)))


def _webhooks(text: str, spans: list[Span], readable: list[Span]) -> None:
    """A chat webhook's secret path; the account and app ids before it (Slack's ``T...``/``B...``)
    stay readable, so the random-run catch-all does not hide them either."""
    for match in _matches(_WEBHOOK, text, spans):
        for index in (1, 2):
            start, end = match.span(index)
            if start >= 0:
                if end > start and text[start:end] != MASK:
                    spans.append((start, end))
                readable.append((match.start(), start))
                break


def _uri(text: str, spans: list[Span], readable: list[Span]) -> None:
    for match in _matches(_URI, text, spans):
        start, end = match.span(1)
        rest = match.group(1)
        _uri_rest(text, start, rest, end, spans)
        _query(start, rest, spans, readable)
        if "hook" in rest.lower() or "robot" in rest.lower():
            _hook_path(start, rest, spans)
        # a host (after :/ stands a path: dbfs:/mnt/...), not a password manager's item
        # (dl://<uuid>/password): a reference names no endpoint
        scheme = match.start() + (not text[match.start()].isalpha())  # the match starts a character before it
        if text[start - 2 : start] == "//" and not _not_secret(text[scheme:end]):
            _host_key(start, rest, spans)
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


_ANALYTICS_COOKIES = ("_ga", "_gid", "_gat", "_gcl_", "_fbp", "_fbc", "__utm", "_hjid", "_hjsession", "ajs_anonymous_id")  # fmt: skip
"""Cookies that count visits, as their vendors document them (Google Analytics' ``_ga=GA1.2.<id>.<time>``, Google Ads',
Meta's pixel, Hotjar's, Segment's anonymous id): a visitor's random id, no session's credential."""


def _cookie(text: str, spans: list[Span]) -> None:
    """A cookie header's value, hidden but for the analytics cookies among its pairs (each run of the other
    pairs is one ``***``)."""
    for match in _matches(_COOKIE, text, spans):
        start, end = _header_value(text, match, "")
        if end <= start or text[start:end] == MASK:
            continue
        hidden = at = start
        for pair in text[start:end].split(";"):
            if pair.strip().startswith(_ANALYTICS_COOKIES):
                if at > hidden:
                    spans.append((hidden, at - 1))  # up to the ";" before this pair
                hidden = at + len(pair) + 1
            at += len(pair) + 1
        while hidden < end and text[hidden] == " ":
            hidden += 1  # the space after the last analytics cookie's ";"
        if end > hidden:
            spans.append((hidden, end))


def _authorization(text: str, spans: list[Span]) -> None:
    for match in _matches(_AUTHORIZATION, text, spans):
        start, end = match.span()
        digest = text[start:end].lower().find("digest")
        start, end = _header_value(text, match, "" if 0 <= digest < 40 else "\"'&,;")
        value = text[start:end]
        if value[:7].lower() == "digest:":  # ZooKeeper's digest:user:password, not HTTP's Digest scheme
            digest, start = -1, start + (_digest_user(value) or len("digest:"))
            value = text[start:end]
        scheme, _, rest = value.partition(" ")
        line = text[start : _escaped_line_end(text, start, match.end())]
        parameters = _AUTH_PARAMETERS.match(line[len(scheme) :].lstrip(" \t")) is not None
        if rest.strip() and (_scheme_word(scheme) or (parameters and "=" not in scheme)):
            # keep the scheme: "Bearer ***", "GenieKey ***", WECHATPAY2-SHA256-RSA2048 mchid="1", signature="***"
            start += len(scheme) + len(rest) - len(rest.lstrip(" \t")) + 1
        line = text[start : _escaped_line_end(text, start, match.end())]
        quoted = line[: min((i for i in (line.find("'"), line.find('"')) if i >= 0), default=len(line))]
        if "%26" in quoted or ("&" in quoted and "=" in quoted):
            continue  # a parameter list (Cosmos DB's type=master&ver=1.0&sig=x): each judged by its name; a
            # quoted header's value ends at its quote (curl -H 'Authorization: id:***' 'https://h/?a=1&b=2')
        if _AUTH_PARAMETERS.match(line):
            _auth_parameters(text, start, start + len(line), spans)  # Hawk id="x", ts="1", mac="***"
            continue
        equals = text.find("=", start, end)
        name = text[start:equals] if equals >= 0 else ""
        if _object_id_parameter(name) or (name == "Credential" and _credential_scope(text[equals + 1 : end])):
            continue  # DiadocAuth ddauth_api_client_id=<id>: a client's id, named so, is no credential
        if name.isalpha():
            start = equals + 1  # AWS4-HMAC-SHA256 Credential=***: the parameter's name stays
        if digest < 0 or digest >= 40:  # one credential: to the next space (Digest's run to the end)
            space = min(
                (i for i in (text.find(" ", start, end), text.find("\t", start, end)) if i >= 0), default=end
            )
            end = space
            # Proxmox's PVEAPIToken=user@realm!tokenid=***, Uploadcare.Simple <public key>:***
            start += _token_identity(text[start:end]) or _authorization_id(text[start:end])
        while end > start and text[end - 1] in " \t":
            end -= 1
        if end > start and not _not_secret(text[start:end]):
            spans.append((start, end))


def _object_id_parameter(name: str) -> bool:
    """An unquoted auth-param's name that names an object's id, not a credential's (Diadoc's
    ``ddauth_api_client_id``; not a session's id)."""
    return name.replace("_", "").replace("-", "").isalnum() and _id_key(name) and not _secret_key(name)


# a scheme's quoted auth-params (RFC 7235): Hawk id="x", ts="1", nonce="y", mac="z"
_AUTH_PARAMETERS = pattern(r"[A-Za-z_][\w-]*=\\*\"[^\"\r\n]*\"[ \t]*,[ \t]*[A-Za-z_][\w-]*=\\*\"")


_AUTH_PARAMETER = pattern(r"([A-Za-z_][\w-]*)=\\*\"([^\"\r\n\\]*)")


# the auth-params that carry the proof: Hawk's mac, OAuth 1.0's oauth_signature and oauth_token,
# Digest's response and its nonces (the pair replays while the server's nonce is valid)
_PROOF_PARAMETERS = frozenset({"mac", "signature", "sig", "oauth_signature", "oauth_token", "token", "response", "nonce", "cnonce"})  # fmt: skip


def _auth_parameters(text: str, start: int, end: int, spans: list[Span]) -> None:
    """Each quoted auth-param after a scheme word (any scheme: Digest, Hawk, WECHATPAY2-SHA256-RSA2048):
    the proof's value is hidden; the ids, the time and a certificate's serial stay."""
    for match in _matches(_AUTH_PARAMETER, text[start:end], []):
        if match.group(1).lower() in _PROOF_PARAMETERS and match.group(2):
            spans.append((start + match.start(2), start + match.end(2)))


def _authorization_directive(text: str, spans: list[Span]) -> None:
    for match in _matches(_AUTHORIZATION_DIRECTIVE, text, spans):
        if _scheme_word(match.group(1)) and not _not_secret(match.group(2)):
            spans.append(match.span(2))


def _scheme_word(word: str) -> bool:
    """An authorization scheme's name, whatever it is (``Bearer``, ``GenieKey``, ``Splunk``, ``SSWS``,
    ``AWS4-HMAC-SHA256``, ``SharedKey``, ``Uploadcare.Simple``): a known one, or a short word of letters (a few digits and
    dashes at most) that does not look random. The credential after it is hidden, the word kept."""
    if word.lower() in _SCHEMES:
        return True
    letters = word.replace("-", "").replace("_", "").replace(".", "")  # Uploadcare.Simple
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
            start, end = match.span(2)
            if not text.startswith(MASK, end):  # Bearer 802119644.***: hidden already, its number kept
                spans.append((start + _authorization_id(text[start:end]), end))


# an RTMP URL's last path segment, after its application's: the stream key a live-streaming service
# hands out (Twitch's rtmp://live.twitch.tv/app/<key>, YouTube's rtmp://a.rtmp.youtube.com/live2/<key>)
_STREAM_KEY = pattern(r"(?i:\brtmp[est]{0,2})://[^\s/'\"]+(?:/[^\s/'\"?#]+)+/([^\s/'\"?#&]{16,256})")


def _stream_keys(text: str, spans: list[Span]) -> None:
    for match in _matches(_STREAM_KEY, text, spans):
        if _looks_secret(match.group(1)):
            spans.append(match.span(1))


PATTERNS: tuple[Pattern, ...] = (
    _URI, _RELATIVE_URL, _URL_THEN_TOKEN, _POOL_URL, _USERINFO, _WEBHOOK, _REDIS_USERINFO, _COOKIE, _AUTHORIZATION,
    _AUTHORIZATION_DIRECTIVE, _AUTH_PARAMETERS,
    _AUTH_PARAMETER, _SCHEME, _HOST_THEN_PATH, _STREAM_KEY,
)  # fmt: skip
"""This module's patterns (the linear-time test runs each on adversarial input)."""


def find(text: str, lowered: str, spans: list[Span], readable: list[Span]) -> None:
    """The secrets of URLs and HTTP headers; ``readable`` gets a URL's path beside its query's secret."""
    if "//" in text or ":/" in text:
        _uri(text, spans, readable)
    if "/" in text and "?" in text and "=" in text:
        _relative_urls(text, spans, readable)
    if "(" in text and "://" in text:
        _url_then_tokens(text, spans)
    if "@" in text and ":" in text:
        _userinfo(text, spans)
    if "hook" in lowered or "telegram" in lowered:
        _webhooks(text, spans, readable)
        if "connectionpool(" in lowered:
            _pool_urls(text, spans)
    if "@" in text and ("redis" in lowered or "valkey" in lowered):
        _spans_of(_REDIS_USERINFO, text, spans)
    if "cookie" in lowered:
        _cookie(text, spans)
    if "authori" in lowered:
        _authorization(text, spans)
        _authorization_directive(text, spans)
    if "bearer" in lowered or "basic" in lowered or "ntlm" in lowered or "negotiate" in lowered:
        _scheme(text, spans)
    if "rtmp" in lowered:
        _stream_keys(text, spans)
