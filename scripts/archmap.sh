#!/usr/bin/env bash
# Prints Sluice's import graph as go list sees it now: the role groups
# (cmd, cli, core, model, wire, config, policy, server, sim, harness, ...)
# and the arrows between them as a Mermaid block, then every package and
# the module packages it imports (test files left out), then the counts.
#
#	scripts/archmap.sh                  # print the drawing
#	scripts/archmap.sh --write          # replace it in docs/ARCHITECTURE.md
#
# docs/ARCHITECTURE.md holds this output between the markers
# "<!-- archmap:begin -->" and "<!-- archmap:end -->"; a test in
# internal/config fails when the two differ, and prints this command.
# Needs only bash, awk, sort and the go command.
set -euo pipefail
export LC_ALL=C # one sort order on every machine
cd "$(dirname "$0")/.."

module=$(go list -m)
graph=$(go list -f '{{.ImportPath}} {{join .Imports " "}}' ./... |
	awk -v mod="$module/" '
	function short(p) { return p == substr(mod, 1, length(mod) - 1) ? "." : substr(p, length(mod) + 1) }
	{
		printf "%s", short($1)
		for (i = 2; i <= NF; i++) if (index($i, mod) == 1) printf " %s", short($i)
		print ""
	}' | sort)

# role names a package's group: internal/<role>/..., or the top folder.
role() {
	case $1 in
	internal/*) local r=${1#internal/}; echo "${r%%/*}" ;;
	*) echo "${1%%/*}" ;;
	esac
}

packages=0 arrows=0
declare -A roles=() rolearrows=()
lines=()
while read -r pkg imports; do
	packages=$((packages + 1))
	roles[$(role "$pkg")]=1
	if [ -n "${imports:-}" ]; then
		lines+=("$pkg -> $imports")
		for imp in $imports; do
			arrows=$((arrows + 1))
			from=$(role "$pkg") to=$(role "$imp")
			[ "$from" != "$to" ] && rolearrows["$from --> $to"]=1
		done
	else
		lines+=("$pkg")
	fi
done <<<"$graph"

draw() {
	echo '```mermaid'
	echo 'flowchart TD'
	printf '%s\n' "${!rolearrows[@]}" | sort | sed 's/^/  /'
	echo '```'
	echo
	echo 'Every package and the module packages it imports (test files left out):'
	echo
	echo '```text'
	printf '%s\n' "${lines[@]}"
	echo '```'
	echo
	echo "$packages packages in ${#roles[@]} role groups ($(printf '%s\n' "${!roles[@]}" | sort | paste -sd, - | sed 's/,/, /g')); $arrows package-level import arrows, ${#rolearrows[@]} between role groups."
}

if [ "${1:-}" = --write ]; then
	doc=docs/ARCHITECTURE.md
	tmp=$(mktemp)
	draw >"$tmp.draw"
	awk -v drawfile="$tmp.draw" '
		/<!-- archmap:end -->/ { while ((getline l < drawfile) > 0) print l; skip = 0 }
		!skip { print }
		/<!-- archmap:begin -->/ { skip = 1 }
	' "$doc" >"$tmp"
	mv "$tmp" "$doc"
	rm -f "$tmp.draw"
	echo "archmap: $doc updated"
else
	draw
fi
