#!/usr/bin/env python3
"""test-summary.py BUILD... - read each build's meson-logs/testlog.json,
list every failure and every skip with the reason the test printed, and end
with 'N passed, N failed, N skipped'; exit 1 when anything failed.

A test that runs may skip some of its cases: each such case prints one line
    SKIP: <case>: <reason>
(cmocka tests print it before skip(); a cmocka "[  SKIPPED ] name" with no
such line is listed with no reason).  Every one is listed as
    skipped  BUILD: TEST > CASE: REASON
and counted in the closing line's "N skipped" beside the tests skipped
whole: N skipped counts what did not run, tests and cases alike."""
import json
import os
import re
import sys

# "SKIP: reason", "skip: reason", "test_x: skipped: reason", "SKIP - reason"
SKIP_LINE = re.compile(r'\bskip(?:ped)?\b\s*[:-]\s*(.+)', re.IGNORECASE)


def skip_reason(test):
    """The reason a skipped test gave: its last line naming a skip, else
    its last line of output."""
    lines = [l.strip() for key in ('stdout', 'stderr')
             for l in (test.get(key) or '').splitlines() if l.strip()]
    for line in reversed(lines):
        m = SKIP_LINE.search(line)
        if m:
            return m.group(1)
    return lines[-1] if lines else '(the test printed no reason)'


SUBCASE_LINE = re.compile(r'^SKIP: (.+?): (.+)$')
CMOCKA_SKIPPED = re.compile(r'^\[  SKIPPED \] (\S+)$')


def skipped_cases(test):
    """[(case, reason)] of the cases a test that ran skipped."""
    cases, seen = [], set()
    lines = [l.strip() for key in ('stdout', 'stderr')
             for l in (test.get(key) or '').splitlines()]
    for line in lines:
        m = SUBCASE_LINE.match(line)
        if m and m.group(1) not in seen:
            seen.add(m.group(1))
            cases.append((m.group(1), m.group(2)))
    for line in lines:
        m = CMOCKA_SKIPPED.match(line)
        if m and m.group(1) not in seen:
            seen.add(m.group(1))
            cases.append((m.group(1), '(the test printed no reason)'))
    return cases


def main(builds):
    passed = failed = skipped = 0
    for build in builds:
        if os.path.exists(os.path.join(build, 'build-failed')):
            print('%s: build failed' % build)
            failed += 1
            continue
        log = os.path.join(build, 'meson-logs', 'testlog.json')
        if not os.path.exists(log):
            print('%s: no test log' % build)
            failed += 1
            continue
        for line in open(log):
            t = json.loads(line)
            r = t.get('result')
            name = '%s: %s' % (build, t.get('name'))
            if r != 'SKIP':
                for case, reason in skipped_cases(t):
                    skipped += 1
                    print('skipped  %s > %s: %s' % (name, case, reason))
            if r in ('OK', 'EXPECTEDFAIL'):
                passed += 1
            elif r == 'SKIP':
                skipped += 1
                print('skipped  %s: %s' % (name, skip_reason(t)))
            else:
                failed += 1
                print('FAILED   %s (%s)' % (name, r))
    print('%d passed, %d failed, %d skipped' % (passed, failed, skipped))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
