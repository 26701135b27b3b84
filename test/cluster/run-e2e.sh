#!/usr/bin/env bash
# One end-to-end suite on the real cluster: installs the programs of BUILD_DIR, brings the
# cluster up with DRIVER (device-plugin or dra), runs test/cluster/e2e_<driver>.py and takes the
# cluster down again, also when a test fails. ctest runs it (label "cluster",
# test/cluster/CMakeLists.txt); by hand:
#   test/cluster/run-e2e.sh device-plugin build
set -euo pipefail
driver=${1:?usage: run-e2e.sh device-plugin|dra BUILD_DIR}
build_dir=$(cd "${2:?usage: run-e2e.sh device-plugin|dra BUILD_DIR}" && pwd)
repo=$(cd "$(dirname "$0")/../.." && pwd)
programs=$(mktemp -d /tmp/kube-rdma-e2e-programs.XXXXXX)
cleanup() {
  "$repo/scripts/cluster.sh" down || true
  rm -rf "$programs"
}
trap cleanup EXIT
cmake --install "$build_dir" --prefix "$programs" >/dev/null
# The DRA suite installs kube-rdma with the Helm chart and upgrades and rolls it back; the device
# plugin's with kustomize. The two renders are equal (test/manifests/chart_equals_overlays.py), so
# each installer runs for real without a third cluster.
installer=kustomize
[[ $driver == dra ]] && installer=helm
env_line=$(KUBE_RDMA_PROGRAMS=$programs/bin "$repo/scripts/cluster.sh" up --driver "$driver" \
  --install "$installer" | tail -1)
eval "$env_line"
# The kubectl of the cluster's own build, whatever else the machine has.
PATH="$(cat "${KUBE_RDMA_CLUSTER_DIR:-/var/tmp/kube-rdma-cluster}/bin"):$PATH"
export PATH
cd "$repo/test/cluster"
/usr/bin/python3 -m unittest -v "e2e_${driver//-/_}.py"
