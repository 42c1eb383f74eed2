#!/bin/sh
# Builds the worker image for the docker runtime without pulling anything: a root filesystem made of
# this machine's files (busybox-static for /bin/sh and the usual tools, the host's node binary,
# git with its helpers, each with the shared libraries ldd lists), imported with `docker import`.
#
#   adapters/runtime/docker/image/build.sh [TAG]        (default svc-worker:local)
#
# Needs: the docker CLI talking to the engine (DOCKER_HOST is honoured; /usr/bin/docker is preferred), busybox-static
# (apt-get install -y busybox-static), node, and optionally git (SVC_IMAGE_GIT=0 leaves it out).
# The image has a user node, uid 1000 (home /home/node), the default of worker.run_as_uid, and the
# spec's fixed worker-image environment: SVC_WORKSPACE_ROOT=/opt/svc/workspaces,
# SVC_CACHE_ROOT=/opt/svc/cache, SVC_HOME=/home/node, SVC_RUN_AS_UID=1000.
set -eu

TAG=${1:-svc-worker:local}
NODE=${SVC_IMAGE_NODE:-$(command -v node)}
WITH_GIT=${SVC_IMAGE_GIT:-1}
ROOTFS_SCRIPT=build.sh
. "$(dirname "$0")/rootfs.sh"

require_busybox
[ -n "$NODE" ] && [ -x "$NODE" ] || fail "no node binary found (set SVC_IMAGE_NODE)"
require_docker

rootfs_init /root /home/node /opt/svc/workspaces /opt/svc/cache
add_busybox
cp -L "$NODE" "$root/usr/local/bin/node"
libs_of "$NODE"

if [ "$WITH_GIT" = 1 ] && command -v git >/dev/null; then
  add_git
  # remote-http verifies servers with the CA bundle.
  [ -f /etc/ssl/certs/ca-certificates.crt ] && put /etc/ssl/certs/ca-certificates.crt
fi

cat >"$root/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/bin/sh
node:x:1000:1000:svc worker:/home/node:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/bin/false
EOF
cat >"$root/etc/group" <<'EOF'
root:x:0:
node:x:1000:
nogroup:x:65534:
EOF
add_nsswitch

# Everything root-owned except what uid 1000 writes: its home, the workspace and cache roots.
tar -C "$root" --numeric-owner --owner=0 --group=0 \
  --exclude=./home/node --exclude=./opt/svc/workspaces --exclude=./opt/svc/cache -cf "$work/rootfs.tar" .
tar -C "$root" --numeric-owner --owner=1000 --group=1000 -rf "$work/rootfs.tar" ./home/node ./opt/svc/workspaces ./opt/svc/cache

"$DOCKER" import \
  --change 'ENV PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin' \
  --change 'ENV SVC_WORKSPACE_ROOT=/opt/svc/workspaces SVC_CACHE_ROOT=/opt/svc/cache SVC_HOME=/home/node SVC_RUN_AS_UID=1000' \
  --change 'USER 1000:1000' \
  --change 'WORKDIR /home/node' \
  --change 'CMD ["/bin/sh"]' \
  "$work/rootfs.tar" "$TAG" >/dev/null
echo "built $TAG (node $("$NODE" --version)$([ "$WITH_GIT" = 1 ] && command -v git >/dev/null && echo ", $(git --version)"))"
