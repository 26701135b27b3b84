#!/usr/bin/env bash
# ThreadSanitizer over the tests that exercise threads without gRPC: the inotify watchers behind
# every reload, the webhook's TLS server (its event-loop threads, per-connection deadlines,
# certificate rotation mid-stream, policy reloads, SIGTERM drain; in process, AdmissionServer
# with a test Reviewer), the daemons' /metrics server (cpp-httplib against clients and shutdown)
# and the plugin's shared state driven as gRPC drives it (ListAndWatch waiters, Allocate calls,
# health updates, the health watcher's thread and interval changes:
# test/plugin/concurrency_test.cc) and the Kubernetes API client against the API-server simulator
# (watches stopped from another thread, pooled keep-alive connections). Builds only what those
# tests need into build-tsan/ and runs them.
#
# The plugin's gRPC tests are not run here (plugin_tests is built for its concurrency tests):
# against Debian's Abseil and gRPC, which are not built with TSan, every gRPC test reports races
# inside their frames (16 of 16 tests, ~1,400 reports). scripts/tsan-grpc.sh runs them against
# TSan builds of those libraries from Debian's sources (0 reports); scripts/test.sh runs it
# after this (docs/testing.md).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/sanitizer-env.sh
build_dir=${TSAN_BUILD_DIR:-build-tsan}
if [[ ! -f "$build_dir/build.ninja" ]]; then
  CC=clang CXX=clang++ cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Debug \
    "-DCMAKE_CXX_FLAGS_DEBUG=-O0 -gline-tables-only" "-DCMAKE_C_FLAGS_DEBUG=-O0 -gline-tables-only" \
    -DKUBE_RDMA_SANITIZE=thread -DKUBE_RDMA_WERROR=ON \
    -DCMAKE_EXE_LINKER_FLAGS=-fuse-ld=lld -DCMAKE_SHARED_LINKER_FLAGS=-fuse-ld=lld >/dev/null
fi
cmake --build "$build_dir" -j "${JOBS:-2}" --target fixtures common_tests webhook_tests rdma-webhook \
  plugin_tests http_tests kubeclient_tests nri_tests
ctest --test-dir "$build_dir" --output-on-failure -j "${JOBS:-2}" --timeout 600 \
  -R '^(InotifyWatcher|AdmissionServerTest|WebhookE2E|MetricsEndpoint|PluginConcurrency|ApiClientTest|ClaimCacheTest|LivenessWatchdog|NriPlugin|PodEventRecorderTest)\.'
