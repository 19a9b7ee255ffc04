#!/usr/bin/env bash
# Runs Sluice's benchmark harness (cmd/sluice-bench, documented in docs/BENCHMARKS.md).
#
#   scripts/bench.sh              # full run, about 5 minutes; rewrites docs/BENCHMARKS.md figures
#   scripts/bench.sh --quick      # smoke run, about a minute; leaves the doc alone
#   scripts/bench.sh --portkey    # also benchmark the Portkey gateway (npm install into a temp dir)
#   scripts/bench.sh --phases latency,hostile --sluice-baseline /tmp/sluice-before-bin
#                                 # some phases only, with an earlier sluice binary beside the current one;
#                                 # only those phases' figures are replaced in the doc
#   scripts/bench.sh --help       # every flag
#
# It builds sluice into ./bin, installs HAProxy from the Debian archive when
# it is missing and we are root (otherwise HAProxy's rows are skipped),
# raises the open-file limit for the 5,000-stream phase, and runs
# `go run ./cmd/sluice-bench` with the arguments given. All traffic stays on 127.0.0.1.
set -euo pipefail

cd "$(dirname "$0")/.."

mkdir -p bin
echo "bench.sh: building bin/sluice"
go build -o bin/sluice ./cmd/sluice

if ! command -v haproxy >/dev/null 2>&1; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
		echo "bench.sh: installing haproxy (apt-get)"
		if ! { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q haproxy; } >/tmp/sluice-bench-apt.log 2>&1; then
			echo "bench.sh: haproxy install failed (see /tmp/sluice-bench-apt.log); its rows will be skipped"
		fi
	else
		echo "bench.sh: haproxy not installed and not root; its rows will be skipped"
	fi
fi

# 5,000 concurrent streams need about 10,000 descriptors in the proxy and
# 5,000 in the load generator. Raise the soft limit to the hard one; the
# harness does the same with setrlimit, and the processes it starts inherit it.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
echo "bench.sh: open-file limit $(ulimit -n)"

export BENCH_COMMAND="scripts/bench.sh${*:+ $*}"
exec go run ./cmd/sluice-bench --sluice bin/sluice "$@"
