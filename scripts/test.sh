#!/usr/bin/env bash
# Sets up, checks formatting (clang-format), builds, checks that every tracked source is compiled
# (scripts/check_sources.sh) and runs the whole test suite: every ctest
# label, the long ones and the tier runs (every aclnn suite again under ACLNN_CPU_MAX_ISA=avx2 and
# =none) included.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/check_format.sh"
"$root/scripts/build.sh"
"$root/scripts/check_sources.sh"
cd "$root/build"
ctest --output-on-failure -j "$(nproc)" --timeout 600
