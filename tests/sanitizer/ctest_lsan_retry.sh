#!/usr/bin/env bash
# ctest for the sanitized build (make sanitize), run in its build dir with
# ctest's arguments. LeakSanitizer's own stop-the-world tracer sometimes crashes
# at a process's exit ("Tracer caught signal 11 ... LeakSanitizer has
# encountered a fatal error": compiler-rt's known intermittent fault, not a leak
# report nor a test failure; google/sanitizers#1353). When every failed test
# failed that way alone, with all of its own checks passed, or failed a check
# on a child process it ran (an example, a server) whose output shows that
# crash, those tests run once more and that run decides; each is named on
# stderr. Any other failure is final.
set -uo pipefail
ctest "$@" && exit 0
failed=Testing/Temporary/LastTestsFailed.log
log=Testing/Temporary/LastTest.log
[ -s "$failed" ] && [ -s "$log" ] || exit 1
names=$(cut -d: -f2 "$failed")
for n in $names; do
  # The test's section of the log: from "K/N Testing: NAME" to '"NAME" end time'.
  out=$(awk -v n="$n" '$0 == "" {next} index($0, "Testing: " n) && $0 ~ ("Testing: " n "$") {on = 1}
                       on {print} on && index($0, "\"" n "\" end time") == 1 {exit}' "$log")
  grep -q "LeakSanitizer has encountered a fatal error" <<<"$out" && grep -q "Tracer caught signal" <<<"$out" || exit 1
  # Its own: every check passed. A child's: the crash is in a failed check's message (indented).
  { grep -q "^All tests passed" <<<"$out" && ! grep -q "FAILED" <<<"$out"; } ||
    grep -q "^  *Tracer caught signal" <<<"$out" || exit 1
done
echo "ctest_lsan_retry: $(echo $names) failed only because LeakSanitizer's tracer crashed at exit (theirs after" \
  "all their checks passed, or a child's): running them once more" >&2
ctest "$@" --rerun-failed
