# shellcheck shell=bash
# Running libFuzzer targets and keeping what they find. Sourced by hack/fuzz.sh, and by
# tests/hack/fuzz_run_test.sh, which runs it against a fake fuzzer that crashes.
#
#   fuzz_run NAME BINARY CORPUS_DIR
#       Runs BINARY over CORPUS_DIR for $SECONDS_PER_FUZZER seconds (default 60) and prints the
#       last lines of its output. What it finds (crash-*, leak-*, timeout-*, oom-* files) goes to
#       $FUZZ_ARTIFACTS/NAME/, a directory nothing deletes (the corpus may be a temporary one), with
#       the run's whole output in $FUZZ_ARTIFACTS/NAME/last-run.log. When the fuzzer fails, prints
#       on stderr each reproducer's path, as libFuzzer reports it ("Test unit written to ..."), and
#       the command that replays it ("BINARY FILE"), remembers NAME, and still returns 0: the
#       caller goes on with the other fuzzers.
#   fuzz_report
#       Returns 1, naming the fuzzers that failed, if any did since the file was sourced; else
#       prints "fuzz: no crashes" and returns 0.
#
# FUZZ_ARTIFACTS must be set before fuzz_run (hack/fuzz.sh: build-fuzz/artifacts); it is made
# absolute so that the printed paths and commands work from any directory.

FUZZ_FAILED=()

fuzz_run() {
  local name=$1 bin=$2 corpus=$3
  local dir
  dir=$(realpath -m "${FUZZ_ARTIFACTS:?FUZZ_ARTIFACTS must name where reproducers are kept}/$name")
  bin=$(realpath -m "$bin")
  mkdir -p "$dir"
  local log="$dir/last-run.log" status=0
  echo "== $name for ${SECONDS_PER_FUZZER:-60}s"
  "$bin" -max_total_time="${SECONDS_PER_FUZZER:-60}" -rss_limit_mb=2048 -artifact_prefix="$dir/" \
    "$corpus" >"$log" 2>&1 || status=$?
  tail -n 3 "$log"
  ((status == 0)) && return 0
  FUZZ_FAILED+=("$name")
  echo "fuzz: $name failed (exit status $status); its output: $log" >&2
  grep -m 1 '^SUMMARY:' "$log" >&2 || true
  local units
  units=$(sed -n 's/^.*Test unit written to \(.*\)$/\1/p' "$log")
  if [[ -z $units ]]; then
    echo "fuzz: $name wrote no reproducer (see its output)" >&2
    return 0
  fi
  local unit
  while IFS= read -r unit; do
    echo "fuzz: reproducer kept: $unit" >&2
    echo "fuzz:   replay it: $bin $unit" >&2
  done <<<"$units"
  return 0
}

fuzz_report() {
  if ((${#FUZZ_FAILED[@]} > 0)); then
    echo "fuzz: failing inputs found by ${FUZZ_FAILED[*]}; reproducers (above) kept in" \
      "$(realpath -m "$FUZZ_ARTIFACTS")" >&2
    return 1
  fi
  echo "fuzz: no crashes"
}
