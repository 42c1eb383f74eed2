#!/bin/sh
# The dependencies of this checkout as an image (/app/node_modules, exactly as `npm ci` installed
# them here), for building examples/docker/Dockerfile where the npm registry cannot be reached:
#
#   examples/docker/deps-image.sh [TAG]     (default svc-deps:local)
#   DOCKER_BUILDKIT=1 docker build --build-arg DEPS_IMAGE=svc-deps:local ...
#
# Same platform only (the native packages were built for this machine). Run from anywhere; needs
# `npm install` (or `npm ci`) to have been run in the checkout. The image is labelled with the
# lock file's SHA-256 (svc.package-lock), so a stale one can be told apart.
set -eu

TAG=${1:-svc-deps:local}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DOCKER=${DOCKER:-$( [ -x /usr/bin/docker ] && echo /usr/bin/docker || command -v docker )}
modules=$(readlink -f "$ROOT/node_modules")   # a checkout's node_modules may be a symlink
[ -d "$modules" ] || { echo "deps-image.sh: no node_modules in $ROOT: run npm ci first" >&2; exit 1; }

# Only the top directory is renamed (S: symlink targets such as .bin's ../typescript/bin/tsc stay as they are).
name=$(basename "$modules")
tar -C "$(dirname "$modules")" --numeric-owner --owner=0 --group=0 --transform "s,^$name,app/node_modules,S" -cf - "$name" \
  | "$DOCKER" import --change "LABEL svc.package-lock=$(sha256sum "$ROOT/package-lock.json" | cut -d' ' -f1)" - "$TAG" >/dev/null
echo "built $TAG from $modules"
