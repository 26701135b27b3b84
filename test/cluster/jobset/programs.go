//go:build programs

// JobSet (sigs.k8s.io/jobset), the controller manager of jobset.x-k8s.io/v1alpha2 JobSets: it
// turns a JobSet into its Jobs and the headless Service that gives their pods DNS names, and
// serves the JobSet defaulting/validating and pod mutating/validating webhooks. Its command is the
// module's root package (package main), imported here only so that `go mod tidy` keeps what it
// needs. A module of its own: JobSet pins its own Kubernetes libraries, which must not move the
// cluster's. Built with `go build`.
package programs

import (
	_ "sigs.k8s.io/jobset"
)
