#!/bin/sh
# Builds the worker image for the docker runtime without pulling anything: a root filesystem made of
# this machine's files (busybox-static for /bin/sh and the usual tools, the host's node binary,
# git with its helpers, each with the shared libraries ldd lists), imported with `docker import`.
#
#   adapters/runtime/docker/image/build.sh [TAG]        (default svc-worker:local)
#
# Needs: the docker CLI talking to the engine (DOCKER_HOST is honoured), busybox-static
# (apt-get install -y busybox-static), node, and optionally git (SVC_IMAGE_GIT=0 leaves it out).
# The image has a user node, uid 1000 (home /home/node), the default of worker.run_as_uid, and the
# spec's fixed worker-image environment: SVC_WORKSPACE_ROOT=/opt/svc/workspaces,
# SVC_CACHE_ROOT=/opt/svc/cache, SVC_HOME=/home/node, SVC_RUN_AS_UID=1000.
set -eu

TAG=${1:-svc-worker:local}
BUSYBOX=${SVC_IMAGE_BUSYBOX:-/bin/busybox}
NODE=${SVC_IMAGE_NODE:-$(command -v node)}
WITH_GIT=${SVC_IMAGE_GIT:-1}

fail() { echo "build.sh: $*" >&2; exit 1; }
[ -x "$BUSYBOX" ] || fail "no busybox at $BUSYBOX (apt-get install -y busybox-static)"
ldd "$BUSYBOX" >/dev/null 2>&1 && fail "$BUSYBOX is dynamically linked; install busybox-static"
[ -n "$NODE" ] && [ -x "$NODE" ] || fail "no node binary found (set SVC_IMAGE_NODE)"
command -v docker >/dev/null || fail "the docker CLI is not installed"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root=$work/rootfs
mkdir -p "$root/bin" "$root/sbin" "$root/usr/bin" "$root/usr/sbin" "$root/usr/local/bin" "$root/etc" "$root/tmp" "$root/root" "$root/home/node" "$root/opt/svc/workspaces" "$root/opt/svc/cache" "$root/proc" "$root/sys" "$root/dev"
chmod 1777 "$root/tmp"

# Copies a file to the same path in the root filesystem, symlinks resolved.
put() {
  mkdir -p "$root$(dirname "$1")"
  cp -L "$1" "$root$1"
}

# Copies an ELF binary's shared libraries and its loader (whatever ldd resolves to a path).
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

if [ "$WITH_GIT" = 1 ] && command -v git >/dev/null; then
  # git and its helpers (remote-http needs libcurl and the CA bundle); templates for `git init`.
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
echo 'hosts: files dns' >"$root/etc/nsswitch.conf"

# Everything root-owned except what uid 1000 writes: its home, the workspace and cache roots.
tar -C "$root" --numeric-owner --owner=0 --group=0 \
  --exclude=./home/node --exclude=./opt/svc/workspaces --exclude=./opt/svc/cache -cf "$work/rootfs.tar" .
tar -C "$root" --numeric-owner --owner=1000 --group=1000 -rf "$work/rootfs.tar" ./home/node ./opt/svc/workspaces ./opt/svc/cache

docker import \
  --change 'ENV PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin' \
  --change 'ENV SVC_WORKSPACE_ROOT=/opt/svc/workspaces SVC_CACHE_ROOT=/opt/svc/cache SVC_HOME=/home/node SVC_RUN_AS_UID=1000' \
  --change 'USER 1000:1000' \
  --change 'WORKDIR /home/node' \
  --change 'CMD ["/bin/sh"]' \
  "$work/rootfs.tar" "$TAG" >/dev/null
echo "built $TAG (node $("$NODE" --version)$([ "$WITH_GIT" = 1 ] && command -v git >/dev/null && echo ", $(git --version)"))"
