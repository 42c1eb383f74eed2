# Shared by the scripts that make images without pulling anything (this folder's build.sh,
# examples/docker/node-image.sh, examples/compose/postgres-image.sh): a root filesystem assembled
# from this machine's own files, later imported with `docker import`. Sourced, not run; the caller
# sets `set -eu` and names itself in ROOTFS_SCRIPT for its error messages.

fail() { echo "${ROOTFS_SCRIPT:-rootfs}: $*" >&2; exit 1; }

# Debian's /usr/bin/docker is preferred over a newer CLI earlier on PATH (it builds without buildx).
DOCKER=${DOCKER:-$( [ -x /usr/bin/docker ] && echo /usr/bin/docker || command -v docker || true )}
BUSYBOX=${SVC_IMAGE_BUSYBOX:-/bin/busybox}

require_docker() { [ -n "$DOCKER" ] || fail "the docker CLI is not installed"; }
require_busybox() {
  [ -x "$BUSYBOX" ] || fail "no busybox at $BUSYBOX (apt-get install -y busybox-static)"
  if ldd "$BUSYBOX" >/dev/null 2>&1; then fail "$BUSYBOX is dynamically linked; install busybox-static"; fi
}

# A scratch directory removed on exit ($work) holding the root filesystem ($root) with the usual
# top-level folders, plus any given as arguments (paths inside the image).
rootfs_init() {
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  root=$work/rootfs
  mkdir -p "$root/bin" "$root/sbin" "$root/usr/bin" "$root/usr/sbin" "$root/usr/local/bin" "$root/etc" "$root/tmp" "$root/proc" "$root/sys" "$root/dev"
  for dir in "$@"; do mkdir -p "$root$dir"; done
  chmod 1777 "$root/tmp"
}

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

# Whether a file is an ELF binary (scripts among the helpers have no libraries to copy).
is_elf() { case $(head -c 4 "$1" | od -An -c | tr -d ' ') in *ELF*) return 0 ;; *) return 1 ;; esac; }

# busybox-static as /bin/sh and every applet it has.
add_busybox() {
  cp "$BUSYBOX" "$root/bin/busybox"
  for applet in $("$BUSYBOX" --list-full); do
    [ -e "$root/$applet" ] || ln -s /bin/busybox "$root/$applet"
  done
}

# git and its helpers (remote-http needs libcurl), with the templates `git init` copies.
add_git() {
  gitbin=$(command -v git)
  exec_path=$(git --exec-path)
  rm -f "$root$gitbin"
  put "$gitbin"
  libs_of "$gitbin"
  mkdir -p "$root$(dirname "$exec_path")"
  cp -a "$exec_path" "$root$(dirname "$exec_path")/"
  find "$exec_path" -type f -perm -u+x | while read -r helper; do
    if is_elf "$helper"; then libs_of "$helper"; fi
  done
  if [ -d /usr/share/git-core/templates ]; then mkdir -p "$root/usr/share/git-core" && cp -r /usr/share/git-core/templates "$root/usr/share/git-core/"; fi
}

# Name lookups through /etc/hosts and DNS.
add_nsswitch() { echo 'hosts: files dns' >"$root/etc/nsswitch.conf"; }
