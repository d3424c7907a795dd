#!/usr/bin/env bash
# Architecture checks that keep the code true to DESIGN.md; fails (exit 1) naming each violation.
#  1. Wall time is read only by the Clock (controller/common/clock.h): the simulator and the policy
#     run on simulated or injected time, so a stray absl::Now() would break determinism and replay.
#  2. The simulator never includes controller headers, gRPC or cpprestsdk.
#  3. policy/ and state/ do no I/O (no sockets, files, cpprest, grpc).
set -uo pipefail
cd "$(dirname "$0")/.."
fail=0
report() { echo "lint: $*"; fail=1; }

clock_reads=$(grep -rnE 'absl::Now\(\)|system_clock|steady_clock|high_resolution_clock|gettimeofday|clock_gettime|[^_a-zA-Z]time\(nullptr\)|[^_a-zA-Z]time\(NULL\)' \
  --include='*.cc' --include='*.h' simulator controller \
  | grep -v '^controller/common/clock.h:' | grep -v '_test.cc:')
[[ -n $clock_reads ]] && report "wall-clock reads outside controller/common/clock.h:"$'\n'"$clock_reads"

# Tests may parse the twin's output with the controller's parser (as a scraper would); libraries may not.
sim_deps=$(grep -rnE '#include "(controller/|grpc|cpprest)|#include <(grpc|cpprest)' --include='*.cc' --include='*.h' simulator \
  | grep -vE '_test\.cc:|_expectations\.h:|_test_util\.h:')
[[ -n $sim_deps ]] && report "simulator includes controller, gRPC or cpprestsdk headers:"$'\n'"$sim_deps"

if [[ -d controller/policy || -d controller/state ]]; then
  pure_io=$(grep -rnE '#include <(fstream|cstdio|sys/socket.h)>|#include "(cpprest|grpc)|#include <(cpprest|grpc)' \
    --include='*.cc' --include='*.h' controller/policy controller/state 2>/dev/null | grep -v '_test.cc:' \
    | grep -v 'spec_loader.cc:.*fstream')
  [[ -n $pure_io ]] && report "I/O in the pure policy/state code:"$'\n'"$pure_io"
fi

((fail)) && exit 1
echo "lint: ok"
