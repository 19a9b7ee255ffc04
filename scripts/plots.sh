#!/usr/bin/env bash
# Regenerates the docs' pictures from the simulator: each scenario's
# page as SVG (for docs/) and PNG (for anything that shows images
# but not SVG). Deterministic: the same scenarios give the same pictures.
#
#	scripts/plots.sh
set -euo pipefail
cd "$(dirname "$0")/.."
go build -o /tmp/sluice-plots ./cmd/sluice
trap 'rm -f /tmp/sluice-plots' EXIT
plot() { # scenario, picture name, extra flags
  local scenario=$1 name=$2
  shift 2
  for ext in svg png; do
    /tmp/sluice-plots sim "$scenario" "$@" --plot "docs/img/$name.$ext" >/dev/null
  done
  echo "docs/img/$name.{svg,png} from $scenario $*"
}
plot scenarios/littles-law.yaml littles-law
plot scenarios/brownouts/seed000.yaml seed000
plot scenarios/seed-002.yaml seed-002
plot scenarios/vllm-ramp.yaml vllm-ramp
