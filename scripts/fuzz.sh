#!/usr/bin/env bash
# Builds the libFuzzer targets with clang into build-fuzz/ and runs each one for SECONDS
# (default 10) on its seed corpus. Longer runs: scripts/fuzz.sh 600, or run one target by hand:
#   build-fuzz/test/fuzz/fuzz_shorthand -max_total_time=3600 test/fuzz/corpus/fuzz_shorthand
# New inputs go to build-fuzz/corpus/<target>/, never into the repository's seeds.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-10}
build_dir=${FUZZ_BUILD_DIR:-build-fuzz}
if [[ ! -f "$build_dir/build.ninja" ]]; then
  CC=clang CXX=clang++ cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DKUBE_RDMA_FUZZ=ON -DKUBE_RDMA_SANITIZE=address -DKUBE_RDMA_WERROR=ON >/dev/null
fi
cmake --build "$build_dir" -j "${JOBS:-2}" --target fuzz_targets
failed=0
for target in "$build_dir"/test/fuzz/fuzz_*; do
  [[ -x "$target" ]] || continue
  name=$(basename "$target")
  work="$build_dir/corpus/$name"
  mkdir -p "$work"
  if "$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=0 \
      -artifact_prefix="$build_dir/$name-" \
      "$work" "test/fuzz/corpus/$name" >"$build_dir/$name.log" 2>&1; then
    runs=$(grep -Eo 'Done [0-9]+ runs' "$build_dir/$name.log" | tail -1 || true)
    echo "fuzz: $name ok (${runs:-no run count} in ${seconds}s)"
  else
    echo "fuzz: $name FAILED, log follows" >&2
    tail -n 40 "$build_dir/$name.log" >&2
    failed=1
  fi
done
exit $failed
