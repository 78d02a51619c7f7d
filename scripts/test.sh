#!/usr/bin/env bash
# Sets up, builds and runs the whole test suite (every ctest label, the long ones included).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/build.sh"
cd "$root/build"
ctest --output-on-failure -j "$(nproc)" --timeout 600
