#!/usr/bin/env bash
# Runs Schemathesis (PyPI: schemathesis) against the reference application's own OpenAPI
# description, with every check and phase, as three callers in turn: anonymous, an ordinary
# user and an administrator. Not part of the tests (it takes minutes and generates random
# data); docs/errors.md lists what it reports and why.
#
#   scripts/schemathesis.sh [max-examples]      # default 30 per operation
#   REFERENCE_APP_BIN=path/to/reference-app scripts/schemathesis.sh   # another build
#
# Needs `st` on PATH (pip install schemathesis) and a built reference-app (cargo build -p reference-app).
set -euo pipefail
cd "$(dirname "$0")/.."
examples="${1:-30}"
bin="${REFERENCE_APP_BIN:-${CARGO_TARGET_DIR:-target}/debug/reference-app}"
[ -x "$bin" ] || { echo "build the reference app first: cargo build -p reference-app" >&2; exit 2; }
bin="$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")"
reports="$(pwd)/target"
mkdir -p "$reports"
command -v st >/dev/null || { echo "install Schemathesis first: pip install schemathesis" >&2; exit 2; }

work="$(mktemp -d)"
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
export CRUDFORGE_DATA_DIR="$work" BCRYPT_COST=4 DEBUG=false
export JWT_SECRET_KEY="schemathesis-run-signing-key-0123456789abcdef"
# Schemathesis sends many failing logins; the throttle would answer 429 to most of them.
export LOGIN_MAX_FAILURES_PER_ACCOUNT=100000 LOGIN_MAX_FAILURES_PER_ADDRESS=100000
cd "$work"
password="correct horse battery"
echo "$password" | "$bin" create-user --email admin@example.com --password-stdin --superadmin >/dev/null
echo "$password" | "$bin" create-user --email user@example.com --password-stdin >/dev/null
BIND="127.0.0.1:$port" "$bin" >"$work/server.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 1 50); do curl -fs "http://127.0.0.1:$port/health" >/dev/null && break; sleep 0.2; done
token() {
    curl -fs "http://127.0.0.1:$port/api/user/login/" -H 'content-type: application/json' \
        -d "{\"email\":\"$1\",\"password\":\"$password\"}" |
        python3 -c 'import sys, json; print(json.load(sys.stdin)["access_token"])'
}
status=0
for who in anonymous user admin; do
    headers=()
    case "$who" in
        # Logging out everywhere and changing the password end the caller's sessions (as they
        # should), which would turn the rest of the run into 401s: left out when signed in.
        user) headers=(-H "Authorization: Bearer $(token user@example.com)" --exclude-path-regex 'logout|password') ;;
        admin) headers=(-H "Authorization: Bearer $(token admin@example.com)" --exclude-path-regex 'logout|password') ;;
    esac
    echo "== Schemathesis as $who"
    st run "http://127.0.0.1:$port/openapi.json" --checks all --max-examples "$examples" \
        --report junit --report-junit-path "$reports/schemathesis-$who.xml" \
        "${headers[@]}" || status=1
done
exit $status
