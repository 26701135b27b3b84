#!/usr/bin/env bash
# Installs the Debian 12 packages kube-rdma builds and tests with, only those missing.
# Idempotent and quiet when everything is there.
#   setup.sh          what the build needs (the demo, the Dockerfile's build stage)
#   setup.sh --tests  and Node.js with npm, on which the manifest validators run, qemu for the
#                     soft-RoCE VM test and podman with runc for the memlock hook test
#                     (scripts/test.sh)
#   setup.sh --all    and the benchmarks' load tools (h2load, nginx, curl)
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config python3 git
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libcpp-httplib-dev libboost-dev libssl-dev openssl nlohmann-json3-dev libsimdjson-dev libcli11-dev
  libibverbs-dev
  libyaml-cpp-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  clang libclang-rt-14-dev
)
# The soft-RoCE VM test (test/softroce/): qemu, depmod for the kernel it downloads, iproute2's
# ip and rdma for the guest's netdevs and rxe devices, rdma-core's ibv_devinfo as the
# reference it compares discovery with, and perftest's ib_write_bw for RDMA traffic with only
# what Allocate grants.
vm_packages=(qemu-system-x86 kmod iproute2 ibverbs-utils perftest)
# The memlock hook under a real OCI runtime (test/memlock/): podman with runc, reading the
# plugin's CDI spec, on a busybox-static root filesystem.
runtime_packages=(podman runc busybox-static)
# The Prometheus project's text-format parser, which reads the plugin's /metrics in a test.
scrape_packages=(python3-prometheus-client)
# llvm-symbolizer: sanitizer reports with function names, which the TSan suppressions match on.
# lld: the test builds link with it (a third of GNU ld's time for the sanitizer builds' tests).
test_packages=(llvm lld "${vm_packages[@]}" "${runtime_packages[@]}" "${scrape_packages[@]}")
with_node=
case "${1:-}" in
  "") ;;
  --tests) with_node=1 packages+=("${test_packages[@]}") ;;
  --all) with_node=1 packages+=("${test_packages[@]}" nghttp2-client nginx-light curl) ;;
  *) echo "setup: unknown option '$1' (--tests or --all)" >&2; exit 2 ;;
esac

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
    missing+=("$p")
  fi
done
# Node.js and npm by command, not by package: a Node.js from elsewhere (NodeSource's nodejs
# carries its own npm, which Debian's npm package would conflict with) serves as well.
if [[ -n "$with_node" ]]; then
  command -v node >/dev/null || missing+=(nodejs)
  command -v npm >/dev/null || missing+=(npm)
fi
[[ ${#missing[@]} -eq 0 ]] && exit 0

echo "setup: installing ${missing[*]}" >&2
sudo_cmd=()
[[ $(id -u) -ne 0 ]] && sudo_cmd=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
