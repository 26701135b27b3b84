#!/usr/bin/env bash
# ThreadSanitizer over the plugin's gRPC tests (ServiceTest, PluginIntegrationTest: the plugin's
# servers, ListAndWatch streams, Allocate calls, kubelet restarts and config reloads against the
# kubelet simulator, in process and in the rdma-device-plugin child). Debian's Abseil and gRPC are
# not built with TSan, so their synchronisation is invisible to it and every gRPC exchange shows
# up as races (docs/testing.md). This script builds TSan copies of them from Debian's own
# sources, the versions installed, with the same sonames and options, into a cache directory, and
# runs the tests with those libraries first in the library path. The tests themselves are the
# build-tsan/ tree of scripts/tsan.sh, linked against the system's libraries as usual.
#
#   TSAN_DEPS_DIR   the cache (sources, builds, libraries); default ~/.cache/kube-rdma/tsan-deps
#   TSAN_BUILD_DIR  the repo's TSan build (build-tsan, shared with scripts/tsan.sh)
#   JOBS            build and test parallelism (2)
# Needs deb-src entries for Debian's archive (added for bookworm when missing, as root or with
# sudo) and dpkg-dev for apt-get source.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/sanitizer-env.sh
deps=${TSAN_DEPS_DIR:-$HOME/.cache/kube-rdma/tsan-deps}
build_dir=${TSAN_BUILD_DIR:-build-tsan}
jobs=${JOBS:-2}
sudo_cmd=()
[[ $(id -u) -ne 0 ]] && sudo_cmd=(sudo)

# The source package versions of the installed libraries: a copy must match them symbol for
# symbol (Abseil's inline namespace is Debian's, debian3).
source_version() { dpkg-query -W -f='${source:Version}' "$1"; }
absl_version=$(source_version libabsl20220623)
grpc_version=$(source_version libgrpc29)

fetch_sources() {
  if [[ -f "$deps/src/.fetched-$absl_version-$grpc_version" ]]; then
    return
  fi
  command -v dpkg-source >/dev/null || "${sudo_cmd[@]}" apt-get install -y -qq dpkg-dev >/dev/null
  # shellcheck disable=SC2016 # apt's own $(...) field syntax, not the shell's
  if ! apt-get indextargets --format '$(TARGET_OF)' | grep -qx deb-src; then
    # Debian's own archive, as /etc/apt/sources.list.d/debian.sources lists it for binaries.
    "${sudo_cmd[@]}" tee /etc/apt/sources.list.d/kube-rdma-src.sources >/dev/null <<'EOF'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb-src
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
    "${sudo_cmd[@]}" apt-get update -qq
  fi
  rm -rf "$deps/src" && mkdir -p "$deps/src"
  (cd "$deps/src" && apt-get source -qq "abseil=$absl_version" "grpc=$grpc_version" >/dev/null)
  touch "$deps/src/.fetched-$absl_version-$grpc_version"
}

# Debian's rules: Abseil in C++17, shared; gRPC against the packaged Abseil, c-ares, protobuf,
# re2, OpenSSL and zlib. Only the libraries the plugin loads are built.
# Unoptimised, with line tables for the reports, like the repo's own TSan build: it compiles in
# less time and the tests are no slower for it.
tsan_flags=(-DCMAKE_BUILD_TYPE=None "-DCMAKE_C_FLAGS=-fsanitize=thread -O0 -gline-tables-only"
  "-DCMAKE_CXX_FLAGS=-fsanitize=thread -O0 -gline-tables-only"
  -DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=thread
  -DBUILD_SHARED_LIBS=ON "-DCMAKE_INSTALL_PREFIX=$deps/prefix" -DCMAKE_INSTALL_LIBDIR=lib)

build_abseil() {
  local stamp=$deps/prefix/.abseil-$absl_version
  [[ -f "$stamp" ]] && return
  local started=$SECONDS
  CC=clang CXX=clang++ cmake -S "$deps"/src/abseil-*/ -B "$deps/build/abseil" -G Ninja \
    "${tsan_flags[@]}" -DCMAKE_CXX_STANDARD=17 -DABSL_PROPAGATE_CXX_STD=ON -DBUILD_TESTING=OFF \
    --no-warn-unused-cli >/dev/null
  cmake --build "$deps/build/abseil" -j "$jobs" >/dev/null
  cmake --install "$deps/build/abseil" >/dev/null
  touch "$stamp"
  echo "tsan-grpc: Abseil $absl_version built in $((SECONDS - started)) s" >&2
}

