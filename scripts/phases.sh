#!/usr/bin/env bash
# Runs `make <phase>` for each phase given, in order, and prints how long each took, at the
# end (also when one fails: the failing phase is marked and the run stops there).
set -uo pipefail
cd "$(dirname "$0")/.."
names=() times=()
report() {
  echo "phases:"
  for i in "${!names[@]}"; do
    printf '  %-12s %4d:%02d\n' "${names[$i]}" $(( times[i] / 60 )) $(( times[i] % 60 ))
  done
}
for phase in "$@"; do
  echo "phase: $phase"
  start=$(date +%s)
  make --no-print-directory "$phase"
  status=$?
  names+=("$phase") times+=($(( $(date +%s) - start )))
  if [[ $status != 0 ]]; then
    names[-1]="$phase FAILED"
    report
    exit "$status"
  fi
done
report
