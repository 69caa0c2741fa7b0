# Sourced by the page benches (bench-pages.sh, bench-instructions.sh): starts a built `kqueen`
# on a fresh database and seeds what the cluster_list bench seeds (an operator, tenants, a
# `command` provider, a template, clusters spread over the tenants) through the CLI and the
# REST API.
#
#   KQUEEN_BENCH_CLUSTERS=1000 KQUEEN_BENCH_TENANTS=50   the defaults; the issue's scale is
#                              10000 and 500 (the cluster_list bench's variables)
#   KQUEEN_BENCH_POSTGRES=postgres://postgres@127.0.0.1:5432  a fresh database there instead of
#                              SQLite (created for the run, dropped at exit; needs psql)
#
# Expects: bin (the binary), port, and the tools the bench needs as arguments of `source`.
# Sets: bin (absolute), url, dir (a temporary directory, removed at exit with the server and
# the database), store (what the run is on, for the figures' heading).
# Provides: start_seeded (all of the below, in order), create_operator (before the first
# start), start_server [WRAPPER...] (sets server, the pid), stop_server, login (sets cookie
# and token), seed (prints how long it took, no newline).

clusters=${KQUEEN_BENCH_CLUSTERS:-1000}
tenants=${KQUEEN_BENCH_TENANTS:-50}
postgres=${KQUEEN_BENCH_POSTGRES:-}
postgres=${postgres%/} admin=${postgres%/}/postgres # the server; its maintenance database
[[ $clusters =~ ^[1-9][0-9]{0,5}$ && $tenants =~ ^[1-9][0-9]{0,3}$ ]] ||
    { echo "$(basename "$0"): KQUEEN_BENCH_CLUSTERS (1-999999) and KQUEEN_BENCH_TENANTS (1-9999) are counts" >&2; exit 1; }
for tool in curl jq bc ${postgres:+psql} "$@"; do
    command -v "$tool" >/dev/null ||
        { echo "$(basename "$0"): needs $tool (apt-get install ${tool/callgrind_control/valgrind})" >&2; exit 1; }
done
bin=$(realpath "$bin")
url=http://127.0.0.1:$port
dir=$(mktemp -d)
server=
database=
trap 'stop_server; drop_database; rm -rf "$dir"' EXIT
mkdir -p "$dir/site/pkg"
export KQUEEN_DATA_DIR=$dir/data KQUEEN_SITE_ROOT=$dir/site KQUEEN_LISTEN=127.0.0.1:$port
export KQUEEN_WORKERS=0 RUST_LOG=warn
store="${postgres:+PostgreSQL}, $clusters clusters in $tenants tenants"
if [[ -n $postgres ]]; then
    database=kqueen_bench_$$
    psql -q "$admin" -c "CREATE DATABASE $database" ||
        { database=; echo "bench: cannot create a database at $postgres" >&2; exit 1; }
    export KQUEEN_DATABASE_URL=$postgres/$database
else
    store=SQLite$store
fi
bench_password=bench-password-1234

start_seeded() {
    create_operator
    start_server
    login
    seed
}

# Starts "$@ $bin serve" in the background and waits (up to TRIES tenths of a second, default
# 100) for /healthz. The wrapper (e.g. valgrind) must exec the binary, so $server is its pid.
start_server() {
    local tries=${TRIES:-100}
    "$@" "$bin" serve >>"$dir/server.log" 2>&1 &
    server=$!
    for _ in $(seq "$tries"); do
        curl -sf "$url/healthz" >/dev/null && return 0
        sleep 0.1
    done
    cat "$dir/server.log" >&2
    echo "bench: the server did not answer /healthz" >&2
    exit 1
}

drop_database() {
    [[ -n $database ]] || return 0
    psql -q "$admin" -c "DROP DATABASE IF EXISTS $database WITH (FORCE)" >/dev/null || true
    database=
}

stop_server() {
    [[ -n $server ]] || return 0
    kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
    server=
}

create_operator() {
    "$bin" user create bench --operator --password-stdin <<<"$bench_password" >/dev/null
}

# The operator's browser session (pages) and an API token (seeding, API cases).
login() {
    cookie=$(curl -sf -o /dev/null -D - -H "origin: $url" \
        --data-urlencode username=bench --data-urlencode password=$bench_password \
        --data-urlencode next=/ "$url/auth/local" |
        tr -d '\r' | sed -n 's/^[Ss]et-[Cc]ookie: \(kqueen_session=[^;]*\).*/\1/p')
    [[ -n $cookie ]] || { echo "bench: login failed" >&2; exit 1; }
    token=$(curl -sf -H "origin: $url" -H "cookie: $cookie" -H 'content-type: application/json' \
        -d '{"name":"bench"}' "$url/api/v1/tokens" | jq -r .secret)
}

bench_api() { # POST a JSON body to the API
    curl -sf -o /dev/null -H "authorization: Bearer $token" -H 'content-type: application/json' \
        -d "$2" "$url$1" || { echo "bench: POST $1 $2 failed" >&2; exit 1; }
}

seed() {
    local seeded codes total
    seeded=$(date +%s.%N)
    bench_api /api/v1/providers '{"name":"lab","kind":"command","settings":{"create_command":"/bin/true"}}'
    bench_api /api/v1/templates '{"name":"small","provider":"lab"}'
    # One curl for every request, over one keep-alive connection.
    entry() { # a curl config entry: POST $2 (JSON, quotes escaped) to $1
        printf 'url = "%s%s"\ndata = "%s"\nheader = "authorization: Bearer %s"\n' "$url" "$1" "$2" "$token"
        printf 'header = "content-type: application/json"\noutput = "/dev/null"\nwrite-out = "%%{http_code}\\n"\nnext\n'
    }
    {
        for t in $(seq 0 $((tenants - 1))); do
            entry /api/v1/tenants "$(printf '{\\"slug\\":\\"t-%03d\\"}' "$t")"
        done
        for i in $(seq 0 $((clusters - 1))); do
            entry /api/v1/clusters "$(printf '{\\"tenant\\":\\"t-%03d\\",\\"name\\":\\"c-%05d\\",\\"template\\":\\"small\\",\\"parameters\\":{\\"node_count\\":3}}' $((i % tenants)) "$i")"
        done
    } | sed '$d' >"$dir/seed.curl"
    codes=$(curl -s -K "$dir/seed.curl" | sort | uniq -c | tr -s ' ' | tr '\n' ' ')
    [[ $codes == " $tenants 201  $clusters 202 " ]] || { echo "bench: seeding answered:$codes" >&2; exit 1; }
    total=$(curl -sf -H "authorization: Bearer $token" "$url/api/v1/clusters" | jq -r '.total // empty')
    printf 'seeded in %.1f s (%s clusters)' "$(echo "$(date +%s.%N) - $seeded" | bc)" "${total:-?}"
}
