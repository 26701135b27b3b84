//go:build programs

// Multus, the CNI meta-plugin that gives a pod the extra networks its
// k8s.v1.cni.cncf.io/networks annotation names (the "thin" plugin: one binary that the runtime
// calls as a CNI plugin). A module of its own: Multus pins its own Kubernetes libraries, which
// must not move the cluster's. scripts/cluster-build.sh builds it with `go build`.
package programs

import (
	_ "gopkg.in/k8snetworkplumbingwg/multus-cni.v4/cmd/multus"
)
