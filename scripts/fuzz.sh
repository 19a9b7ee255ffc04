#!/usr/bin/env bash
# Runs every fuzz target in the module for a while each.
#
#   scripts/fuzz.sh            # 30s per target
#   FUZZTIME=5s scripts/fuzz.sh  # the short run CI does
#
# A crash is written to the package's testdata/fuzz/<Target>/ directory
# and fails the run; commit it, and it is a regression test from then on
# (plain `go test` runs every file there).
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-30s}
status=0
while read -r file target; do
  pkg=./$(dirname "$file")
  echo "== $pkg $target ($fuzztime)"
  if ! go test "$pkg" -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" >/tmp/sluice-fuzz.log 2>&1; then
    tail -30 /tmp/sluice-fuzz.log
    status=1
  fi
done < <(grep -rho --include='*_test.go' -H '^func Fuzz[A-Za-z0-9_]*' . | sed 's|^\./||; s|:func | |')
exit $status
