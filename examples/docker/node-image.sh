#!/bin/sh
# Makes a Node base image for examples/docker/Dockerfile without pulling anything, the way
# adapters/runtime/docker/image/build.sh makes the worker image: a root filesystem of this machine's
# own files (busybox-static for /bin/sh and the usual tools, the host's node and npm, git with its
# helpers for the worker role, each binary with the shared libraries ldd lists), imported with
# `docker import`. Where images can be pulled, the official node:20-bookworm-slim does the same job
# (add git to it for the worker role).
#
#   examples/docker/node-image.sh [TAG]        (default svc-node:local)
#
# Needs: the docker CLI talking to the engine (DOCKER_HOST is honoured; /usr/bin/docker is preferred
# over a newer CLI earlier on PATH), busybox-static, node and npm, and optionally git
# (SVC_IMAGE_GIT=0 leaves it out). Like the official node images: root by default, a user `node`
# (uid 1000) to switch to, no CMD beyond `node`.
set -eu

TAG=${1:-svc-node:local}
NODE=${SVC_IMAGE_NODE:-$(command -v node)}
NPM_DIR=${SVC_IMAGE_NPM_DIR:-$(dirname "$(dirname "$(readlink -f "$(command -v npm)")")")}
WITH_GIT=${SVC_IMAGE_GIT:-1}
ROOTFS_SCRIPT=node-image.sh
. "$(dirname "$0")/../../adapters/runtime/docker/image/rootfs.sh"

require_busybox
[ -n "$NODE" ] && [ -x "$NODE" ] || fail "no node binary found (set SVC_IMAGE_NODE)"
[ -f "$NPM_DIR/bin/npm-cli.js" ] || fail "no npm found at $NPM_DIR (set SVC_IMAGE_NPM_DIR)"
require_docker

rootfs_init /root /home/node /usr/local/lib/node_modules
add_busybox
cp -L "$NODE" "$root/usr/local/bin/node"
libs_of "$NODE"
# The rest of glibc that programs other than node expect of a base image (the embedded PostgreSQL's
# binaries need librt; name lookups need the nss modules and libresolv).
libdir=$(dirname "$(ldd "$NODE" | awk '/libc\.so\.6/ { print $3 }')")
for lib in librt.so.1 libresolv.so.2 libutil.so.1 libanl.so.1 libnss_files.so.2 libnss_dns.so.2; do
  [ -e "$libdir/$lib" ] && [ ! -e "$root$libdir/$lib" ] && put "$libdir/$lib"
done
cp -a "$NPM_DIR" "$root/usr/local/lib/node_modules/npm"
ln -s ../lib/node_modules/npm/bin/npm-cli.js "$root/usr/local/bin/npm"
ln -s ../lib/node_modules/npm/bin/npx-cli.js "$root/usr/local/bin/npx"

if [ "$WITH_GIT" = 1 ] && command -v git >/dev/null; then add_git; fi
[ -f /etc/ssl/certs/ca-certificates.crt ] && put /etc/ssl/certs/ca-certificates.crt

cat >"$root/etc/passwd" <<'PASSWD'
root:x:0:0:root:/root:/bin/sh
node:x:1000:1000:node:/home/node:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/bin/false
PASSWD
cat >"$root/etc/group" <<'GROUP'
root:x:0:
node:x:1000:
nogroup:x:65534:
GROUP
add_nsswitch

tar -C "$root" --numeric-owner --owner=0 --group=0 --exclude=./home/node -cf "$work/rootfs.tar" .
tar -C "$root" --numeric-owner --owner=1000 --group=1000 -rf "$work/rootfs.tar" ./home/node

"$DOCKER" import \
  --change 'ENV PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin' \
  --change 'CMD ["node"]' \
  "$work/rootfs.tar" "$TAG" >/dev/null
echo "built $TAG (node $("$NODE" --version), npm $(node "$NPM_DIR/bin/npm-cli.js" --version)$([ "$WITH_GIT" = 1 ] && command -v git >/dev/null && echo ", $(git --version)"))"
