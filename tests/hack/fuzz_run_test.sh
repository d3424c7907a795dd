#!/usr/bin/env bash
# hack/fuzz-run.sh (hack/fuzz.sh's running and reporting) against fake fuzzers, shell scripts that
# answer libFuzzer's command line as libFuzzer does: `crasher` writes its input to
# <artifact_prefix>crash-<sha1 of the input>, prints "Test unit written to <that path>" and exits 1
# (a crash found); `passer` prints a clean run's last lines and exits 0. Each run is a separate bash
# that sources the file the way hack/fuzz.sh does, seeds in a temporary directory its EXIT trap
# deletes. Checked: a crash's reproducer is still there after that bash has exited, holding the
# crashing input, and its path and the command that replays it were printed; the fuzzers after the
# crashing one still ran; the run exits 1 naming the crashed fuzzer; a clean run exits 0.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

mkdir -p "$tmp/bin"
cat >"$tmp/bin/crasher" <<'FAKE'
#!/usr/bin/env bash
prefix=
for a in "$@"; do
  case $a in -artifact_prefix=*) prefix=${a#-artifact_prefix=} ;; -*) ;; *) corpus=$a ;; esac
done
input="crashing input from $(ls "$corpus")"
sum=$(printf '%s' "$input" | sha1sum | cut -d' ' -f1)
printf '%s' "$input" >"${prefix}crash-$sum"
echo "==1==ERROR: AddressSanitizer: heap-buffer-overflow"
echo "SUMMARY: AddressSanitizer: heap-buffer-overflow fake.cc:1 in LLVMFuzzerTestOneInput"
echo "artifact_prefix='$prefix'; Test unit written to ${prefix}crash-$sum"
echo "Base64: $(printf '%s' "$input" | base64)"
exit 1
FAKE
cat >"$tmp/bin/passer" <<'FAKE'
#!/usr/bin/env bash
for a in "$@"; do [[ $a == -* ]] || touch "$(dirname "$0")/passer-ran"; done
echo "#1024 DONE cov: 10 ft: 10 corp: 1/1b exec/s: 0 rss: 30Mb"
echo "Done 1024 runs in 1 second(s)"
FAKE
chmod +x "$tmp/bin/crasher" "$tmp/bin/passer"

# One hack/fuzz.sh-like run of the fuzzers named: each over a seed in a temporary corpus.
run_fuzzers() {
  FUZZ_ARTIFACTS="$tmp/artifacts" SECONDS_PER_FUZZER=1 bash -c '
    set -euo pipefail
    source "$1/hack/fuzz-run.sh"
    work=$(mktemp -d)
    trap "rm -rf \"$work\"" EXIT
    shift
    for f in "$@"; do
      mkdir -p "$work/$f"
      echo seed >"$work/$f/seed-for-$f"
      fuzz_run "$f" "'"$tmp"'/bin/$f" "$work/$f"
    done
    fuzz_report' _ "$repo" "$@"
}

status=0
out=$(run_fuzzers crasher passer 2>&1) || status=$?
echo "$out"
((status == 1)) || fail "a crash must make the run exit 1, got $status"
input="crashing input from seed-for-crasher"
want="$tmp/artifacts/crasher/crash-$(printf '%s' "$input" | sha1sum | cut -d' ' -f1)"
[[ -f $want ]] || fail "the reproducer $want is gone after the run"
[[ $(cat "$want") == "$input" ]] || fail "the reproducer does not hold the crashing input"
grep -qxF "fuzz: reproducer kept: $want" <<<"$out" || fail "the reproducer's path was not printed"
grep -qxF "fuzz:   replay it: $tmp/bin/crasher $want" <<<"$out" ||
  fail "the command that replays it was not printed"
grep -qF "SUMMARY: AddressSanitizer: heap-buffer-overflow" <<<"$out" || fail "no crash summary"
[[ -f $tmp/bin/passer-ran ]] || fail "the fuzzer after the crashing one did not run"
grep -qF "fuzz: failing inputs found by crasher;" <<<"$out" || fail "the crashed fuzzer not named"
grep -qF "fuzz: no crashes" <<<"$out" && fail "a failed run said no crashes"
[[ -f $tmp/artifacts/crasher/last-run.log ]] || fail "the crashing run's output was not kept"

# A clean run: exit 0, and the earlier reproducer is still kept (nothing deletes them).
out=$(run_fuzzers passer 2>&1) || fail "a clean run must exit 0: $out"
grep -qxF "fuzz: no crashes" <<<"$out" || fail "a clean run must say so: $out"
[[ -f $want ]] || fail "a later run deleted the earlier reproducer"
echo "fuzz-run: ok"
