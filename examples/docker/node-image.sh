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
BUSYBOX=${SVC_IMAGE_BUSYBOX:-/bin/busybox}
NODE=${SVC_IMAGE_NODE:-$(command -v node)}
NPM_DIR=${SVC_IMAGE_NPM_DIR:-$(dirname "$(dirname "$(readlink -f "$(command -v npm)")")")}
WITH_GIT=${SVC_IMAGE_GIT:-1}
DOCKER=${DOCKER:-$( [ -x /usr/bin/docker ] && echo /usr/bin/docker || command -v docker )}

fail() { echo "node-image.sh: $*" >&2; exit 1; }
[ -x "$BUSYBOX" ] || fail "no busybox at $BUSYBOX (apt-get install -y busybox-static)"
ldd "$BUSYBOX" >/dev/null 2>&1 && fail "$BUSYBOX is dynamically linked; install busybox-static"
[ -n "$NODE" ] && [ -x "$NODE" ] || fail "no node binary found (set SVC_IMAGE_NODE)"
[ -f "$NPM_DIR/bin/npm-cli.js" ] || fail "no npm found at $NPM_DIR (set SVC_IMAGE_NPM_DIR)"
[ -n "$DOCKER" ] || fail "the docker CLI is not installed"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root=$work/rootfs
mkdir -p "$root/bin" "$root/sbin" "$root/usr/bin" "$root/usr/sbin" "$root/usr/local/bin" "$root/usr/local/lib/node_modules" \
  "$root/etc" "$root/tmp" "$root/root" "$root/home/node" "$root/proc" "$root/sys" "$root/dev"
chmod 1777 "$root/tmp"

put() {
  mkdir -p "$root$(dirname "$1")"
  cp -L "$1" "$root$1"
}
libs_of() {
  ldd "$1" 2>/dev/null | awk '/=> \// { print $3 } /^[[:space:]]*\/[^ ]+ \(/ { print $1 }' | while read -r lib; do
    [ -e "$root$lib" ] || put "$lib"
  done
}

cp "$BUSYBOX" "$root/bin/busybox"
for applet in $("$BUSYBOX" --list-full); do
  [ -e "$root/$applet" ] || ln -s /bin/busybox "$root/$applet"
done

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

if [ "$WITH_GIT" = 1 ] && command -v git >/dev/null; then
  gitbin=$(command -v git)
  exec_path=$(git --exec-path)
  rm -f "$root$gitbin"
  put "$gitbin"
  libs_of "$gitbin"
  mkdir -p "$root$(dirname "$exec_path")"
  cp -a "$exec_path" "$root$(dirname "$exec_path")/"
  find "$exec_path" -type f -perm -u+x | while read -r helper; do
    case $(head -c 4 "$helper" | od -An -c | tr -d ' ') in *ELF*) libs_of "$helper" ;; esac
  done
  [ -d /usr/share/git-core/templates ] && mkdir -p "$root/usr/share/git-core" && cp -r /usr/share/git-core/templates "$root/usr/share/git-core/"
fi
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
echo 'hosts: files dns' >"$root/etc/nsswitch.conf"

tar -C "$root" --numeric-owner --owner=0 --group=0 --exclude=./home/node -cf "$work/rootfs.tar" .
tar -C "$root" --numeric-owner --owner=1000 --group=1000 -rf "$work/rootfs.tar" ./home/node

"$DOCKER" import \
  --change 'ENV PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin' \
  --change 'CMD ["node"]' \
  "$work/rootfs.tar" "$TAG" >/dev/null
echo "built $TAG (node $("$NODE" --version), npm $(node "$NPM_DIR/bin/npm-cli.js" --version)$([ "$WITH_GIT" = 1 ] && command -v git >/dev/null && echo ", $(git --version)"))"