build_grpc() {
  local stamp=$deps/prefix/.grpc-$grpc_version
  [[ -f "$stamp" ]] && return
  local started=$SECONDS
  # No codegen is built, but gRPC's CMake still looks for libprotoc (no -dev package needed).
  local protoc_libs=(/usr/lib/"$(dpkg-architecture -qDEB_HOST_MULTIARCH)"/libprotoc.so.*)
  # $1: ON for a unity build (scripts/tsan-grpc-unity.cmake), OFF for one source per job.
  configure_and_build() {
    CC=clang CXX=clang++ cmake -S "$deps"/src/grpc-*/ -B "$deps/build/grpc" -G Ninja \
      "${tsan_flags[@]}" "-DCMAKE_PREFIX_PATH=$deps/prefix" \
      -DgRPC_ABSL_PROVIDER=package -DgRPC_CARES_PROVIDER=package -DgRPC_PROTOBUF_PROVIDER=package \
      -DgRPC_RE2_PROVIDER=package -DgRPC_SSL_PROVIDER=package -DgRPC_ZLIB_PROVIDER=package \
      -DgRPC_BACKWARDS_COMPATIBILITY_MODE=OFF -DgRPC_BUILD_TESTS=OFF -DgRPC_BUILD_CODEGEN=OFF \
      -DgRPC_BUILD_CSHARP_EXT=OFF "-DCMAKE_UNITY_BUILD=$1" -DCMAKE_UNITY_BUILD_BATCH_SIZE=16 \
      "-DCMAKE_PROJECT_INCLUDE=$PWD/scripts/tsan-grpc-unity.cmake" --no-warn-unused-cli \
      "-DProtobuf_PROTOC_LIBRARY=${protoc_libs[0]}" >/dev/null
    cmake --build "$deps/build/grpc" -j "$jobs" --target gpr upb address_sorting grpc_unsecure \
      grpc++_unsecure >"$deps/build/grpc-build.log" 2>&1
  }
  mkdir -p "$deps/build"
  if ! configure_and_build ON; then
    # A gRPC other than 1.51.1 may batch two sources the list does not know: slower, not failed.
    echo "tsan-grpc: gRPC's unity build failed ($deps/build/grpc-build.log); building it" \
      "one source per compiler job" >&2
    rm -rf "$deps/build/grpc"
    configure_and_build OFF || { cat "$deps/build/grpc-build.log" >&2; exit 1; }
  fi
  cp -a "$deps"/build/grpc/lib*.so* "$deps/prefix/lib/"
  touch "$stamp"
  echo "tsan-grpc: gRPC $grpc_version built in $((SECONDS - started)) s" >&2
}

# The suppression names a function: without a symbolizer no frame has a name and the known
# Abseil false positive is reported as a race.
command -v llvm-symbolizer >/dev/null || {
  echo "tsan-grpc: no llvm-symbolizer (scripts/setup.sh --tests installs llvm)" >&2
  exit 1
}
fetch_sources
build_abseil
build_grpc

if [[ ! -f "$build_dir/build.ninja" ]]; then
  CC=clang CXX=clang++ cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Debug \
    "-DCMAKE_CXX_FLAGS_DEBUG=-O0 -gline-tables-only" "-DCMAKE_C_FLAGS_DEBUG=-O0 -gline-tables-only" \
    -DKUBE_RDMA_SANITIZE=thread -DKUBE_RDMA_WERROR=ON >/dev/null
fi
cmake --build "$build_dir" -j "$jobs" --target fixtures plugin_tests
# The child rdma-device-plugin inherits all three, so it loads the same copies and suppressions.
# Reports go to files because most tests do not check the child's exit status: any file fails.
reports=$PWD/$build_dir/tsan-grpc-reports
rm -rf "$reports" && mkdir -p "$reports"
export LD_LIBRARY_PATH="$deps/prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export TSAN_OPTIONS="$TSAN_OPTIONS:suppressions=$PWD/test/plugin/tsan-grpc.supp:log_path=$reports/tsan"
ctest --test-dir "$build_dir" --output-on-failure -j "$jobs" --timeout 600 \
  -R '^(ServiceTest|PluginIntegrationTest)\.'
if compgen -G "$reports/tsan.*" >/dev/null; then
  cat "$reports"/tsan.* >&2
  echo "tsan-grpc: ThreadSanitizer reports in $reports" >&2
  exit 1
fi
