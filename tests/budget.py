"""What the test suite may cost: `make test`'s budget and the tests allowed over a minute, each
with its reason (tests/suite_profile.py prints the run against them; tests/test_layout.py checks
that each entry names a test that exists and gives a reason)."""

# `make test`'s wall-clock seconds on 2 cores (docs/measurements.md, "The test suite").
BUDGET_S = 900
# A test (set-up, call and teardown together) over this many seconds needs a reason in SLOW.
SLOW_S = 60
# nodeid -> why it needs over a minute.
SLOW = {}
