"""Sums doctest's test-case totals over meson test logs and prints the closing line 'N passed, N failed' (with
', N skipped' when any case was skipped).

Skipped cases are those doctest filtered out: the GPU tests without a CUDA device (tests/gpu_test_main.cpp), which
then exit 77 and meson reports SKIP; their host-side cases that ran are counted as passed or failed. A test executable
that failed without a doctest summary (a crash, a sanitizer abort, a timeout) counts as one failure; one that passed
without one (the fuzz corpus replays) as one pass. Exit status 1
when anything failed or no test ran."""
import json
import re
import sys

SUMMARY = re.compile(r"\[doctest\] test cases:\s*(\d+)\s*\|\s*(\d+) passed\s*\|\s*(\d+) failed\s*\|\s*(\d+) skipped")

passed = failed = skipped = 0
for path in sys.argv[1:]:
    with open(path) as f:
        for line in f:
            entry = json.loads(line)
            m = SUMMARY.findall(entry.get("stdout", "") or "")
            if m:
                _, p, fl, sk = map(int, m[-1])
                passed, skipped = passed + p, skipped + sk
                failed += fl
            if not m and entry.get("result") == "OK":
                passed += 1  # a test without doctest (the fuzz replays) counts as one
            if entry.get("result") not in ("OK", "SKIP") and (not m or int(m[-1][2]) == 0):
                failed += 1
                print(f"{path}: {entry.get('name')} ended {entry.get('result')}", file=sys.stderr)
print(f"{passed} passed, {failed} failed" + (f", {skipped} skipped" if skipped else ""))
sys.exit(1 if failed or passed == 0 else 0)
