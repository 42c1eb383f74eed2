#!/bin/sh
# The worker image with the coding CLIs: the docker runtime's worker image (svc-worker:local, from
# adapters/runtime/docker/image/build.sh: busybox, node, git, user node uid 1000) plus Claude Code,
# Codex, the Gemini CLI and opencode from npm at the versions `npm run test:clis` runs
# (test/clis/versions.json, the one list of them), on PATH as claude, codex, gemini and opencode, with
# the shared libraries their native parts need, and bubblewrap. Nothing is pulled: the image is one
# layer on top of the local worker image.
#
#   examples/docker/worker-clis-image.sh [TAG]        (default svc-worker-clis:local)
#
# Where each CLI comes from: the folder `npm run test:clis` installed it into (SVC_CLI_CACHE, else
# /var/cache/svc-clis for root and ~/.cache/svc-clis for anyone else; `npm run test:clis --
# --install-only` fills it), when it holds that version: exactly the files the conformance suite
# ran, copied (hard-linked into the staging folder where it can) without asking the registry. Else
# `npm install` from the npm registry on this machine into a scratch folder: the image's node and C
# library are this machine's own, so what npm selects and builds here is what the image needs.
#
# Where images can be pulled, examples/docker/Dockerfile.worker-clis builds the same on
# node:20-bookworm-slim with apt-get and npm. docs/runtime-docker.md says more.
#
# Settings: SVC_WORKER_IMAGE (the base, default svc-worker:local), SVC_CLI_CACHE, SVC_IMAGE_BWRAP=0
# (no bubblewrap). Needs the docker CLI talking to the engine, the base image, node, and npm when a
# CLI is not in the cache. The image it replaces is removed unless another tag or a container still
# uses it. The image is labelled svc.clis (the packages and versions), svc.clis.pins
# (SHA-256 of test/clis/versions.json) and svc.clis.base (the base image's id), so a stale one can be
# told apart.
set -eu

TAG=${1:-svc-worker-clis:local}
BASE=${SVC_WORKER_IMAGE:-svc-worker:local}
REPO=$(cd "$(dirname "$0")/../.." && pwd)
VERSIONS=$REPO/test/clis/versions.json
if [ -n "${SVC_CLI_CACHE:-}" ]; then CACHE=$SVC_CLI_CACHE
elif [ "$(id -u)" = 0 ]; then CACHE=/var/cache/svc-clis
else CACHE=$HOME/.cache/svc-clis; fi
WITH_BWRAP=${SVC_IMAGE_BWRAP:-1}
ROOTFS_SCRIPT=worker-clis-image.sh
# fail, put, is_elf and DOCKER (this script makes its own $root, not a whole root filesystem).
. "$REPO/adapters/runtime/docker/image/rootfs.sh"

require_docker
command -v node >/dev/null || fail "node is needed to read $VERSIONS"
[ -f "$VERSIONS" ] || fail "no $VERSIONS"
base_id=$("$DOCKER" image inspect --format '{{.Id}}' "$BASE" 2>/dev/null) ||
  fail "the base image $BASE is not on the engine: build it with adapters/runtime/docker/image/build.sh"
started=$(date +%s)

# "name package version" per line, and the label naming them all.
clis=$(node -e 'for (const [n, c] of Object.entries(JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")))) console.log(n, c.pkg, c.version)' "$VERSIONS")
label=$(echo "$clis" | awk '{ printf "%s%s@%s", (NR > 1 ? " " : ""), $2, $3 }')
pins=$(sha256sum "$VERSIONS" | cut -d' ' -f1)

