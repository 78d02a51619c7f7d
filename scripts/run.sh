#!/usr/bin/env bash
# Sets up, builds and runs the main job. Arguments are passed to the program. Builds only what the
# main job needs (the libraries and train_fashion_mnist; ./scripts/test.sh builds everything).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/build.sh" --target train_fashion_mnist
# This machine's environment sets OPENBLAS_CORETYPE=Haswell, which pins OpenBLAS to its AVX2
# kernels (about half the SGEMM throughput on AVX-512 CPUs). OpenBLAS reads it once at load time,
# so the only place to undo it is before the program starts. See README "Performance notes".
unset OPENBLAS_CORETYPE
exec "$root/build/examples/train_fashion_mnist/train_fashion_mnist" "$@"
