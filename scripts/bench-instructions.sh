#!/usr/bin/env bash
# Instructions per request of a built `kqueen` binary: a figure that, unlike times, does not
# move with whatever else the machine runs (a shared 2-core VM's timings of one binary vary by
# a fifth between runs, and these VMs have no hardware counters for `perf stat`). Seeds what
# bench-pages.sh seeds (1,000 clusters in 50 tenants, SQLite, or as
# scripts/lib/bench-seed.sh's variables say) with the binary running
# natively, restarts it under valgrind's callgrind (which counts every instruction the process
# executes, in every thread: the tokio workers and SQLite's connection threads alike), warms
# each case up, then sends rounds of REQUESTS sequential keep-alive requests per case and
# prints the instructions each cost, from a callgrind dump taken around exactly those requests.
#
#   scripts/bench-instructions.sh target/serve/kqueen [REQUESTS]    (default 100 per round)
#   KQUEEN_BENCH_ONLY=clusters (cases whose path has it)   KQUEEN_BENCH_ROUNDS=3 (default)
#   KQUEEN_BENCH_KEEP=DIR      keep each round's callgrind dump in DIR (callgrind_annotate
#                              --inclusive=yes DIR/tokens.1.out shows where the instructions
#                              went; a binary built with CARGO_PROFILE_SERVE_DEBUG=
#                              line-tables-only names inlined code too)
#
# Compare binaries by running this for each, one after the other. Not exact: how often an
# awaited answer is ready when a page first polls it depends on thread timing, so rounds in
# one process differ by a few per cent and whole runs of one binary by up to 8 % (2026-11-29:
# `/clusters` 3.21 and 3.47 million). Needs valgrind, curl, jq and bc.
set -euo pipefail

bin=${1:?usage: scripts/bench-instructions.sh BINARY [REQUESTS]}
requests=${2:-100}
rounds=${KQUEEN_BENCH_ROUNDS:-3}
port=${KQUEEN_BENCH_PORT:-3902}
only=${KQUEEN_BENCH_ONLY:-}
keep=${KQUEEN_BENCH_KEEP:-}
[[ -z $keep ]] || { mkdir -p "$keep"; keep=$(realpath "$keep"); }
# shellcheck source=scripts/lib/bench-seed.sh
source "$(dirname "$0")/lib/bench-seed.sh" valgrind callgrind_control
start_seeded
stop_server
echo "; $(basename "$(dirname "$bin")")/$(basename "$bin") on $store under callgrind, $requests requests per case"

# The same database, session and token, now counted. Start-up under valgrind takes a while.
# Names written out in full in every dump (not compressed to ids): greppable as they are.
TRIES=1200 start_server valgrind --tool=callgrind --callgrind-out-file="$dir/callgrind.out" \
    --compress-strings=no

# One curl process, one keep-alive connection: COUNT GETs of PATH with HEADER; every answer
# must be a 200.
get() { # get COUNT PATH HEADER
    local codes
    codes=$(for _ in $(seq "$1"); do
        printf 'url = "%s%s"\nheader = "%s"\noutput = "/dev/null"\nwrite-out = "%%{http_code}\\n"\nnext\n' \
            "$url" "$2" "$3"
    done | sed '$d' | curl -s -K - | sort | uniq -c | tr -s ' ')
    [[ $codes == " $1 200" ]] || { echo "bench-instructions: GET $2 answered:$codes" >&2; exit 1; }
}

for case in "/healthz|x-bench: 1" "/api/v1/clusters|authorization: Bearer $token" \
    "/tokens|cookie: $cookie" "/clusters|cookie: $cookie" "/fleet|cookie: $cookie"; do
    path=${case%%|*} header=${case#*|}
    [[ -z $only || $path == *"$only"* ]] || continue
    get 20 "$path" "$header" # caches, lazily built state, the first connection's set-up
    # Rounds of REQUESTS each; the least is the figure to compare (see the top).
    counts=()
    for round in $(seq "$rounds"); do
        callgrind_control --zero "$server" >/dev/null 2>&1
        get "$requests" "$path" "$header"
        callgrind_control --dump "$server" >/dev/null 2>&1
        dump=$(ls -t "$dir"/callgrind.out.* | head -1)
        total=$(sed -n 's/^totals: *\([0-9]*\).*/\1/p' "$dump")
        [[ -n $total ]] || { echo "bench-instructions: no totals in $dump" >&2; exit 1; }
        counts+=($((total / requests)))
        name=$(tr -c 'a-z0-9\n' '-' <<<"${path#/}" | sed 's/^-*//; s/-*$//')
        if [[ -n $keep ]]; then mv "$dump" "$keep/${name:-root}.$round.out"; else rm -f "$dump"; fi
    done
    sorted=$(printf '%s\n' "${counts[@]}" | sort -n | tr '\n' ' ')
    printf 'GET %-18s %10s instructions/request (least of %s rounds; all: %s)\n' \
        "$path" "${sorted%% *}" "$rounds" "${sorted% }"
done
