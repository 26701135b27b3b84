#!/usr/bin/env bash
# Builds the programs of the one-node test cluster from their published Go modules (no
# downloaded binaries, no copied source) and prints the folder that holds them:
#   etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubelet, kube-proxy, kubectl
#     from test/cluster/go.mod: one pinned Kubernetes release, its staging modules replaced by
#     the same release's k8s.io/* versions, and the etcd server that release requires;
#   fake-gpu-driver (test/cluster/fake-gpu-driver), a DRA plugin for GPUs that are not there;
#   containerd, containerd-shim-runc-v2, ctr
#     from test/cluster/containerd/go.mod (a module of its own: containerd pins its own
#     Kubernetes libraries);
#   cni/multus, the Multus CNI meta-plugin, from test/cluster/multus/go.mod (its own module too),
#     and network-attachment-definition-crd.yaml, the NetworkAttachmentDefinition CRD from the
#     same module's deployment manifest;
#   helm, from test/cluster/helm/go.mod (its own module: Helm pins its own Kubernetes libraries),
#     which installs manifests/helm/kube-rdma in the DRA suite and renders it in the chart test;
#   prometheus and promtool, from test/cluster/prometheus/go.mod (its own module), with Kubernetes
#     service discovery only (Prometheus' remove_all_sd and enable_kubernetes_sd build tags;
#     Debian's package has none), for the monitoring test (test/cluster/monitoring.py);
#   coredns, the cluster DNS (test/cluster/coredns/: its own module, CoreDNS with the plugins of
#     kubeadm's Corefile), static, which makes its image one file (scripts/cluster-images.sh);
#   training-operator.v1 and kubeflow.org_pytorchjobs.yaml, the Kubeflow training operator and
#     its PyTorchJob CRD, from test/cluster/training-operator/go.mod (its own module);
#   vc-scheduler and the PodGroup and Queue CRDs (scheduling.volcano.sh_*.yaml), Volcano's
#     scheduler, from test/cluster/volcano/go.mod (its own module);
#   jobset-controller and jobset.x-k8s.io_jobsets.yaml, JobSet's controller and CRD, from
#     test/cluster/jobset/go.mod (its own module).
# runc and the CNI plugins come from Debian (scripts/setup.sh --tests).
# The result is cached in ~/.cache/kube-rdma/cluster-<versions>/bin (KUBE_RDMA_CACHE moves the
# cache): a second run only checks that every program is there. Go's module and build caches
# make a rebuild after a version change incremental.
#
#   scripts/cluster-build.sh        # prints the bin folder on its last line
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
module_version() { # MODULE GO_MOD: the version a go.mod requires
  awk -v m="$1" '$1 == "require" { $1 = ""; $0 = $0 } $1 == m && $2 ~ /^v/ { print $2; exit }' "$2"
}
k8s=$(module_version k8s.io/kubernetes "$repo/test/cluster/go.mod")
etcd=$(module_version go.etcd.io/etcd/server/v3 "$repo/test/cluster/go.mod")
containerd=$(module_version github.com/containerd/containerd/v2 "$repo/test/cluster/containerd/go.mod")
multus=$(module_version gopkg.in/k8snetworkplumbingwg/multus-cni.v4 "$repo/test/cluster/multus/go.mod")
helm=$(module_version helm.sh/helm/v4 "$repo/test/cluster/helm/go.mod")
prometheus=$(module_version github.com/prometheus/prometheus "$repo/test/cluster/prometheus/go.mod")
coredns=$(module_version github.com/coredns/coredns "$repo/test/cluster/coredns/go.mod")
training_operator=$(module_version github.com/kubeflow/training-operator "$repo/test/cluster/training-operator/go.mod")
volcano=$(module_version volcano.sh/volcano "$repo/test/cluster/volcano/go.mod")
jobset=$(module_version sigs.k8s.io/jobset "$repo/test/cluster/jobset/go.mod")
[[ -n $k8s && -n $etcd && -n $containerd && -n $multus && -n $helm && -n $prometheus && -n $coredns &&
  -n $training_operator && -n $volcano && -n $jobset ]] || {
  echo "cluster-build: cannot read the pinned versions from test/cluster/go.mod" >&2
  exit 1
}
# The sums pin every dependency too, and our own Go files are part of the build: a change to
# either is another build.
sums=$(cd "$repo/test/cluster" && find . -name go.sum -o -name '*.go' | LC_ALL=C sort | xargs cat | sha256sum | cut -c1-12)
cache=${KUBE_RDMA_CACHE:-$HOME/.cache/kube-rdma}/cluster-k8s-$k8s-etcd-$etcd-containerd-$containerd-multus-$multus-helm-$helm-prometheus-$prometheus-coredns-$coredns-training-operator-$training_operator-volcano-$volcano-jobset-$jobset-$sums
bin=$cache/bin
programs=(etcd kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl
  fake-gpu-driver containerd containerd-shim-runc-v2 ctr cni/multus helm
  prometheus promtool coredns training-operator.v1 vc-scheduler jobset-controller)

missing=()
for p in "${programs[@]}"; do
  [[ -x $bin/$p ]] || missing+=("$p")
