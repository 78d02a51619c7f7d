#!/usr/bin/env bash
# Sets up, builds and runs the main job. Arguments are passed to the program.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/build.sh"
exec "$root/build/examples/aclnn/conv_backward_demo" "$@"
