//go:build programs

// The Kubeflow training operator (v1: kubeflow.org/v1 PyTorchJob and the other job kinds), which
// turns a PyTorchJob into its master and worker pods and, with --gang-scheduler-name, into the
// PodGroup a gang scheduler needs. A module of its own: the operator pins its own Kubernetes
// libraries, which must not move the cluster's. Built with `go build`.
package programs

import (
	_ "github.com/kubeflow/training-operator/cmd/training-operator.v1"
)
