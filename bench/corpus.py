"""Corpus benchmark: how many messages of each corpus in tests/data hold under ``redact()``.

A message holds when none of its secrets is in ``redact(message)`` nor in ``redact(message, 500)``
and every string of its keep list is in ``redact(message)``. For each corpus fitted to (``FITTED``,
each with its history: how many of its entries held at first sight and in which round it was fitted)
it prints the entries held out of the total, the percentage, the target and a verdict, then each
failure with what leaked and what was lost. Every fitted corpus's target is 100 %; an entry named in
holdout_known_failures.yaml (tool: reason) is printed as a known failure and does not fail the
verdict. A held-out set nothing was fitted to (listed in ``MEASURED``, when it is placed in
tests/data) is measured and printed beside the issue's 97 % target without deciding the exit code,
with its failures and the share of its messages that leak no secret (an over-redaction is on the
safe side: it loses what on-call reads, not a secret).
Run: ``.venv/bin/python bench/corpus.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

from airflow_retry_provider.policy import redact

DATA = Path(__file__).resolve().parents[1] / "tests" / "data"
FITTED = {
    "leaks.yaml": "the corpus the rules were written from",
    "unseen.yaml": "messages of tools no rule was written for",
    "holdout.yaml": "kept from the redactor's authors during its first round",
    "holdout2.yaml": "held out from rounds one and two, fitted in round three",
    "holdout3.yaml": "80/100 at first sight (rounds one to three), fitted in round four",
    "holdout4a.yaml": "54/60 at first sight, fitted in round five",
    "round5.yaml": "written in round five for holdout4a's neighbouring classes: 23 of its first 26 held",
    "holdout4b.yaml": "52/60 at first sight (rounds four and five alike), fitted in round six",
    "holdout5.yaml": "45/60 at first sight (round six), fitted in round seven",
    "holdout6.yaml": "48/60 at first sight (round seven), fitted in round eight",
    "holdout7.yaml": "56/60 at first sight (round eight; 54/60 under round seven), fitted in round nine",
    "holdout8.yaml": "51/60 at first sight (round nine), fitted in round ten",
    "holdout9.yaml": "52/60 at first sight (rounds nine and ten), fitted in round eleven",
    "holdout10.yaml": "49/60 at first sight (rounds nine to eleven), fitted in round twelve",
    "holdout11.yaml": "50/60 at first sight (round twelve), fitted in round thirteen",
    "holdout12.yaml": "51/60 at first sight (rounds twelve and thirteen), fitted in round fourteen",
    "holdout13.yaml": "51/60 at first sight (rounds thirteen and fourteen), fitted in round fifteen",
    "holdout14.yaml": "52/60 at first sight (rounds fourteen and fifteen), fitted in round sixteen",
    "holdout15.yaml": "55/60 at first sight (round fifteen), fitted in round sixteen",
    "holdout16.yaml": "48/60 at first sight (round sixteen), fitted in round seventeen",
    "holdout17.yaml": "52/60 at first sight (rounds sixteen and seventeen), fitted in round eighteen",
    "holdout18.yaml": "52/60 at first sight (round eighteen), fitted in round nineteen",
    "holdout19.yaml": "56/60 at first sight (round nineteen), fitted in round twenty",
    "holdout20.yaml": "50/60 at first sight (round twenty), fitted in round twenty-one",
    "holdout21.yaml": "52/60 at first sight (round twenty-one), fitted in round twenty-two",
    "holdout22.yaml": "44/60 at first sight (round twenty-two), fitted in round twenty-three",
    "holdout23.yaml": "54/60 at first sight (round twenty-three), fitted in round twenty-four",
    "holdout24.yaml": "50/60 at first sight (round twenty-four), fitted in round twenty-five",
    "holdout25.yaml": "52/60 at first sight (round twenty-five), fitted in round twenty-six",
    "holdout26.yaml": "47/60 at first sight (round twenty-six), fitted in round twenty-seven",
    "holdout27.yaml": "45/60 at first sight (round twenty-seven), fitted in round twenty-eight",
    "holdout28.yaml": "48/60 at first sight (round twenty-eight), fitted in round twenty-nine",
    "holdout29.yaml": "55/60 at first sight (round twenty-nine), fitted in round thirty",
    "holdout30.yaml": "54/60 at first sight (round thirty), fitted in round thirty-one",
    "holdout31.yaml": "55/60 at first sight (round thirty-one), fitted in round thirty-two",
    "holdout32.yaml": "54/60 at first sight (round thirty-two), fitted in round thirty-three",
    "holdout33.yaml": "53/60 at first sight (round thirty-three), fitted in round thirty-four",
    "holdout34.yaml": "53/60 at first sight (round thirty-four), fitted in round thirty-five",
    "holdout35.yaml": "52/60 at first sight (round thirty-five), fitted in round thirty-six",
    "holdout36.yaml": "53/60 at first sight (round thirty-six), fitted in round thirty-seven",
    "holdout37.yaml": "50/60 at first sight (round thirty-seven), fitted in round thirty-eight",
    "holdout38.yaml": "52/60 at first sight (rounds thirty-seven and thirty-eight), fitted in round thirty-nine",
    "holdout39.yaml": "53/60 at first sight (rounds thirty-eight and thirty-nine), fitted in round forty",
    "holdout40.yaml": "53/60 at first sight (rounds thirty-nine and forty), fitted in round forty-one",
    "holdout41.yaml": "48/60 at first sight (rounds forty and forty-one), fitted in round forty-two",
    "holdout42.yaml": "46/60 at first sight (rounds forty-one and forty-two), fitted in round forty-three",
    "holdout43.yaml": "43/60 at first sight (rounds forty-two and forty-three), fitted in round forty-four",
    "holdout44.yaml": "48/60 at first sight (rounds forty-three and forty-four), fitted in round forty-five",
    "holdout45.yaml": "48/60 at first sight (rounds forty-four and forty-five), fitted in round forty-six",
    "holdout46.yaml": "48/60 at first sight (rounds forty-five and forty-six), fitted in round forty-seven",
    "holdout47.yaml": "52/60 at first sight (rounds forty-six and forty-seven), fitted in round forty-eight",
    "holdout48.yaml": "54/60 at first sight (rounds forty-seven and forty-eight), fitted in round forty-nine",
    "holdout49.yaml": "55/60 at first sight (rounds forty-eight and forty-nine), fitted in round fifty",
    "holdout50.yaml": "54/60 at first sight (rounds forty-nine and fifty), fitted in round fifty-one",
    "holdout51.yaml": "57/60 at first sight (rounds fifty and fifty-one), fitted in round fifty-two",
    "holdout52.yaml": "51/60 at first sight (rounds fifty-one and fifty-two), fitted in round fifty-three",
    "holdout53.yaml": "50/60 at first sight (rounds fifty-two and fifty-three), fitted in round fifty-four",
    "holdout54.yaml": "39/60 at first sight (rounds fifty-three and fifty-four), fitted in round fifty-five",
    "holdout55.yaml": "46/60 at first sight (rounds fifty-four and fifty-five), fitted in round fifty-six",
    "holdout56.yaml": "46/60 at first sight (rounds fifty-five and fifty-six), fitted in round fifty-seven",
    "holdout57.yaml": "55/60 at first sight (rounds fifty-six and fifty-seven), fitted in round fifty-eight",
    "holdout58.yaml": "47/60 at first sight (rounds fifty-seven and fifty-eight), fitted in round fifty-nine",
    "holdout59.yaml": "44/60 at first sight (rounds fifty-eight and fifty-nine), fitted in round sixty",
    "holdout60.yaml": "54/60 at first sight (rounds fifty-nine and sixty), fitted in round sixty-one",
    "holdout61.yaml": "48/60 at first sight (round sixty-one; 47/60 under round sixty), fitted in round sixty-two",
    "holdout62.yaml": "48/60 at first sight (rounds sixty-one and sixty-two), fitted in round sixty-three",
    "holdout63.yaml": "56/60 at first sight (rounds sixty-two and sixty-three), fitted in round sixty-four",
    "holdout64.yaml": "53/60 at first sight (rounds sixty-three and sixty-four), fitted in round sixty-five",
    "holdout65.yaml": "50/60 at first sight (rounds sixty-four and sixty-five), fitted in round sixty-six",
    "holdout66.yaml": "50/60 at first sight (rounds sixty-five and sixty-six), fitted in round sixty-seven",
    "holdout67.yaml": "56/60 at first sight (rounds sixty-six and sixty-seven), fitted in round sixty-eight",
    "holdout68.yaml": "52/60 at first sight (rounds sixty-seven and sixty-eight), fitted in round sixty-nine",
    "holdout69.yaml": "52/60 at first sight (rounds sixty-eight and sixty-nine), fitted in round seventy",
    "holdout70.yaml": "57/60 at first sight (rounds sixty-nine and seventy), fitted in round seventy-one",
    "holdout71.yaml": "51/60 at first sight (rounds seventy and seventy-one), fitted in round seventy-two",
    "holdout72.yaml": "51/60 at first sight (rounds seventy-one and seventy-two), fitted in round seventy-three",
    "holdout73.yaml": "55/60 at first sight (rounds seventy-two and seventy-three), fitted in round seventy-four",
}
"""Every corpus fitted to, with its history (a first-sight count is under the round named)."""
TARGETS = {name: 100.0 for name in FITTED}
"""The share of entries that must hold, per file, known failures aside (issue 54)."""
MEASURED: dict[str, float] = {"holdout74.yaml": 97.0}  # written after round seventy-three, never fitted
"""Held-out sets nothing was fitted to: their figure says whether the design generalises, printed
beside the issue's target; a miss is reported, not a failure of the run (nothing may be fitted to them)."""
KNOWN_FAILURES = DATA / "holdout_known_failures.yaml"
"""Held-out entries that still fail, each with the reason (tool: reason)."""


