#!/usr/bin/env bash
# Runs every test. One build, under sanitizers, serves the whole suite:
#   build-test/  clang, ASan+UBSan and libFuzzer's coverage instrumentation (-O0: it builds in
#                ~40% of an optimised build's time and the suite is I/O-bound). Every ctest test
#                runs in it, then a short libFuzzer run of every fuzz target (FUZZ_SECONDS each,
#                default 5; 0 skips it).
#   build-tsan/  ThreadSanitizer build of the programs and the tests that exercise threads
#                (scripts/tsan.sh), then the plugin's gRPC tests in it against TSan builds of
#                Debian's Abseil and gRPC (scripts/tsan-grpc.sh, ~4 minutes on 2 cores when its
#                cache is empty). TSAN=0 skips both, TSAN_GRPC=0 the second.
#   build-gcc/   GCC 12, -O2, warnings as errors, the programs only (GCC=0 skips it).
#   the cluster  a real one-node Kubernetes (scripts/cluster.sh) with kube-rdma installed from
#                manifests/, once with the device plugin and once with the DRA driver
#                (ctest -L cluster; CLUSTER=0 skips it).
# Benchmarks are not run here: they use optimised builds (BENCHMARKS.md).
set -euo pipefail
cd "$(dirname "$0")/.."
# Each stage's wall time, so a run that nears CI's budget shows where the time went.
stage_start=$SECONDS
stage_done() {
  echo "test.sh: $1 took $((SECONDS - stage_start)) s (total $SECONDS s)" >&2
  stage_start=$SECONDS
}
scripts/setup.sh --tests
stage_done setup
source scripts/sanitizer-env.sh
# KUBE_RDMA_LIBNCCL: the NCCL setup.sh installed, which the libnccl tests and the demo load.
source scripts/libnccl-env.sh

build_dir=${BUILD_DIR:-build-test}
CC=clang CXX=clang++ BUILD_DIR="$build_dir" scripts/build.sh -DCMAKE_BUILD_TYPE=Debug \
  "-DCMAKE_CXX_FLAGS_DEBUG=-O0 -gline-tables-only" "-DCMAKE_C_FLAGS_DEBUG=-O0 -gline-tables-only" \
  -DKUBE_RDMA_SANITIZE=address -DKUBE_RDMA_FUZZ=ON \
  -DCMAKE_EXE_LINKER_FLAGS=-fuse-ld=lld -DCMAKE_SHARED_LINKER_FLAGS=-fuse-ld=lld \
  -DKUBE_RDMA_CLUSTER_TESTS=ON
stage_done "ASan+UBSan build"
ctest --test-dir "$build_dir" --output-on-failure -j "${JOBS:-2}" --timeout 600 -LE cluster
stage_done "ASan+UBSan tests"

# The end-to-end suites on a real one-node cluster (test/cluster/, docs/cluster.md), with the
# programs of the ASan build in the image: Kubernetes and containerd built from their Go modules
# (about 9 minutes on 2 cores the first time, cached after), then one cluster per driver.
if [[ "${CLUSTER:-1}" != 0 ]]; then
  if [[ $(id -u) != 0 ]]; then
    echo "test.sh: the cluster suites need root (namespaces, mounts, cgroups): NOT RUN" >&2
  else
    scripts/cluster-build.sh >/dev/null
    stage_done "cluster programs (Go)"
    ctest --test-dir "$build_dir" --output-on-failure -L cluster
    stage_done "cluster end-to-end tests"
  fi
fi

# The programs as GCC 12 builds them with warnings as errors (scripts/build.sh, -O2): the README,
# the image and scripts/demo.sh build with g++, whose warnings differ from clang's. GCC=0 skips it.
if [[ "${GCC:-1}" != 0 ]]; then
  CC=gcc CXX=g++ BUILD_DIR="${GCC_BUILD_DIR:-build-gcc}" scripts/build.sh -DBUILD_TESTING=OFF
  stage_done "g++ -Werror build"
fi

fuzz_seconds=${FUZZ_SECONDS:-5}
if [[ "$fuzz_seconds" != 0 ]]; then
  FUZZ_BUILD_DIR="$build_dir" scripts/fuzz.sh "$fuzz_seconds"
  stage_done fuzzing
fi
if [[ "${TSAN:-1}" != 0 ]]; then
  scripts/tsan.sh
  stage_done "TSan build and tests"
  if [[ "${TSAN_GRPC:-1}" != 0 ]]; then
    scripts/tsan-grpc.sh
    stage_done "TSan gRPC libraries and tests"
  fi
fi
