#!/usr/bin/env bash
# One end-to-end suite on the real cluster: installs the programs of BUILD_DIR, brings the
# cluster up as SUITE needs it, runs test/cluster/e2e_<suite>.py and takes the cluster down
# again, also when a test fails. ctest runs it (label "cluster", test/cluster/CMakeLists.txt); by
# hand:
#   test/cluster/run-e2e.sh device-plugin|dra|jobs|jobs-dra|churn build
set -euo pipefail
usage="usage: run-e2e.sh device-plugin|dra|jobs|jobs-dra|churn BUILD_DIR"
suite=${1:?$usage}
build_dir=$(cd "${2:?$usage}" && pwd)
repo=$(cd "$(dirname "$0")/../.." && pwd)
# The DRA suite installs kube-rdma with the Helm chart and upgrades and rolls it back; the others
# with kustomize. The two renders are equal (test/manifests/chart_equals_overlays.py), so each
# installer runs for real without another cluster. The jobs suites run the training operator's
# jobs: the device plugin's on four nodes of three kinds of hardware, the DRA job on two A100s.
# The churn suite has both drivers, each on a node of its own (KUBE_RDMA_CHURN_SECONDS: how long).
case $suite in
  device-plugin) up=(--driver device-plugin --install kustomize) ;;
  dra) up=(--driver dra --install helm) ;;
  jobs) up=(--driver device-plugin --install kustomize --nodes 4 --operators) ;;
  jobs-dra) up=(--driver dra --install kustomize --nodes a100,a100 --operators) ;;
  churn) up=(--driver mixed --install kustomize --nodes a100,rocep) ;;
  *)
    echo "$usage" >&2
    exit 2
    ;;
esac
programs=$(mktemp -d /tmp/kube-rdma-e2e-programs.XXXXXX)
cleanup() {
  "$repo/scripts/cluster.sh" down || true
  rm -rf "$programs"
}
trap cleanup EXIT
cmake --install "$build_dir" --prefix "$programs" >/dev/null
env_line=$(KUBE_RDMA_PROGRAMS=$programs/bin "$repo/scripts/cluster.sh" up "${up[@]}" | tail -1)
eval "$env_line"
# The kubectl of the cluster's own build, whatever else the machine has.
PATH="$(cat "${KUBE_RDMA_CLUSTER_DIR:-/var/tmp/kube-rdma-cluster}/bin"):$PATH"
export PATH
cd "$repo/test/cluster"
/usr/bin/python3 -m unittest -v "e2e_${suite//-/_}.py"
