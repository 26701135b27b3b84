#!/usr/bin/env bash
# The main job: kube-rdma end to end on this machine, with no cluster and no RDMA card. Makes a CA
# and a serving certificate, starts rdma-webhook and rdma-device-plugin (over the bundled 8-GPU
# A100 RoCE node) with the kubelet simulator, sends the example PyTorchJob's pods through
# admission, has the kubelet call Allocate, and shows each container's final NCCL environment
# with where every value came from. Then rdma-dra-driver on the same node: its ResourceSlice, a
# claim for a GPU and the NIC on its PCIe root (examples/dra/gpu-with-nic.yaml), the claim's CDI
# spec. On both paths the real libnccl reads the container's nccl.conf (NCCL from PyPI, which
# setup.sh --demo installs; KUBE_RDMA_LIBNCCL names another libnccl.so.2). Then the same node as
# a real one-node cluster (scripts/cluster.sh): the guide's worker pod through the real API
# server, scheduler and kubelet. Each half ends with its verdict; the exit code is 0 when both
# PASS.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --demo
# KUBE_RDMA_LIBNCCL: the NCCL setup.sh installed, the libnccl.so.2 the demo loads.
source scripts/libnccl-env.sh
scripts/build.sh
build_dir=${BUILD_DIR:-build}
# First half: the node, admission, Allocate and DRA with our simulators, every value explained.
status=0
"$build_dir/test/e2e/kube-rdma-demo" || status=$?

# Second half: the same node as a real one-node cluster (docs/cluster.md), the guide's worker pod
# admitted by the real API server and running on the real kubelet. CLUSTER=0 leaves it out.
if [[ ${CLUSTER:-1} == 0 ]]; then
  echo "kube-rdma on a real cluster: skipped (CLUSTER=0)"
elif [[ $(id -u) != 0 ]]; then
  echo "kube-rdma on a real cluster: skipped (needs root: namespaces, mounts, cgroups)"
else
  programs=$(mktemp -d /tmp/kube-rdma-demo-programs.XXXXXX)
  trap 'scripts/cluster.sh down >/dev/null 2>&1 || true; rm -rf "$programs"' EXIT
  cmake --install "$build_dir" --prefix "$programs" >/dev/null
  scripts/cluster.sh down >/dev/null 2>&1 || true
  echo
  echo "== Bringing up a real cluster (scripts/cluster.sh up; about 9 minutes of Go builds the first time)"
  env_line=$(KUBE_RDMA_PROGRAMS=$programs/bin scripts/cluster.sh up | tail -1)
  eval "$env_line"
  PATH="$(cat "${KUBE_RDMA_CLUSTER_DIR:-/var/tmp/kube-rdma-cluster}/bin"):$PATH"
  export PATH
  (cd test/cluster && /usr/bin/python3 demo.py) || status=$?
fi
exit "$status"
