#!/usr/bin/env bash
# Page speed of a built `kqueen` binary, as a user of `make run` meets it: starts BINARY on a
# fresh SQLite database (no workers, logs at warn), seeds what the cluster_list bench seeds
# (an operator, 50 tenants, a `command` provider, a template, 1,000 clusters) through the
# CLI and the REST API, then drives GET /healthz, /api/v1/clusters, /tokens, /clusters and /fleet
# with wrk (64 keep-alive connections, 2 threads, SECONDS each) and prints p50/p99, req/s
# and the server's own CPU time per request (from /proc, without the load generator's).
#
#   scripts/bench-pages.sh target/run/kqueen [SECONDS]     (default 5 s per case)
#   KQUEEN_BENCH_PORT=3901 (default)   KQUEEN_BENCH_ONLY=clusters (cases whose path has it)
#
# Needs wrk (Debian package `wrk`), curl and jq. Figures move with whatever else runs on the
# machine: run it alone, and compare binaries in one sitting.
set -euo pipefail

bin=${1:?usage: scripts/bench-pages.sh BINARY [SECONDS]}
seconds=${2:-5}
port=${KQUEEN_BENCH_PORT:-3901}
only=${KQUEEN_BENCH_ONLY:-}
url=http://127.0.0.1:$port
for tool in wrk curl jq; do
    command -v "$tool" >/dev/null || { echo "bench-pages: needs $tool (apt-get install $tool)" >&2; exit 1; }
done
bin=$(realpath "$bin")

dir=$(mktemp -d)
server=
cleanup() {
    [[ -n $server ]] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
    rm -rf "$dir"
}
trap cleanup EXIT
mkdir -p "$dir/site/pkg"
export KQUEEN_DATA_DIR=$dir/data KQUEEN_SITE_ROOT=$dir/site KQUEEN_LISTEN=127.0.0.1:$port
export KQUEEN_WORKERS=0 RUST_LOG=warn

password=bench-password-1234
"$bin" user create bench --operator --password-stdin <<<"$password" >/dev/null
"$bin" serve >"$dir/server.log" 2>&1 &
server=$!
for _ in $(seq 100); do
    curl -sf "$url/healthz" >/dev/null && break
    sleep 0.1
done
curl -sf "$url/healthz" >/dev/null || { cat "$dir/server.log" >&2; exit 1; }

# The operator's browser session (pages) and an API token (seeding, API case).
cookie=$(curl -sf -o /dev/null -D - -H "origin: $url" \
    --data-urlencode username=bench --data-urlencode password=$password --data-urlencode next=/ \
    "$url/auth/local" | tr -d '\r' | sed -n 's/^[Ss]et-[Cc]ookie: \(kqueen_session=[^;]*\).*/\1/p')
[[ -n $cookie ]] || { echo "bench-pages: login failed" >&2; exit 1; }
token=$(curl -sf -H "origin: $url" -H "cookie: $cookie" -H 'content-type: application/json' \
    -d '{"name":"bench"}' "$url/api/v1/tokens" | jq -r .secret)
api() { # POST a JSON body to the API
    curl -sf -o /dev/null -H "authorization: Bearer $token" -H 'content-type: application/json' \
        -d "$2" "$url$1" || { echo "bench-pages: POST $1 $2 failed" >&2; exit 1; }
}

seeded=$(date +%s.%N)
api /api/v1/providers '{"name":"lab","kind":"command","settings":{"create_command":"/bin/true"}}'
api /api/v1/templates '{"name":"small","provider":"lab"}'
# One curl for all 1,050 requests, over one keep-alive connection.
entry() { # a curl config entry: POST $2 (JSON, quotes escaped) to $1
    printf 'url = "%s%s"\ndata = "%s"\nheader = "authorization: Bearer %s"\n' "$url" "$1" "$2" "$token"
    printf 'header = "content-type: application/json"\noutput = "/dev/null"\nwrite-out = "%%{http_code}\\n"\nnext\n'
}
{
    for t in $(seq 0 49); do
        entry /api/v1/tenants "$(printf '{\\"slug\\":\\"t-%02d\\"}' "$t")"
    done
    for i in $(seq 0 999); do
        entry /api/v1/clusters "$(printf '{\\"tenant\\":\\"t-%02d\\",\\"name\\":\\"c-%04d\\",\\"template\\":\\"small\\",\\"parameters\\":{\\"node_count\\":3}}' $((i % 50)) "$i")"
    done
} | sed '$d' >"$dir/seed.curl"
codes=$(curl -s -K "$dir/seed.curl" | sort | uniq -c | tr -s ' ' | tr '\n' ' ')
[[ $codes == " 50 201  1000 202 " ]] || { echo "bench-pages: seeding answered:$codes" >&2; exit 1; }
total=$(curl -sf -H "authorization: Bearer $token" "$url/api/v1/clusters" | jq -r '.total // empty')
printf 'seeded in %.1f s (%s clusters); %s\n' "$(echo "$(date +%s.%N) - $seeded" | bc)" "${total:-?}" \
    "$(basename "$(dirname "$bin")")/$(basename "$bin"), $seconds s per case, 64 connections"

cpu_ticks() { # utime + stime of the server process, in 1/100 s
    local stat
    stat=$(<"/proc/$server/stat")
    read -ra f <<<"${stat##*) }"
    echo $((f[11] + f[12]))
}
for case in "/healthz|" "/api/v1/clusters|authorization: Bearer $token" \
    "/tokens|cookie: $cookie" "/clusters|cookie: $cookie" "/fleet|cookie: $cookie"; do
    path=${case%%|*} header=${case#*|}
    [[ -z $only || $path == *"$only"* ]] || continue
    args=(-t2 -c64 -d"${seconds}s" --latency)
    [[ -n $header ]] && args+=(-H "$header")
    before=$(cpu_ticks)
    out=$(wrk "${args[@]}" "$url$path")
    after=$(cpu_ticks)
    requests=$(sed -n 's/^ *\([0-9]*\) requests in.*/\1/p' <<<"$out")
    p50=$(awk '$1 == "50%" {print $2}' <<<"$out")
    p99=$(awk '$1 == "99%" {print $2}' <<<"$out")
    rps=$(awk '$1 == "Requests/sec:" {printf "%.0f", $2}' <<<"$out")
    cpu=$(echo "($after - $before) * 10000 / $requests" | bc)
    bad=$(sed -n 's/.*Non-2xx or 3xx responses: \([0-9]*\).*/ (\1 non-2xx!)/p' <<<"$out")
    printf 'GET %-18s p50 %8s  p99 %8s  %7s req/s  %5s us CPU/req (server)%s\n' \
        "$path" "$p50" "$p99" "$rps" "$cpu" "$bad"
done
