// Command coredns is the test cluster's DNS (the kube-dns Service, coredns.yaml): CoreDNS from its
// published module with the plugins of a kubeadm cluster's Corefile, so Services and pods resolve
// by name as on a real cluster. CoreDNS is made for this: a build picks its plugins by importing
// them and naming them, in the order of CoreDNS' plugin.cfg, in dnsserver.Directives. All of
// plugin.cfg would pull in every cloud provider's SDK (1.4 GB of modules, twice the build time).
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/metrics"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"
)

func init() {
	dnsserver.Directives = []string{"reload", "ready", "health", "prometheus", "errors",
		"loadbalance", "cache", "kubernetes", "loop"}
}

func main() { coremain.Run() }