# The files the image adds, under $root; a container of the base that receives them ($cid).
work=$(mktemp -d)
root=$work/rootfs
cid=
trap 'rm -rf "$work"; [ -z "$cid" ] || "$DOCKER" rm -f "$cid" >/dev/null 2>&1' EXIT
mkdir -p "$root/opt/svc/clis" "$root/usr/local/bin"
echo "$clis" | while read -r name pkg version; do
  cached=$CACHE/$(echo "$pkg" | tr '/@' '__')@$version
  if [ -x "$cached/node_modules/.bin/$name" ]; then
    src=$cached
    how="from $cached"
  else
    command -v npm >/dev/null || fail "$pkg@$version is not in $CACHE and there is no npm to install it"
    src=$work/npm/$name
    mkdir -p "$src"
    npm install --no-audit --no-fund --no-save --loglevel=error --prefix "$src" "$pkg@$version" >&2
    [ -x "$src/node_modules/.bin/$name" ] || fail "npm installed $pkg@$version without a bin/$name"
    how="from the npm registry"
  fi
  mkdir -p "$root/opt/svc/clis/$name"
  # Hard links keep the cache's files as they are (nothing here writes to them) and cost no copy;
  # another file system gets a copy.
  cp -al "$src/node_modules" "$root/opt/svc/clis/$name/" 2>/dev/null || cp -a "$src/node_modules" "$root/opt/svc/clis/$name/"
  ln -s "/opt/svc/clis/$name/node_modules/.bin/$name" "$root/usr/local/bin/$name"
  echo "  $name: $pkg@$version $how" >&2
done

if [ "$WITH_BWRAP" = 1 ]; then
  [ -x /usr/bin/bwrap ] || fail "no /usr/bin/bwrap on this machine (apt-get install -y bubblewrap), or set SVC_IMAGE_BWRAP=0"
  put /usr/bin/bwrap
fi

# The shared libraries of every native file the packages hold (the CLIs' own binaries, node addons,
# bubblewrap) that resolve on this machine outside the packages themselves (some bring their own
# next to them); binaries for other platforms (musl, arm) resolve nothing and are skipped.
libs=$work/libs
: >"$libs"
find "$root/opt/svc/clis" "$root/usr/bin" -type f \( -perm -u+x -o -name '*.node' -o -name '*.so*' \) | while read -r file; do
  is_elf "$file" || continue
  ldd "$file" 2>/dev/null | awk '/=> \// { print $3 } /^[[:space:]]*\/[^ ]+ \(/ { print $1 }' | grep -vF "$root/" >>"$libs" || true
done
# Only those the base image lacks (asked of the base itself).
sort -u "$libs" | xargs "$DOCKER" run --rm --network none --user 0:0 --entrypoint /bin/sh "$BASE" -c 'for f; do [ -e "$f" ] || echo "$f"; done' sh >"$libs.missing"
while read -r lib; do put "$lib"; done <"$libs.missing"

# One layer on top of the base: a container of it receives the files (`docker cp` of a tar, owned by
# root, hard links kept) and is committed with the labels. No builder: BuildKit would keep a copy of
# the context in its cache, and the classic builder copies it twice more; both take longer.
old=$("$DOCKER" image inspect --format '{{.Id}}' "$TAG" 2>/dev/null || true)
cid=$("$DOCKER" create --network none "$BASE")
(cd "$root" && tar --numeric-owner --owner=0 --group=0 -cf - -- *) | "$DOCKER" cp - "$cid:/"
"$DOCKER" commit --change "LABEL svc.clis=\"$label\" svc.clis.pins=$pins svc.clis.base=$base_id" "$cid" "$TAG" >/dev/null
"$DOCKER" rm "$cid" >/dev/null && cid=
new=$("$DOCKER" image inspect --format '{{.Id}} {{.Size}}' "$TAG")
# The image this one replaces goes, unless another tag or a container still uses it.
[ -z "$old" ] || [ "$old" = "${new% *}" ] || "$DOCKER" rmi "$old" >/dev/null 2>&1 || true
echo "built $TAG on $BASE: $label$([ "$WITH_BWRAP" = 1 ] && echo ", bubblewrap $(/usr/bin/bwrap --version | awk '{ print $2 }')"), $(wc -l <"$libs.missing") libraries added; $((${new#* } / 1000000)) MB, $(($(date +%s) - started)) s"
