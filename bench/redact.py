"""Redaction benchmark: the worst time of ``redact()`` over adversarial inputs of 1, 10 and 100 KB.

Each input repeats a fragment that made a pattern backtrack before (key words, half URIs, half
tokens, unterminated quotes and PEM blocks) and ends with real secrets, which must be gone.
Prints, per size, the worst input and its time, judged against the target: 100 KB in under
50 ms. The time judged is the CPU time of the redacting thread (what it holds the GIL for), best
of a few runs; the wall time is printed next to it, as it also counts the other processes of a
shared machine. Exits 1 when a target is MISSED or a secret survived. Run: ``.venv/bin/python bench/redact.py``.
"""

from __future__ import annotations

import os
import sys
import time

from airflow_retry_provider.policy.redact import redact

SIZES_KB = (1, 10, 100)
TARGET_100KB_S = 0.050
RUNS = 9
SECRETS = " password=hunter2 postgresql://bob:p@ss/w0rd@db/x Cookie: sid=c00kie ghp_" + "Z" * 36
FRAGMENTS = (
    "-password",  # took 5 s at 3.6 KB before the patterns were made linear
    "password=",
    "password :",
    'api_key: "',
    "token= ",
    "a://b:",
    "a://b:c@",
    "x-eyJa.",
    "eyJa-",
    "xoxb-",
    "sk-",
    "Bearer ",
    "basic ",
    "Authorization: ",
    "Cookie: ",
    "-----BEGIN PRIVATE KEY-----",
    "hooks.slack.com/services/ ",
    "AKIA",
    " ",
    "x",
)


def adversarial(fragment: str, size: int) -> str:
    return (fragment * (size // len(fragment) + 1))[: size - len(SECRETS)] + SECRETS


def best_time(text: str) -> tuple[float, float, str]:
    """The best CPU time (this thread's) and the best wall time of a few runs, and the result."""
    best_cpu = best_wall = float("inf")
    result = ""
    for _ in range(RUNS):
        cpu, wall = time.thread_time(), time.perf_counter()
        result = redact(text)
        best_cpu = min(best_cpu, time.thread_time() - cpu)
        best_wall = min(best_wall, time.perf_counter() - wall)
    return best_cpu, best_wall, result


def main() -> int:
    print("=== redaction benchmark ===")
    print(
        f"load average {os.getloadavg()[0]:.2f}; {len(FRAGMENTS)} adversarial inputs per size, each ending in real secrets; best of {RUNS} runs each"
    )
    failed = False
    worst_by_size = {}
    for kb in SIZES_KB:
        worst, worst_wall, worst_fragment = 0.0, 0.0, ""
        for fragment in FRAGMENTS:
            elapsed, wall, result = best_time(adversarial(fragment, kb * 1024))
            worst_wall = max(worst_wall, wall)
            leaked = [s for s in ("hunter2", "p@ss", "w0rd", "c00kie", "ghp_ZZZ") if s in result]
            if leaked:
                print(f"  LEAK: {kb} KB of {fragment!r} kept {leaked}")
                failed = True
            if elapsed > worst:
                worst, worst_fragment = elapsed, fragment
        worst_by_size[kb] = worst
        target = TARGET_100KB_S  # the 100 KB target; smaller inputs must meet it too
        verdict = "OK" if worst <= target else "MISSED"
        failed |= verdict == "MISSED"
        print(
            f"{kb:>4} KB: worst {worst * 1000:8.3f} ms CPU ({worst_fragment!r}; wall {worst_wall * 1000:.3f} ms)   "
            f"target <= {target * 1000:.1f} ms   {verdict}"
        )
    growth = worst_by_size[100] / worst_by_size[10]
    print(
        f"100 KB / 10 KB worst-time ratio: {growth:.1f} (linear is about 10; the old patterns grew about 1000x)"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
