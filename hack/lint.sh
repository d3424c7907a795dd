#!/usr/bin/env bash
# Architecture checks that keep the code true to docs/architecture.md ("Components and data flow");
# fails (exit 1) naming each violation.
#  1. Wall time is read only by the Clock (controller/common/clock.h): the simulator and the policy
#     run on simulated or injected time, so a stray absl::Now() would break determinism and replay.
#  2. The simulator never includes controller headers, gRPC or cpprestsdk.
#  3. policy/ and state/ do no I/O (no sockets, files, cpprest, grpc).
#  4. Every reference resolves inside the repository: nothing outside docs/ and .ci/ cites the
#     design notes kept beside the repository (its DESIGN, STYLE, REFERENCE and CPP_NOTES markdown
#     files), which users of the repository do not have. Cite docs/architecture.md or
#     docs/reference.md by section heading instead.
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

# The pattern is split so that this script does not match itself.
outside_notes=$(grep -rnIE '(DESIGN|STYLE|REFERENCE|CPP_NOTES)[.]md' \
  --exclude-dir='build*' --exclude-dir=.git --exclude-dir=docs --exclude-dir=.ci . \
  | sed 's|^\./||')
[[ -n $outside_notes ]] && report "citations of design notes outside the repository (cite docs/architecture.md or docs/reference.md by section instead):"$'\n'"$outside_notes"

((fail)) && exit 1
echo "lint: ok"
