#!/usr/bin/env bash
# The REST API as tools meet it: schemathesis (pinned with its dependencies, installed with
# pip into a venv under target/) runs every check over /api/v1/openapi.json against the real kqueen
# binary on SQLite, as an operator with a tenant, a provider, a template and an imported
# cluster (on the fake Kubernetes API server) in place. Fails on any failure.
#
#   API_FUZZ_EXAMPLES  test cases per operation and phase (default 15: about 2,100 in all, under a minute)
#   API_FUZZ_SEED      hypothesis seed (default fixed, so that runs repeat)
set -euo pipefail
cd "$(dirname "$0")/.."

source scripts/versions.env
examples="${API_FUZZ_EXAMPLES:-15}"
seed="${API_FUZZ_SEED:-16}"
constraints=scripts/api-fuzz.constraints.txt
venv="target/api-fuzz/venv-$SCHEMATHESIS_VERSION-$(sha256sum "$constraints" | cut -c1-12)"
log() { echo "api-fuzz: $*" >&2; }

if [[ ! -x "$venv/bin/schemathesis" ]]; then
  log "installing schemathesis $SCHEMATHESIS_VERSION into $venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q -c "$constraints" "schemathesis==$SCHEMATHESIS_VERSION"
fi

# The server and the fake API server as `make test-rust` builds them (see `make test-bins`).
make --no-print-directory -s test-bins
bin=target/debug/kqueen

work="$(mktemp -d)"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

export KQUEEN_DATA_DIR="$work/data" KQUEEN_LISTEN=127.0.0.1:0 NO_COLOR=1 RUST_LOG=warn,kqueen=info
export KQUEEN_SITE_ROOT="$work/site"
unset KQUEEN_DATABASE_URL
mkdir -p "$KQUEEN_SITE_ROOT/pkg"
password="correct horse battery"
echo "$password" | "$bin" user create admin --operator --password-stdin >/dev/null
"$bin" tenant create team-a --name "Team A" >/dev/null

# The fake Kubernetes API server the imported cluster points at.
target/debug/examples/fake_kube "$work/admin.kubeconfig" >"$work/kube.log" 2>&1 &
pids+=($!)
"$bin" serve 2>"$work/server.log" &
pids+=($!)
wait_for() { # file pattern
  for _ in $(seq 200); do
    grep -qE "$2" "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  log "no '$2' in $1:"; cat "$1" >&2; return 1
}
wait_for "$work/kube.log" 'listening on'
wait_for "$work/server.log" 'listening on http://'
url="$(grep -oE 'listening on http://[0-9.]+:[0-9]+' "$work/server.log" | head -1 | cut -d' ' -f3)"
log "server at $url"

# An operator token: log in with the password, create a token with the session.
jar="$work/cookies"
curl -sf -o /dev/null -c "$jar" -H "Origin: $url" \
  --data-urlencode username=admin --data-urlencode "password=$password" --data-urlencode next=/ \
  "$url/auth/local"
json() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1]))' "$1"; }
token="$(curl -sf -b "$jar" -H "Origin: $url" -H 'Content-Type: application/json' \
  -d '{"name": "api-fuzz", "days": 1}' "$url/api/v1/tokens" | json 'd["secret"]')"
api() { # method path [json body]
  curl -sf -X "$1" -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
    ${3:+-d "$3"} "$url$2"
}
# The operator is also an admin of team-a: requests that leave out the tenant go there.
api PUT /api/v1/tenants/team-a/members/admin '{"role": "admin"}' >/dev/null
api POST /api/v1/providers '{"name": "imported", "kind": "import"}' >/dev/null
api POST /api/v1/templates '{"name": "import", "provider": "imported"}' >/dev/null
kubeconfig="$(python3 -c 'import json,sys; print(json.dumps(open(sys.argv[1]).read()))' "$work/admin.kubeconfig")"
cluster="$(api POST /api/v1/clusters \
  "{\"tenant\": \"team-a\", \"name\": \"lab\", \"template\": \"import\", \"parameters\": {\"kubeconfig\": $kubeconfig}}" \
  | json 'd["cluster"]["id"]')"
for _ in $(seq 100); do
  state="$(api GET "/api/v1/clusters/$cluster" | json 'd["state"]')"
  [[ "$state" == ready ]] && break
  sleep 0.2
done
[[ "$state" == ready ]] || { log "cluster $cluster is $state, not ready"; exit 1; }
log "tenant team-a (admin: the operator), provider imported, template import, cluster lab ($cluster) ready"

# Real values for the provider settings' formats that a JSON schema cannot generate (a key, a
# certificate, a kubeconfig): scripts/api-fuzz-hooks.py draws them from here.
material="$work/material"
mkdir -p "$material"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=api-fuzz \
  -keyout "$material/key.pem" -out "$material/cert.pem" 2>/dev/null
cp "$work/admin.kubeconfig" "$material/admin.kubeconfig"

# From the temporary directory: schemathesis keeps a cache (.schemathesis/) where it runs.
repo="$PWD"
cd "$work"
API_FUZZ_MATERIAL="$material" SCHEMATHESIS_HOOKS="$repo/scripts/api-fuzz-hooks.py" \
"$repo/$venv/bin/schemathesis" --config-file "$repo/scripts/api-fuzz.toml" \
  run "$url/api/v1/openapi.json" \
  --checks all --max-examples "$examples" --seed "$seed" --workers 1 \
  --generation-database none \
  --header "Authorization: Bearer $token" \
  --report junit --report-dir "$repo/target/api-fuzz/report" \
  "$@"
