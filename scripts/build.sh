#!/usr/bin/env bash
# Configures and builds kube-rdma into build/ (or $BUILD_DIR), with warnings as errors (the
# project's default leaves them warnings for packagers' newer compilers). Extra arguments go to
# cmake, e.g. -DKUBE_RDMA_BENCHMARKS=ON for the benchmark programs (BENCHMARKS.md).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}
if [[ ! -f "$build_dir/build.ninja" ]]; then
  cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DKUBE_RDMA_WERROR=ON "$@" >/dev/null
fi
cmake --build "$build_dir" -j "${JOBS:-2}"
