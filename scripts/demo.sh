#!/usr/bin/env bash
# The main job: kube-rdma end to end on this machine, with no cluster and no RDMA card. Makes a CA
# and a serving certificate, starts rdma-webhook and rdma-device-plugin (over the bundled 8-GPU
# A100 RoCE node) with the kubelet simulator, sends the example PyTorchJob's pods through
# admission, has the kubelet call Allocate, and shows each container's final NCCL environment
# with where every value came from. Then rdma-dra-driver on the same node: its ResourceSlice, a
# claim for a GPU and the NIC on its PCIe root (examples/dra/gpu-with-nic.yaml), the claim's CDI
# spec. On both paths the real libnccl reads the container's nccl.conf (NCCL from PyPI, which
# setup.sh --demo installs; KUBE_RDMA_LIBNCCL names another libnccl.so.2). The last line is the
# verdict; the exit code is 0 on PASS.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --demo
# KUBE_RDMA_LIBNCCL: the NCCL setup.sh installed, the libnccl.so.2 the demo loads.
source scripts/libnccl-env.sh
scripts/build.sh
build_dir=${BUILD_DIR:-build}
exec "$build_dir/test/e2e/kube-rdma-demo"
