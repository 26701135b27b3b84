#!/usr/bin/env bash
# Runs clang-tidy (the repo's .clang-tidy) over our C++ sources: every .cc in the compile
# database except generated proto code, and through HeaderFilterRegex our headers. Exits
# non-zero on any warning. Not part of CI: a full run takes several minutes on two cores.
#   scripts/tidy.sh                  all sources
#   scripts/tidy.sh common/pools/pools.cc  only the files named
# $TIDY_BUILD_DIR (default build-tidy) is configured with clang, the benchmarks and a compile
# database on first use; the proto target is built there because sources include its generated
# headers.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${TIDY_BUILD_DIR:-build-tidy}
clang_tidy=${CLANG_TIDY:-clang-tidy-14}

if [[ ! -f "$build_dir/compile_commands.json" ]]; then
  CC=clang CXX=clang++ cmake -S . -B "$build_dir" -G Ninja -DCMAKE_EXPORT_COMPILE_COMMANDS=ON \
    -DKUBE_RDMA_BENCHMARKS=ON >/dev/null
fi
cmake --build "$build_dir" -j "${JOBS:-2}" --target kube_rdma_proto >/dev/null

if [[ $# -gt 0 ]]; then
  files=("$@")
else
  # Sources the build compiles, minus what protoc generated into the build directory.
  mapfile -t files < <(python3 -c 'import json, sys
for entry in json.load(open(sys.argv[1])): print(entry["file"])' "$build_dir/compile_commands.json" |
    grep -v "/$build_dir/" | sort -u)
fi
if [[ ${#files[@]} -eq 0 ]]; then
  echo "tidy.sh: no sources found in $build_dir/compile_commands.json" >&2
  exit 1
fi

echo "clang-tidy: ${#files[@]} files" >&2
# xargs exits 123 when any clang-tidy run failed (each warning is an error here).
if printf '%s\n' "${files[@]}" |
  xargs -P "${JOBS:-2}" -n 1 "$clang_tidy" -p "$build_dir" --quiet --warnings-as-errors='*'; then
  echo "clang-tidy: clean" >&2
else
  echo "clang-tidy: warnings above" >&2
  exit 1
fi