done
if [[ ${#missing[@]} -gt 0 ]]; then
  command -v go >/dev/null || {
    echo "cluster-build: go is not installed (Go 1.26 or later builds the cluster)" >&2
    exit 1
  }
  start=$SECONDS
  echo "cluster-build: building Kubernetes $k8s, etcd $etcd, containerd $containerd, Multus $multus, Helm $helm, Prometheus $prometheus, CoreDNS $coredns, training operator $training_operator, Volcano $volcano, JobSet $jobset into $bin" >&2
  mkdir -p "$cache/tmp"
  # What `kubectl version` and the node's kubeletVersion report; the API server refuses a
  # kubelet whose version it cannot parse.
  minor=${k8s#v1.}
  minor=${minor%%.*}
  version_flags="-X k8s.io/component-base/version.gitVersion=$k8s"
  version_flags+=" -X k8s.io/component-base/version.gitMajor=1"
  version_flags+=" -X k8s.io/component-base/version.gitMinor=$minor"
  version_flags+=" -X k8s.io/component-base/version.gitTreeState=clean"
  # -s -w: no symbol tables; the programs are tested, not debugged, here, and linking is half
  # the build's time on two cores.
  (cd "$repo/test/cluster" &&
    go build -trimpath -ldflags "-s -w $version_flags" -o "$cache/tmp/" \
      k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
      k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubelet \
      k8s.io/kubernetes/cmd/kube-proxy k8s.io/kubernetes/cmd/kubectl ./etcd ./fake-gpu-driver)
  (cd "$repo/test/cluster/containerd" &&
    go build -trimpath -ldflags "-s -w" -o "$cache/tmp/" \
      github.com/containerd/containerd/v2/cmd/containerd \
      github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2 \
      github.com/containerd/containerd/v2/cmd/ctr)
  (cd "$repo/test/cluster/multus" &&
    go build -trimpath -ldflags "-s -w" -o "$cache/tmp/cni/" \
      gopkg.in/k8snetworkplumbingwg/multus-cni.v4/cmd/multus &&
    # The manifest's first document that is the CRD (the others deploy Multus as a DaemonSet).
    awk '/^---/ { if (crd) exit; doc = ""; next } { doc = doc $0 "\n" } /^kind: CustomResourceDefinition/ { crd = 1 }
         END { if (crd) printf "%s", doc }' \
      "$(go list -m -f '{{.Dir}}' gopkg.in/k8snetworkplumbingwg/multus-cni.v4)/deployments/multus-daemonset.yml" \
      >"$cache/tmp/network-attachment-definition-crd.yaml")
  # The version `helm version` reports (and charts' kubeVersion checks compare with).
  (cd "$repo/test/cluster/helm" &&
    go build -trimpath -ldflags "-s -w -X helm.sh/helm/v4/internal/version.version=$helm" \
      -o "$cache/tmp/" helm.sh/helm/v4/cmd/helm)
  # Prometheus' Go module v0.3XX.Y is its release 3.XX.Y, which `prometheus --version` reports.
  release=${prometheus#v0.}
  release="$((${release%%.*} / 100)).$((${release%%.*} % 100)).${release#*.}"
  (cd "$repo/test/cluster/prometheus" &&
    go build -trimpath -tags remove_all_sd,enable_kubernetes_sd \
      -ldflags "-s -w -X github.com/prometheus/common/version.Version=$release" -o "$cache/tmp/" \
      github.com/prometheus/prometheus/cmd/prometheus github.com/prometheus/prometheus/cmd/promtool)
  # Static (CGO_ENABLED=0), as CoreDNS' own Makefile builds it: the image holds the one file.
  (cd "$repo/test/cluster/coredns" &&
    CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$cache/tmp/" .)
  (cd "$repo/test/cluster/training-operator" &&
    go build -trimpath -ldflags "-s -w" -o "$cache/tmp/" \
      github.com/kubeflow/training-operator/cmd/training-operator.v1 &&
    cp "$(go list -m -f '{{.Dir}}' github.com/kubeflow/training-operator)/manifests/base/crds/kubeflow.org_pytorchjobs.yaml" \
      "$cache/tmp/")
  # The version `vc-scheduler --version` reports; Volcano's command is cmd/scheduler, named as
  # Volcano names it.
  (cd "$repo/test/cluster/volcano" &&
    go build -trimpath -ldflags "-s -w -X volcano.sh/volcano/pkg/version.Version=$volcano" \
      -o "$cache/tmp/vc-scheduler" volcano.sh/volcano/cmd/scheduler &&
    crds=$(go list -m -f '{{.Dir}}' volcano.sh/volcano)/installer/helm/chart/volcano/crd/bases &&
    cp "$crds/scheduling.volcano.sh_podgroups.yaml" "$crds/scheduling.volcano.sh_queues.yaml" "$cache/tmp/")
  # JobSet's command is its module's root package.
  (cd "$repo/test/cluster/jobset" &&
    go build -trimpath -ldflags "-s -w -X sigs.k8s.io/jobset/pkg/version.GitVersion=$jobset" \
      -o "$cache/tmp/jobset-controller" sigs.k8s.io/jobset &&
    cp "$(go list -m -f '{{.Dir}}' sigs.k8s.io/jobset)/config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml" \
      "$cache/tmp/")
  rm -rf "$bin"
  mv "$cache/tmp" "$bin"
  # Builds of other versions are not needed any more (Go's caches keep what they share).
  find "$(dirname "$cache")" -maxdepth 1 -name 'cluster-*' ! -path "$cache" -exec rm -rf {} +
  echo "cluster-build: built in $((SECONDS - start)) s" >&2
fi
echo "$bin"
