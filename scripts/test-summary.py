#!/usr/bin/env python3
"""test-summary.py BUILD... - read each build's meson-logs/testlog.json and
print 'N passed, N failed, N skipped'; exit 1 when anything failed."""
import json
import os
import sys

passed = failed = skipped = 0
for build in sys.argv[1:]:
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
        if r in ('OK', 'EXPECTEDFAIL'):
            passed += 1
        elif r == 'SKIP':
            skipped += 1
            print('skipped  %s' % name)
        else:
            failed += 1
            print('FAILED   %s (%s)' % (name, r))
print('%d passed, %d failed, %d skipped' % (passed, failed, skipped))
sys.exit(1 if failed else 0)
