#!/bin/sh
# Builds Sluice's image without pulling anything: static binaries on the
# host, then deploy/Dockerfile.prebuilt (FROM scratch). It checks the
# staged binary against the staged config first, then, with a working
# Docker daemon, builds the image and runs `serve --check` inside it.
#
#   deploy/build-local.sh [IMAGE]            default IMAGE: sluice:local
#   deploy/build-local.sh --stage-only       stage and check, no docker
#
# go test ./deploy runs it when SLUICE_DOCKER=1.
set -eu

cd "$(dirname "$0")/.."
stage_only=0
if [ "${1:-}" = "--stage-only" ]; then
	stage_only=1
	shift
fi
image=${1:-sluice:local}
ctx=deploy/.build
certs=${CA_CERTS:-/etc/ssl/certs/ca-certificates.crt}

rm -rf "$ctx"
mkdir -p "$ctx"
export CGO_ENABLED=0
go build -trimpath -ldflags "-s -w" -o "$ctx/sluice" ./cmd/sluice
go build -trimpath -ldflags "-s -w" -o "$ctx/probe" ./cmd/sluice-probe
if [ ! -s "$certs" ]; then
	echo "build-local: no CA roots at $certs (set CA_CERTS); the image could not call https providers" >&2
	exit 1
fi
cp "$certs" "$ctx/ca-certificates.crt"
cp deploy/sluice.yaml "$ctx/sluice.yaml"
cp LICENSE NOTICE "$ctx/"

# The key only has to be set for the check; it is never used.
OPENAI_API_KEY=placeholder "$ctx/sluice" serve --check --config "$ctx/sluice.yaml"
echo "build-local: staged $ctx ($(du -h "$ctx/sluice" | cut -f1) binary)"

if [ "$stage_only" = 1 ]; then
	exit 0
fi
if ! docker info >/dev/null 2>&1; then
	echo "build-local: docker daemon not reachable; staged only" >&2
	exit 3
fi
docker build -f deploy/Dockerfile.prebuilt -t "$image" "$ctx"
docker run --rm -e OPENAI_API_KEY=placeholder "$image" serve --check --config /etc/sluice/sluice.yaml
docker run --rm --entrypoint /sluice "$image" version
uid=$(docker image inspect -f '{{.Config.User}}' "$image")
echo "build-local: built $image, user $uid"
