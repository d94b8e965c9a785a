"""Vendor gitleaks' rules into the package as JSON: python tools/vendor_gitleaks.py GITLEAKS_TOML VERSION COMMIT.

Reads gitleaks' ``config/gitleaks.toml`` (MIT, https://github.com/gitleaks/gitleaks) and writes
``airflow_retry_provider/policy/data/gitleaks.json``: for each rule its id, regex, keywords, secret
group and entropy threshold, in the order gitleaks lists them. policy/ may not import a TOML or YAML
reader at run time, so the conversion happens here, once, when the rules are updated.

A rule is left out, and named in the file's ``dropped`` list with the reason, when RE2 cannot
compile its regex, when it has no keywords (it could not be gated by a substring check), or when it
is in ``DROPPED`` below (a rule whose shape the provider reads better with its own families).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import re2
import tomllib

OUT = Path(__file__).resolve().parents[1] / "airflow_retry_provider" / "policy" / "data" / "gitleaks.json"

DROPPED = {
    "generic-api-key": "any key named key/token/secret/password: the provider's key family reads them, with its own over-redaction rules",
    "curl-auth-user": "curl -u user:password: the CLI table (policy/data/cli_flags.json) reads it",
    "curl-auth-header": "curl -H 'Authorization: ...': the header family reads every Authorization value",
    "private-key": "PEM blocks: the provider's PEM family reads them to their END line",
    "jwt-base64": "base64 of a JWT: the entropy catch-all reads it",
}


# gitleaks' assignment rules: a key holding a vendor's name, a separator, then a value of a length
# (airtable_base='appX9k2LmQ7rT4vWz' is one). The provider judges a key by its meaning (the key
# family) and a bare value by its shape (the entropy family), so these are left out: they hide ids
# under a vendor's name (asana_client_id, plaid_client_id) that on-call reads.
ASSIGNMENT_PREFIX = "(?i)[\\w.-]{0,50}?(?:"
ASSIGNMENT = "an assignment rule (a vendor's name in the key): the key family judges keys by their meaning"


def _compiles(regex: str) -> str | None:
    try:
        re2.compile(regex)
    except re2.error as exc:
        return f"RE2 cannot compile it ({exc})"
    return None


def convert(toml_text: str, version: str, commit: str) -> dict[str, object]:
    config = tomllib.loads(toml_text)
    rules: list[dict[str, object]] = []
    dropped: list[dict[str, str]] = []
    for rule in config["rules"]:
        rule_id, regex = rule["id"], rule.get("regex")
        keywords = [word.lower() for word in rule.get("keywords", [])]
        reason = (
            DROPPED.get(rule_id)
            or (ASSIGNMENT if (regex or "").startswith(ASSIGNMENT_PREFIX) else None)
            or (None if regex else "no regex (a path rule)")
            or (None if keywords else "no keywords: it could not be gated by a substring check")
            or _compiles(regex)
        )
        if reason:
            dropped.append({"id": rule_id, "reason": reason})
            continue
        rules.append(
            {
                "id": rule_id,
                "regex": regex,
                "keywords": keywords,
                "group": rule.get("secretGroup", 0),
                "entropy": rule.get("entropy", 0),
            }
        )
    return {
        "source": "https://github.com/gitleaks/gitleaks/blob/master/config/gitleaks.toml",
        "version": version,
        "commit": commit,
        "licence": "MIT, Copyright (c) 2019 Zachary Rice",
        "rules": rules,
        "dropped": dropped,
    }


def main(argv: list[str]) -> int:
    if len(argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    data = convert(Path(argv[1]).read_text(encoding="utf-8"), argv[2], argv[3])
    OUT.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{OUT}: {len(data['rules'])} rules, {len(data['dropped'])} dropped")  # type: ignore[arg-type]
    for item in data["dropped"]:  # type: ignore[attr-defined]
        print(f"  dropped {item['id']}: {item['reason']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
