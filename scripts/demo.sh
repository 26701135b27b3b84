#!/usr/bin/env bash
# The main job: what kube-rdma sees on the bundled 8-GPU A100 RoCE node (generated fixture).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
build_dir=${BUILD_DIR:-build}
node="$build_dir/fixtures/a100-roce"
rdmactl=("$build_dir/plugin/rdmactl" --sysfs-root "$node/sys" --proc-root "$node/proc" --dev-root "$node/dev")
echo "== devices (like ibdev2netdev -v)"
"${rdmactl[@]}" devices
echo
echo "== GID table (like show_gids)"
"${rdmactl[@]}" gids
echo
echo "== the node's NCCL settings (nccl.conf lines)"
"${rdmactl[@]}" nccl-env
