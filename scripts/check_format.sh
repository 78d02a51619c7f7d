#!/usr/bin/env bash
# Checks that every tracked C and C++ file is as clang-format (14, .clang-format) writes it; lists
# the files that are not. Fix them with: git ls-files '*.cpp' '*.h' '*.c' | xargs clang-format -i
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh" clang-format
cd "$root"
bad=()
while IFS= read -r f; do
  clang-format --dry-run -Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done < <(git ls-files '*.cpp' '*.h' '*.c')
if ((${#bad[@]})); then
  echo "check_format: not clang-formatted (${#bad[@]} files):" >&2
  printf '  %s\n' "${bad[@]}" >&2
  exit 1
fi
echo "check_format: $(git ls-files '*.cpp' '*.h' '*.c' | wc -l) files formatted"
