#!/bin/sh
# Fetches the pinned uPlot release with npm and copies its minified build,
# stylesheet and licence into internal/server/dashboard/static/vendor/uplot (see the
# README there). Needs npm; the result is committed, so building Sluice
# never needs it.
set -eu
version=1.6.32
root=$(cd "$(dirname "$0")/.." && pwd)
dest="$root/internal/server/dashboard/static/vendor/uplot"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "uplot@$version" >/dev/null && tar xzf "uplot-$version.tgz")
cp "$tmp/package/dist/uPlot.iife.min.js" "$tmp/package/dist/uPlot.min.css" "$tmp/package/LICENSE" "$dest/"
echo "uPlot $version copied to $dest"
