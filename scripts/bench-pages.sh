#!/usr/bin/env bash
# Page speed of a built `kqueen` binary, as a user of `make run` or of the image meets it:
# starts BINARY on a fresh database (SQLite, or PostgreSQL with KQUEEN_BENCH_POSTGRES; no
# workers, logs at warn), seeds what the cluster_list bench seeds (an operator, 50 tenants, a
# `command` provider, a template, 1,000 clusters; KQUEEN_BENCH_TENANTS and _CLUSTERS, see
# scripts/lib/bench-seed.sh) through the CLI and the REST API, then drives GET /healthz,
# /api/v1/clusters, /tokens, /clusters and /fleet with wrk (64 keep-alive connections, 2
# threads, SECONDS each) and prints p50/p99, req/s and the server's own CPU time, minor page
# faults and thread context switches per request (from /proc, without the load generator's).
#
#   scripts/bench-pages.sh target/run/kqueen [SECONDS]     (default 5 s per case)
#   KQUEEN_BENCH_PORT=3901 (default)   KQUEEN_BENCH_ONLY=clusters (cases whose path has it)
#
# Needs wrk (Debian package `wrk`), curl, jq and bc. Figures move with whatever else runs on the
# machine: run it alone, and compare binaries in one sitting.
set -euo pipefail

bin=${1:?usage: scripts/bench-pages.sh BINARY [SECONDS]}
seconds=${2:-5}
port=${KQUEEN_BENCH_PORT:-3901}
only=${KQUEEN_BENCH_ONLY:-}
# shellcheck source=scripts/lib/bench-seed.sh
source "$(dirname "$0")/lib/bench-seed.sh" wrk
start_seeded
printf '; %s\n' "$(basename "$(dirname "$bin")")/$(basename "$bin") on $store, $seconds s per case, 64 connections"

counters() { # the server's CPU time (utime + stime, 1/100 s), minor page faults, and context
    # switches (voluntary and not) summed over its threads
    local stat switches
    stat=$(<"/proc/$server/stat")
    read -ra f <<<"${stat##*) }"
    switches=$(cat /proc/"$server"/task/*/status 2>/dev/null |
        awk '/^(non)?voluntary_ctxt_switches/ {n += $2} END {print n + 0}')
    echo "$((f[11] + f[12])) ${f[7]} $switches"
}
for case in "/healthz|" "/api/v1/clusters|authorization: Bearer $token" \
    "/tokens|cookie: $cookie" "/clusters|cookie: $cookie" "/fleet|cookie: $cookie"; do
    path=${case%%|*} header=${case#*|}
    [[ -z $only || $path == *"$only"* ]] || continue
    args=(-t2 -c64 -d"${seconds}s" --latency)
    [[ -n $header ]] && args+=(-H "$header")
    read -r cpu0 faults0 switches0 <<<"$(counters)"
    out=$(wrk "${args[@]}" "$url$path")
    read -r cpu1 faults1 switches1 <<<"$(counters)"
    requests=$(sed -n 's/^ *\([0-9]*\) requests in.*/\1/p' <<<"$out")
    p50=$(awk '$1 == "50%" {print $2}' <<<"$out")
    p99=$(awk '$1 == "99%" {print $2}' <<<"$out")
    rps=$(awk '$1 == "Requests/sec:" {printf "%.0f", $2}' <<<"$out")
    cpu=$(echo "($cpu1 - $cpu0) * 10000 / $requests" | bc)
    faults=$(echo "scale=1; ($faults1 - $faults0) / $requests" | bc)
    switches=$(echo "scale=1; ($switches1 - $switches0) / $requests" | bc)
    bad=$(sed -n 's/.*Non-2xx or 3xx responses: \([0-9]*\).*/ (\1 non-2xx!)/p' <<<"$out")
    printf 'GET %-18s p50 %8s  p99 %8s  %7s req/s  %5s us CPU/req (server)  %5s faults/req  %5s switches/req%s\n' \
        "$path" "$p50" "$p99" "$rps" "$cpu" "$faults" "$switches" "$bad"
done
