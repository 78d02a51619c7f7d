#!/usr/bin/env bash
# Checks that every tracked C and C++ source is compiled by the build in build/ (its
# compile_commands.json), so no file is left out of its target. The one rule for listing sources:
# a layer's library (aclnn, tensor, autograd, ops, nn) compiles every .cpp of its folder (CMake
# glob with CONFIGURE_DEPENDS, so a new file joins at the next build); programs and tests list
# their files. The files below are built elsewhere, each for the reason given.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
db="$build/compile_commands.json"
[[ -f $db ]] || { echo "check_sources: no $db (build first)" >&2; exit 1; }
# path prefix | why it is not in this build
elsewhere=(
  "tests/install/|built by the install test's consumer project against the installed tree"
  "bench/onednn_conv_bench.cpp|the optional oneDNN peer, built only where libdnnl-dev is found"
)
cd "$root"
compiled=$(grep -o '"file": "[^"]*"' "$db" | sed -e 's/^"file": "//' -e 's/"$//' \
  -e "s|^$root/||" | sort -u)
missing=()
while IFS= read -r f; do
  grep -qxF "$f" <<<"$compiled" && continue
  skip=0
  for e in "${elsewhere[@]}"; do [[ $f == "${e%%|*}"* ]] && skip=1; done
  ((skip)) || missing+=("$f")
done < <(git ls-files '*.cpp' '*.c')
if ((${#missing[@]})); then
  echo "check_sources: tracked sources no target compiles (${#missing[@]}):" >&2
  printf '  %s\n' "${missing[@]}" >&2
  exit 1
fi
echo "check_sources: every tracked source is compiled ($(wc -l <<<"$compiled") in the build)"
