#!/usr/bin/env bash
# The CI's second stage: libaclnn and its whole test suite (labels aclnn and fuzz; the long sweeps
# are left to the first stage) under AddressSanitizer + UndefinedBehaviorSanitizer, built with
# clang 14 in build-sanitize/, then the C-API fuzzer for 60 s from the seed corpus.
# The framework layers need std::source_location, which clang 14 lacks; `--framework` runs them
# (and everything else, long sweeps excepted) under GCC's ASan + UBSan in build-sanitize-gcc/
# instead: a manual run, too long for CI (see README "Reliability").
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
if [[ ${1:-} == --framework ]]; then
  "$root/scripts/setup.sh"
  build="$root/build-sanitize-gcc"
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DACLGRAD_SANITIZE=address,undefined -DACLGRAD_BUILD_BENCH=OFF >/dev/null
  cmake --build "$build" -j "$(nproc)"
  cd "$build"
  exec ctest --output-on-failure -j "$(nproc)" -LE long --timeout 900
fi
"$root/scripts/setup.sh" clang-14 libclang-rt-14-dev
build="$root/build-sanitize"
CC=clang-14 CXX=clang++-14 cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DACLGRAD_BUILD_FRAMEWORK=OFF -DACLGRAD_SANITIZE=address,undefined -DACLGRAD_FUZZ=ON >/dev/null
cmake --build "$build" -j "$(nproc)"
cd "$build"
ctest --output-on-failure -j "$(nproc)" -LE long --timeout 600
