#!/usr/bin/env bash
# Installs the Debian 12 packages kube-rdma builds and tests with, only those missing, and the NCCL
# library the tests and the demo load. Idempotent and quiet when everything is there.
#   setup.sh          what the build needs (the Dockerfile's build stage)
#   setup.sh --demo   and NCCL, whose libnccl.so.2 the demo hands nccl.conf files to
#                     (scripts/demo.sh; below)
#   setup.sh --tests  and NCCL, Node.js with npm, on which the manifest validators run, qemu for
#                     the soft-RoCE VM test and podman with runc for the memlock hook test
#                     (scripts/test.sh)
#   setup.sh --all    and the benchmarks' load tools (h2load, nginx, curl)
# NCCL: Debian's main archive has none, so it comes from PyPI's nvidia-nccl-cu13 wheel (the
# version pinned in scripts/libnccl-env.sh, a 200 MB download), installed with pip into
# ~/.cache/kube-rdma/nccl-<version>/, never onto the system. Nothing is downloaded when it is there, or when KUBE_RDMA_LIBNCCL names
# another library (scripts/libnccl-env.sh).
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
# plugin's CDI spec, on a busybox-static root filesystem; runc also runs the nccl hook in the
# soft-RoCE VM's exclusive-mode pods.
runtime_packages=(podman runc busybox-static)
# The Prometheus project's text-format parser, which reads the plugin's /metrics in a test.
scrape_packages=(python3-prometheus-client)
# llvm-symbolizer: sanitizer reports with function names, which the TSan suppressions match on.
# lld: the test builds link with it (a third of GNU ld's time for the sanitizer builds' tests).
# The real test cluster (scripts/cluster.sh; Kubernetes and containerd themselves are built from
# Go modules): the CNI plugins, nft for kube-proxy, socat for the API server's relay out of the
# cluster's namespaces, PyYAML for the end-to-end tests.
cluster_packages=(containernetworking-plugins nftables socat iproute2 openssl python3-yaml)
test_packages=(llvm lld "${vm_packages[@]}" "${runtime_packages[@]}" "${scrape_packages[@]}"
  "${cluster_packages[@]}")
with_node=
with_nccl=
case "${1:-}" in
  "") ;;
  --demo) with_nccl=1 ;;
  --tests) with_node=1 with_nccl=1 packages+=("${test_packages[@]}") ;;
  --all) with_node=1 with_nccl=1 packages+=("${test_packages[@]}" nghttp2-client nginx-light curl) ;;
  *) echo "setup: unknown option '$1' (--demo, --tests or --all)" >&2; exit 2 ;;
esac
if [[ -n "$with_nccl" ]]; then
  # Only here: the Dockerfile's build stage copies setup.sh alone.
  # shellcheck source=scripts/libnccl-env.sh
  source "$(dirname "${BASH_SOURCE[0]}")/libnccl-env.sh"
  if [[ "$KUBE_RDMA_LIBNCCL" != "$nccl_library" || -f "$nccl_library" ]]; then
    with_nccl= # another library named, or this one installed
  fi
fi

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
# pip, by command too: a Python with its own pip serves as well as Debian's python3-pip.
if [[ -n "$with_nccl" ]] && ! python3 -m pip --version >/dev/null 2>&1; then
  missing+=(python3-pip)
fi

if [[ ${#missing[@]} -gt 0 ]]; then
  echo "setup: installing ${missing[*]}" >&2
  sudo_cmd=()
  [[ $(id -u) -ne 0 ]] && sudo_cmd=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [[ -n "$with_nccl" ]]; then
  echo "setup: installing NCCL $nccl_version (PyPI's nvidia-nccl-cu13) into $nccl_dir" >&2
  # Into a fresh directory renamed into place: an interrupted download leaves no half library.
  mkdir -p "$(dirname "$nccl_dir")"
  staging=$(mktemp -d "$nccl_dir.XXXXXX")
  chmod 755 "$staging"
  trap 'rm -rf "$staging"' EXIT
  # --target: into that directory, not into any Python's packages (so no virtualenv is needed,
  # and Debian's Python allows it); --no-cache-dir: pip keeps no second copy of the wheel.
  python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore \
    --no-cache-dir --no-deps --only-binary=:all: --target "$staging" \
    "nvidia-nccl-cu13==$nccl_version"
  [[ -f "$staging/nvidia/nccl/lib/libnccl.so.2" ]] || {
    echo "setup: the nvidia-nccl-cu13 wheel has no nvidia/nccl/lib/libnccl.so.2" >&2
    exit 1
  }
  rm -rf "$nccl_dir"
  mv "$staging" "$nccl_dir"
fi
