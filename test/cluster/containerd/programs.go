//go:build programs

// The node's container runtime, named here so that `go mod tidy` keeps every module it needs.
// A module of its own: containerd pins its own Kubernetes libraries, which must not move the
// cluster's. scripts/cluster-build.sh builds these with `go build`.
package programs

import (
	_ "github.com/containerd/containerd/v2/cmd/containerd"
	_ "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2"
	_ "github.com/containerd/containerd/v2/cmd/ctr"
)
