// Command etcd is the etcd server, built from the etcd server module that the pinned
// Kubernetes release requires, so the cluster's etcd is the version its API server is tested with.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
