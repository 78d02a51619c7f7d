#!/usr/bin/env bash
# Configures and builds aclgrad into build/ (Release): everything, or only `--target NAME ...`.
# Other arguments go to cmake's configure step. Uses ccache when it is installed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
targets=()
configure=()
while (($#)); do
  if [[ $1 == --target && $# -ge 2 ]]; then
    targets+=(--target "$2")
    shift 2
  else
    configure+=("$1")
    shift
  fi
done
cmake -S "$root" -B "$root/build" -DCMAKE_BUILD_TYPE=Release "${configure[@]}" >/dev/null
cmake --build "$root/build" -j "$(nproc)" "${targets[@]}"
