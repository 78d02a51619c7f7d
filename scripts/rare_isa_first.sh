#!/usr/bin/env bash
# First thing on a machine whose instruction sets the last sessions lacked (AMX tiles on an Intel
# Xeon; AVX512_BF16 on AMD Zen 4 / Zen 5, where the bf16 dot kernels are the policy): runs the
# kernels' tests on the real instructions, then the benchmarks that only such a CPU can give,
# and keeps every log under bench/out/<date>-<cpu>/. The CPU module decides what runs here
# (libaclnn's policies, as the tests ask it), never this script: it only says what it saw.
#
#   scripts/rare_isa_first.sh [--no-bench] [--rounds N]
#
# Needs a built tree (scripts/build.sh); the benchmarks also want python3-torch and
# libdnnl-dev (scripts/setup.sh installs neither: they are bench-only peers).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bench=1
rounds=3
while [[ $# -gt 0 ]]; do
  case "$1" in
    --no-bench) bench=0 ;;
    --rounds) rounds="$2"; shift ;;
    *) echo "usage: $0 [--no-bench] [--rounds N]" >&2; exit 2 ;;
  esac
  shift
done
build="$root/build"
[[ -x "$build/bench/aclnn_conv_bench" ]] || { echo "build first: scripts/build.sh" >&2; exit 1; }

family=$(awk -F: '/^cpu family/ {gsub(/ /, "", $2); print $2; exit}' /proc/cpuinfo)
model=$(awk -F: '/^model[ \t]/ {gsub(/ /, "", $2); print $2; exit}' /proc/cpuinfo)
flags=$(grep -m1 '^flags' /proc/cpuinfo)
has() { [[ " $flags " == *" $1 "* ]]; }
out="$root/bench/out/$(date +%Y%m%d-%H%M)-f${family}m${model}"
mkdir -p "$out"
{
  echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-) (family $family model $model)"
  for f in avx2 avx512f avx512_bf16 avx512_fp16 amx_tile amx_bf16; do
    if has "$f"; then echo "#   has $f"; fi
  done
} | tee "$out/cpu.txt"

# The tests that run the rare kernels on the real instructions where the policies turn them on
# (AMX: amx_gemm and tbc_amx on the tiles, the tile model checked against them; AVX512_BF16 dot:
# the bf16dot1 runs), plus the CPU module's own.
cd "$build"
ctest --output-on-failure -j "$(nproc)" \
  -R 'aclnn_test_(amx_gemm|conv_tbc_amx|conv_amx_model|cpu_module)|bf16dot|amx' \
  >"$out/ctest.txt" 2>&1 || true
grep -E 'tests passed|tests failed' "$out/ctest.txt"
# Skipped here: where the real instructions are absent (or capped), the kernels' real-hardware
# tests skip; on the rare machine this list should be short.
grep -E '^\s+[0-9]+ - .*\((Skipped|Failed)\)' "$out/ctest.txt" || echo "(none skipped)"

[[ $bench == 1 ]] || exit 0
cd "$root"
unset OPENBLAS_CORETYPE
onednn=()
[[ -x build/bench/onednn_conv_bench ]] && onednn=(--onednn build/bench/onednn_conv_bench)
for threads in 2 1; do
  for dtype in bf16 f32; do
    /usr/bin/python3 bench/compare_pytorch.py --bench build/bench/aclnn_conv_bench "${onednn[@]}" \
      --threads "$threads" --rounds "$rounds" --dtype "$dtype" \
      --json "$out/compare_${dtype}_${threads}t.json" | tee "$out/compare_${dtype}_${threads}t.txt"
  done
done
(cd bench && /usr/bin/python3 dtype_ratios.py --bench ../build/bench/aclnn_conv_bench \
  --threads 2 --rounds "$rounds" --dtypes bf16,f16,usefp16) | tee "$out/dtype_ratios_2t.txt"
build/bench/train_step_bench --benchmark_repetitions="$rounds" \
  --benchmark_report_aggregates_only=true | tee "$out/train_step.txt"
echo "logs: $out"
