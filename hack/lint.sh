#!/usr/bin/env bash
# Architecture checks that keep the code true to docs/architecture.md ("Components and data flow");
# fails (exit 1) naming each violation.
#  1. Wall time is read only by the Clock (controller/common/clock.h): the simulator and the policy
#     run on simulated or injected time, so a stray absl::Now() would break determinism and replay.
#  2. The simulator never includes controller headers, gRPC or cpprestsdk, not even in its tests.
#  3. api/, policy/ and state/ do no I/O (no sockets, files, cpprest, grpc); the spec loader's file
#     read (controller/api/spec_loader.cc) is the one exception.
#  4. controller/api/ (the InferenceAutoscaler spec, its loader and its schema engine) includes no
#     other controller folder: every folder may depend on the spec, the spec on none of them. Its
#     public headers do not include yaml-cpp; the schema engine's headers, which take yaml-cpp nodes
#     (openapi_schema.h, openapi_schema_node.h), are included nowhere else in controller/ (tests/
#     may run the engine: openapi_schema.h), and openapi_schema_node.h only by the engine's files.
#  5. Every reference resolves inside the repository: nothing outside docs/ and .ci/ cites the
#     design notes kept beside the repository (its DESIGN, STYLE, REFERENCE and CPP_NOTES markdown
#     files), which users of the repository do not have. Cite docs/architecture.md or
#     docs/reference.md by section heading instead.
#  6. C++ sources are as clang-format (Debian bookworm's, 14) formats them (see the check below).
set -uo pipefail
cd "$(dirname "$0")/.."
fail=0
report() { echo "lint: $*"; fail=1; }

clock_reads=$(grep -rnE 'absl::Now\(\)|system_clock|steady_clock|high_resolution_clock|gettimeofday|clock_gettime|[^_a-zA-Z]time\(nullptr\)|[^_a-zA-Z]time\(NULL\)' \
  --include='*.cc' --include='*.h' simulator controller \
  | grep -v '^controller/common/clock.h:' | grep -v '_test.cc:')
[[ -n $clock_reads ]] && report "wall-clock reads outside controller/common/clock.h:"$'\n'"$clock_reads"

# Tests included: those that read the twin's output with the controller's parser (as a scraper
# would) live in tests/integration/.
sim_deps=$(grep -rnE '#include "(controller/|grpc|cpprest)|#include <(grpc|cpprest)' --include='*.cc' --include='*.h' simulator)
[[ -n $sim_deps ]] && report "simulator includes controller, gRPC or cpprestsdk headers:"$'\n'"$sim_deps"

if [[ -d controller/api || -d controller/policy || -d controller/state ]]; then
  pure_io=$(grep -rnE '#include <(fstream|cstdio|sys/socket.h)>|#include "(cpprest|grpc)|#include <(cpprest|grpc)' \
    --include='*.cc' --include='*.h' controller/api controller/policy controller/state 2>/dev/null \
    | grep -v '_test.cc:' | grep -v '^controller/api/spec_loader.cc:.*fstream')
  [[ -n $pure_io ]] && report "I/O in the pure api/policy/state code:"$'\n'"$pure_io"
fi

if [[ -d controller/api ]]; then
  api_deps=$(grep -rnE '#include "controller/' --include='*.cc' --include='*.h' controller/api \
    | grep -vE '^[^:]+:[0-9]+:#include "controller/api/')
  [[ -n $api_deps ]] && report "controller/api/ includes another controller folder (the spec depends on none):"$'\n'"$api_deps"
  api_yaml=$(grep -nE '#include [<"]yaml-cpp/' controller/api/*.h \
    | grep -vE '^controller/api/openapi_schema(_node)?\.h:')
  [[ -n $api_yaml ]] && report "yaml-cpp in a public header of controller/api/ (keep it in the schema engine):"$'\n'"$api_yaml"
  engine_users=$( (grep -rnE '#include "controller/api/openapi_schema(_node)?\.h"' \
      --include='*.cc' --include='*.h' controller simulator | grep -v '^controller/api/'
    grep -rnE '#include "controller/api/openapi_schema_node\.h"' --include='*.cc' --include='*.h' \
      --exclude-dir='build*' --exclude-dir=.git . | sed 's|^\./||' | grep -v '^controller/api/openapi_'))
  [[ -n $engine_users ]] && report "the schema engine's yaml-cpp headers included outside controller/api/ (use spec_loader.h):"$'\n'"$engine_users"
fi

# The pattern is split so that this script does not match itself.
outside_notes=$(grep -rnIE '(DESIGN|STYLE|REFERENCE|CPP_NOTES)[.]md' \
  --exclude-dir='build*' --exclude-dir=.git --exclude-dir=docs --exclude-dir=.ci . \
  | sed 's|^\./||')
[[ -n $outside_notes ]] && report "citations of design notes outside the repository (cite docs/architecture.md or docs/reference.md by section instead):"$'\n'"$outside_notes"

# 6. C++ sources are formatted by clang-format with the repository's .clang-format (Google style,
#    100 columns): `clang-format -i FILE` fixes one. Skipped, with a note, where clang-format is
#    not installed (hack/setup.sh installs it).
if command -v clang-format >/dev/null; then
  unformatted=$( (git ls-files '*.cc' '*.h'; git ls-files --others --exclude-standard '*.cc' '*.h') 2>/dev/null \
    | sort -u | while read -r f; do
      [[ -f $f ]] || continue
      clang-format --style=file "$f" | cmp -s - "$f" || echo "$f"
    done)
  [[ -n $unformatted ]] && report "files clang-format would change (run clang-format -i on them):"$'\n'"$unformatted"
else
  echo "lint: clang-format not installed; the format check is skipped"
fi

((fail)) && exit 1
echo "lint: ok"
