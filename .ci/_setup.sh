#!/usr/bin/env bash
# CI entry point: runs on a clean clone as root, with only the package registries
# reachable. Installs everything the tests need from nothing, then runs the README's
# test command.
set -euo pipefail
cd "$(dirname "$0")/.."

# apt's helpers (apt-key, gpgv, the download sandbox) write to /dev/null as the unprivileged _apt
# user: when an earlier command on the machine has replaced the device with a regular file, every
# apt call fails ("cannot create /dev/null: Permission denied", "gpgv ... not installed"). Put the
# device back before anything else.
if [ ! -c /dev/null ]; then
    rm -f /dev/null
    mknod -m 666 /dev/null c 1 3
fi
chmod 666 /dev/null

# Debian packages the tests need, installed in one apt transaction when any is missing:
# - make runs the README's test command (the embedded model's server, xllamacpp, is a prebuilt wheel);
# - headless Chromium for the browser tests (tests/integration/test_browser.py, driven by
#   Playwright's Python API; Playwright's own browser download is not used), with fonts that render
#   Latin text and the Korean demo question in the screenshot;
# - node and npm for the tests that run real JavaScript programs (the MCP tests run
#   server-everything, tests/integration/test_agui_client.py runs @ag-ui/client; tests/npm.py
#   installs them into $REACTGRAPH_HOME/npm);
# - postgresql for the checkpoint and multi-process tests.
apt_packages=()
command -v make >/dev/null || apt_packages+=(make)
command -v chromium >/dev/null || apt_packages+=(chromium)
for font in fonts-liberation fonts-noto-cjk; do
    dpkg-query -W -f='${Status}' "$font" 2>/dev/null | grep -q "ok installed" || apt_packages+=("$font")
done
command -v node >/dev/null || apt_packages+=(nodejs)
command -v npm >/dev/null || apt_packages+=(npm)
postgres_package=()
if ! command -v pg_ctlcluster >/dev/null || ! ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1; then
    postgres_package=(postgresql)
fi
if [ $(( ${#apt_packages[@]} + ${#postgres_package[@]} )) -gt 0 ]; then
    echo "ci: installing Debian packages: ${apt_packages[*]} ${postgres_package[*]}"
    # A failed index refresh (a mirror briefly unreachable) is retried once, then the install
    # goes on with the indexes already on the machine.
    apt-get update -qq || { sleep 5; apt-get update -qq; } || echo "ci: apt-get update failed; using the cached package indexes"
    if [ ${#apt_packages[@]} -gt 0 ]; then
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${apt_packages[@]}" >/dev/null
    fi
    if [ ${#postgres_package[@]} -gt 0 ]; then
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${postgres_package[@]}" >/dev/null
    fi
fi
export REACTGRAPH_CHROMIUM="$(command -v chromium)"

# Keep the demo database, model-server logs and test artifacts (browser screenshots under
# .reactgraph/artifacts/) inside the work tree.
export REACTGRAPH_HOME="$PWD/.reactgraph"
# No test may reach a hosted model: the embedded one is the only model CI uses.
unset OPENAI_API_KEY OPENAI_BASE_URL REACTGRAPH_MODEL

# Postgres for the checkpoint and multi-process tests: Debian's postgresql, listening on
# loopback only, with a role and database for the tests. Idempotent: an installed package,
# an existing cluster, a running server, the role and the database are all reused.
PG_VERSION="$(ls /usr/lib/postgresql | sort -V | tail -n 1)"
if ! pg_lsclusters -h | awk -v v="$PG_VERSION" '$1 == v && $2 == "main" { found = 1 } END { exit !found }'; then
    pg_createcluster "$PG_VERSION" main >/dev/null
fi
echo "listen_addresses = '127.0.0.1'" > "/etc/postgresql/$PG_VERSION/main/conf.d/reactgraph-ci.conf"
if ! pg_lsclusters -h | awk -v v="$PG_VERSION" '$1 == v && $2 == "main" && $4 == "online" { found = 1 } END { exit !found }'; then
    pg_ctlcluster "$PG_VERSION" main start
fi
PG_PORT="$(pg_lsclusters -h | awk -v v="$PG_VERSION" '$1 == v && $2 == "main" { print $3 }')"
pg_sql() { runuser -u postgres -- psql -p "$PG_PORT" -v ON_ERROR_STOP=1 -qtA "$@"; }
for _ in $(seq 1 30); do pg_sql -c "SELECT 1" >/dev/null 2>&1 && break; sleep 1; done
if [ "$(pg_sql -c "SELECT 1 FROM pg_roles WHERE rolname = 'reactgraph'")" != 1 ]; then
    pg_sql -c "CREATE ROLE reactgraph LOGIN PASSWORD 'reactgraph'"
fi
if [ "$(pg_sql -c "SELECT 1 FROM pg_database WHERE datname = 'reactgraph_test'")" != 1 ]; then
    pg_sql -c "CREATE DATABASE reactgraph_test OWNER reactgraph"
fi
export REACTGRAPH_TEST_DATABASE_URL="postgresql://reactgraph:reactgraph@127.0.0.1:${PG_PORT}/reactgraph_test"
# In CI the Postgres tests fail instead of skipping when the database is missing.
export CI="${CI:-true}"

