#!/usr/bin/env bash
# Runs every test: installs what is missing, builds, runs ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure -j "${JOBS:-2}" --timeout 300
