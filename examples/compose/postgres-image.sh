#!/bin/sh
# A PostgreSQL image for docker-compose.yml made from this machine's own Debian PostgreSQL, for hosts
# that cannot pull postgres:16 (where they can, use that: this image takes the same settings).
# Like the official image: POSTGRES_USER, POSTGRES_PASSWORD, POSTGRES_DB on the first start of an
# empty /var/lib/postgresql/data, password logins from the network, port 5432, pg_isready inside.
#
#   examples/compose/postgres-image.sh [TAG]        (default svc-postgres:local)
#
# Needs: apt-get install -y postgresql busybox-static (PG_VERSION picks among several installed).
set -eu

TAG=${1:-svc-postgres:local}
PG_VERSION=${PG_VERSION:-$(ls /usr/lib/postgresql 2>/dev/null | sort -n | tail -1)}
PG_BIN=/usr/lib/postgresql/$PG_VERSION/bin
ROOTFS_SCRIPT=postgres-image.sh
. "$(dirname "$0")/../../adapters/runtime/docker/image/rootfs.sh"

[ -x "$PG_BIN/postgres" ] || fail "no PostgreSQL in /usr/lib/postgresql (apt-get install -y postgresql)"
require_busybox
require_docker

rootfs_init /var/lib/postgresql/data /var/run/postgresql
add_busybox

mkdir -p "$root/usr/lib/postgresql" "$root/usr/share/postgresql"
cp -a "/usr/lib/postgresql/$PG_VERSION" "$root/usr/lib/postgresql/"
cp -a "/usr/share/postgresql/$PG_VERSION" "$root/usr/share/postgresql/"
for bin in "$PG_BIN"/*; do
  if is_elf "$bin"; then libs_of "$bin"; fi
done
for so in "/usr/lib/postgresql/$PG_VERSION/lib"/*.so; do libs_of "$so"; done
[ -d /usr/share/zoneinfo ] && mkdir -p "$root/usr/share" && cp -a /usr/share/zoneinfo "$root/usr/share/"

cat >"$root/etc/passwd" <<'PASSWD'
root:x:0:0:root:/root:/bin/sh
postgres:x:999:999:PostgreSQL:/var/lib/postgresql:/bin/sh
PASSWD
cat >"$root/etc/group" <<'GROUP'
root:x:0:
postgres:x:999:
GROUP
add_nsswitch

cat >"$root/usr/local/bin/docker-entrypoint.sh" <<'ENTRY'
#!/bin/sh
# First start on an empty data directory: a cluster whose superuser is POSTGRES_USER with
# POSTGRES_PASSWORD, password logins from anywhere, and the database POSTGRES_DB. Then the server.
set -eu
: "${POSTGRES_PASSWORD:?set POSTGRES_PASSWORD}"
user=${POSTGRES_USER:-postgres}
db=${POSTGRES_DB:-$user}
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  pwfile=$(mktemp)
  printf '%s\n' "$POSTGRES_PASSWORD" >"$pwfile"
  initdb -D "$PGDATA" -U "$user" --pwfile="$pwfile" --auth-local=trust --auth-host=scram-sha-256 --locale=C --encoding=UTF8 >/dev/null
  rm -f "$pwfile"
  echo 'host all all all scram-sha-256' >>"$PGDATA/pg_hba.conf"
  if [ "$db" != postgres ]; then
    postgres --single -D "$PGDATA" postgres <<SQL >/dev/null
CREATE DATABASE "$db" OWNER "$user";
SQL
  fi
  echo "postgres-image: initialised $PGDATA (user $user, database $db)"
fi
exec postgres -D "$PGDATA" -c listen_addresses='*' -c unix_socket_directories=/var/run/postgresql "$@"
ENTRY
chmod 755 "$root/usr/local/bin/docker-entrypoint.sh"

tar -C "$root" --numeric-owner --owner=0 --group=0 --exclude=./var/lib/postgresql --exclude=./var/run/postgresql -cf "$work/rootfs.tar" .
tar -C "$root" --numeric-owner --owner=999 --group=999 -rf "$work/rootfs.tar" ./var/lib/postgresql ./var/run/postgresql

"$DOCKER" import \
  --change "ENV PATH=$PG_BIN:/usr/local/bin:/usr/bin:/bin PGDATA=/var/lib/postgresql/data" \
  --change 'USER 999:999' \
  --change 'EXPOSE 5432' \
  --change 'VOLUME /var/lib/postgresql/data' \
  --change 'ENTRYPOINT ["/usr/local/bin/docker-entrypoint.sh"]' \
  "$work/rootfs.tar" "$TAG" >/dev/null
echo "built $TAG (PostgreSQL $("$PG_BIN/postgres" --version | awk '{ print $3 }'))"
