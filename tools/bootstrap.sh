#!/usr/bin/env bash
# Install what `make demo` / `make test` need when it is missing: PostgreSQL's server binaries,
# Debian's Chromium (the browser tests) and Redis (the CeleryExecutor stack).
#   tools/bootstrap.sh postgres            what `make demo` needs
#   tools/bootstrap.sh postgres chromium redis   what `make test` needs (and .ci/run)
# As root with apt-get, it installs them; elsewhere it stops with one line naming the command to run.
set -euo pipefail

have_postgres() {
  [ -n "${AIRFLOW_RETRY_PG_DSN:-}" ] || command -v initdb >/dev/null 2>&1 \
    || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1
}
have_chromium() { command -v chromium >/dev/null 2>&1; }
have_redis() { command -v redis-server >/dev/null 2>&1; }

declare -A PACKAGE=([postgres]=postgresql [chromium]=chromium [redis]=redis-server)
missing=()
for need in "$@"; do
  case "$need" in
    postgres | chromium | redis) "have_$need" || missing+=("${PACKAGE[$need]}") ;;
    *) echo "tools/bootstrap.sh: unknown need '$need' (postgres, chromium or redis)" >&2; exit 2 ;;
  esac
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing ${missing[*]} (apt-get)"
  apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >/dev/null
  exit 0
fi
echo "missing ${missing[*]}: run 'sudo apt-get install ${missing[*]}' (or 'brew install ${missing[*]/redis-server/redis}'; for PostgreSQL, AIRFLOW_RETRY_PG_DSN=... also works)" >&2
exit 1
