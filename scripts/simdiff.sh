#!/usr/bin/env bash
# Runs every shipped scenario (scenarios/**/*.yaml) and the simulator's
# testdata (internal/sim/testdata/*.yaml) through two sluice binaries and
# fails if any output differs: the table with -minutes, the CSV series, the
# JSON table and the SVG plot, at the scenario's rates and scaled by 0.37
# and 2.3 (the hour-long testdata files at their own rates only).
#
#   go build -o /tmp/sluice-old ./cmd/sluice      # in the tree before a change
#   go build -o /tmp/sluice-new ./cmd/sluice      # and after it
#   scripts/simdiff.sh /tmp/sluice-old /tmp/sluice-new [WORKDIR]
#
# A change to the simulator or the core that must not change any result
# (a speed-up) runs this before it is committed. It takes one to five
# minutes on two cores, most of it the two simulated hours. WORKDIR
# (default: a new temporary directory) keeps both sides' outputs.
set -uo pipefail

if [ $# -lt 2 ]; then
	sed -n '2,15p' "$0" >&2
	exit 2
fi
old=$1 new=$2
for b in "$old" "$new"; do
	if [ ! -x "$b" ]; then
		echo "simdiff.sh: $b is not an executable sluice binary" >&2
		exit 2
	fi
done
out=${3:-$(mktemp -d /tmp/simdiff.XXXXXX)}
cd "$(dirname "$0")/.."
rm -rf "$out/old" "$out/new"
mkdir -p "$out/old" "$out/new"

runs=()
for f in scenarios/*.yaml scenarios/*/*.yaml internal/sim/testdata/*.yaml; do
	runs+=("$f|")
	case $f in
	*/hour*.yaml) ;; # an hour at 1,000 req/s: once is enough
	*) runs+=("$f|-rps-scale 0.37" "$f|-rps-scale 2.3") ;;
	esac
done

fail=0 i=0
for spec in "${runs[@]}"; do
	f=${spec%%|*} flags=${spec#*|}
	i=$((i + 1))
	for side in old new; do
		bin=$old
		[ "$side" = new ] && bin=$new
		d=$out/$side/$i
		mkdir -p "$d"
		files=(-csv "$d/series.csv" -json "$d/table.json")
		case $f in */hour*.yaml) ;; *) files+=(-plot "$d/plot.svg") ;; esac
		# shellcheck disable=SC2086 # flags is empty or one flag and its value
		"$bin" sim "$f" -minutes $flags "${files[@]}" >"$d/stdout" 2>"$d/stderr" &
	done
	wait
	if ! diff -r -q "$out/old/$i" "$out/new/$i" >/dev/null; then
		echo "DIFFERS: $f $flags"
		diff -r "$out/old/$i" "$out/new/$i" | head -5
		fail=1
	fi
	if [ -s "$out/old/$i/stderr" ]; then
		echo "simdiff.sh: $f $flags wrote to stderr: $(head -c 200 "$out/old/$i/stderr")"
	fi
done
if [ $fail = 0 ]; then
	echo "simdiff.sh: $i runs, every output identical ($out)"
else
	echo "simdiff.sh: outputs differ ($out)"
fi
exit $fail
