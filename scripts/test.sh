#!/usr/bin/env bash
# Runs every test: installs what is missing, builds, runs ctest, then a short libFuzzer run of
# every fuzz target (FUZZ_SECONDS each, default 5; 0 skips the fuzz stage).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure -j "${JOBS:-2}" --timeout 600
fuzz_seconds=${FUZZ_SECONDS:-5}
if [[ "$fuzz_seconds" != 0 ]]; then
  scripts/fuzz.sh "$fuzz_seconds"
fi