def judged(entry: dict[str, object]) -> tuple[list[str], list[str]]:
    """Which of an entry's secrets survive ``redact()`` (whole or cut to 500), and which of its keep strings are lost."""
    message = str(entry["message"])
    whole, cut = redact(message), redact(message, 500)
    leaked = [s for s in entry["secrets"] or () if s in whole or s in cut]  # type: ignore[attr-defined]
    lost = [k for k in entry["keep"] or () if k not in whole]  # type: ignore[attr-defined]
    return leaked, lost


def failures(entries: list[dict[str, object]], known: dict[str, str] | None = None) -> list[str]:
    """One line per entry that does not hold: its tool, what leaked, what was lost; a known one says so."""
    known = known or {}
    lines = []
    for entry in entries:
        leaked, lost = judged(entry)
        if leaked or lost:
            note = f" (known: {known[str(entry['tool'])]})" if entry["tool"] in known else ""
            lines.append(f"  - {entry['tool']} [{entry['family']}]: leaked={leaked} lost={lost}{note}")
    return lines


def corpus(name: str) -> list[dict[str, object]] | None:
    """The entries of tests/data/``name``, or None (said) when the file is not there."""
    path = DATA / name
    if not path.exists():
        print(f"{name}: not present")
        return None
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def main() -> int:
    missed = False
    known = (
        yaml.safe_load(KNOWN_FAILURES.read_text(encoding="utf-8")) or {} if KNOWN_FAILURES.exists() else {}
    )
    for name, target in TARGETS.items():
        entries = corpus(name)
        if entries is None:
            continue
        failed = failures(entries, known)
        held = len(entries) - len(failed)
        share = 100 * held / len(entries)
        aside_count = sum(1 for line in failed if "(known: " in line)
        verdict = "OK" if 100 * (held + aside_count) / len(entries) >= target else "MISSED"
        missed = missed or verdict == "MISSED"
        aside = f", {aside_count} known failures aside" if aside_count else ""
        print(
            f"{name}: {held}/{len(entries)} held ({share:.1f} %)   target >= {target:.0f} %{aside}   {verdict}"
        )
        for line in failed:
            print(line)
    for name, target in MEASURED.items():
        entries = corpus(name)
        if entries is None:
            continue
        failed = failures(entries)
        held, safe = len(entries) - len(failed), sum(1 for entry in entries if not judged(entry)[0])
        share = 100 * held / len(entries)
        verdict = "reached" if share >= target else "NOT REACHED"
        print(
            f"{name} (held out, not fitted): {held}/{len(entries)} held ({share:.1f} %)"
            f"   target >= {target:.0f} % {verdict}"
            f"   no secret leaked: {safe}/{len(entries)} ({100 * safe / len(entries):.1f} %)"
        )
        for line in failed:
            print(line)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
