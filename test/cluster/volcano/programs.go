//go:build programs

// Volcano's scheduler (volcano.sh/volcano's cmd/scheduler, vc-scheduler), a batch scheduler that
// gang-schedules the pods of a scheduling.volcano.sh PodGroup, which the training operator makes
// for a PyTorchJob with --gang-scheduler-name=volcano. The scheduler alone is enough for that: it
// creates the `default` Queue and moves a PodGroup from Pending to Inqueue (its enqueue action,
// which the operator waits for before it makes the pods) and on to Running. Volcano's
// controller-manager (Volcano Jobs, a Queue's status.state, PodGroups for pods that name no
// group) and its admission webhooks are not built. A module of its own: Volcano pins its own
// Kubernetes libraries, which must not move the cluster's. Built with `go build`.
package programs

import (
	_ "volcano.sh/volcano/cmd/scheduler"
)
