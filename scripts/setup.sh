#!/usr/bin/env bash
# Installs the Debian packages aclgrad needs, only those missing. Safe to run any number of times.
# Extra package names given as arguments are installed too (scripts/test_sanitizers.sh: clang).
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  libopenblas-dev libtbb-dev libgtest-dev libgmock-dev libbenchmark-dev
  zlib1g-dev libpng-dev nlohmann-json3-dev libcli11-dev
  libopenmpi-dev openmpi-bin
  iproute2 # ip netns: the mpi test with a rank on each of two hosts made on this machine
  dataset-fashion-mnist
  "$@"
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]} == 0)); then
  exit 0
fi

echo "setup: installing ${missing[*]}"
sudo=""
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "setup: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
