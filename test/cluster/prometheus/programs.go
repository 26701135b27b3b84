//go:build programs

// Prometheus, which scrapes the test cluster with manifests/monitoring/'s job and evaluates its
// alert rules (test/cluster/monitoring.py); promtool checks them. Built from its Go module:
// Debian's package leaves out Kubernetes service discovery. A module of its own: Prometheus pins
// its own Kubernetes libraries, which must not move the cluster's. scripts/cluster-build.sh
// builds it with `go build`.
package programs

import (
	_ "github.com/prometheus/prometheus/cmd/prometheus"
	_ "github.com/prometheus/prometheus/cmd/promtool"
)
