//go:build programs

// Helm, the package manager the chart in manifests/helm/kube-rdma is installed with. A module of
// its own: Helm pins its own Kubernetes libraries, which must not move the cluster's.
// scripts/cluster-build.sh builds it with `go build`.
package programs

import (
	_ "helm.sh/helm/v4/cmd/helm"
)
