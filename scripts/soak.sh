#!/bin/sh
# Runs the soak (e2e/soak_test.go): mixed traffic through three sluice
# serve replicas sharing Redis, with the primary browning out every six
# minutes, heap and goroutine profiles of every replica after the
# warm-up and at the end. Results go to docs/soak/ (or $SLUICE_SOAK_OUT);
# docs/SOAK.md reads them.
#
#   scripts/soak.sh          # one hour
#   scripts/soak.sh 2m       # a short try, written to a temporary directory
#
# Environment: SLUICE_SOAK_RPS (default 60), SLUICE_SOAK_REDIS
# (default 127.0.0.1:6379; the run keeps its keys under a prefix of its
# own and deletes them after), SLUICE_SOAK_OUT.
set -eu
cd "$(dirname "$0")/.."
duration=${1:-1h}
if [ "$duration" = 1h ]; then
	: "${SLUICE_SOAK_OUT:=docs/soak}"
fi
export SLUICE_SOAK=1 SLUICE_SOAK_DURATION="$duration"
[ -n "${SLUICE_SOAK_OUT:-}" ] && export SLUICE_SOAK_OUT
# The test bounds itself; the timeout is only a backstop, good for runs
# up to 3 h.
exec nice -n 10 go test ./test/e2e -run '^TestSoak$' -count=1 -v -timeout 200m
