// Command fake-gpu-driver is a DRA kubelet plugin for GPUs that are not there, built on
// Kubernetes' own kubelet-plugin library, so that the end-to-end tests can allocate a GPU and
// an RDMA NIC together (examples/dra/gpu-with-nic.yaml) on a node without GPUs. It publishes
// one ResourceSlice of driver gpu.nvidia.com whose GPUs carry the standard
// resource.kubernetes.io/pcieRoot attribute, and prepares claims without any CDI device.
//
//	fake-gpu-driver --node-name NODE --kubeconfig FILE --gpu gpu-0=pci0000:00 --gpu gpu-1=pci0000:80
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path"
	"strings"
	"syscall"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/utils/ptr"
)

const driverName = "gpu.nvidia.com"

type gpuFlags []string

func (g *gpuFlags) String() string     { return strings.Join(*g, ",") }
func (g *gpuFlags) Set(v string) error { *g = append(*g, v); return nil }

type driver struct{}

func (driver) PrepareResourceClaims(_ context.Context, claims []*resourceapi.ResourceClaim) (map[types.UID]kubeletplugin.PrepareResult, error) {
	result := map[types.UID]kubeletplugin.PrepareResult{}
	for _, claim := range claims {
		var prepared kubeletplugin.PrepareResult
		for _, r := range claim.Status.Allocation.Devices.Results {
			if r.Driver == driverName {
				prepared.Devices = append(prepared.Devices, kubeletplugin.Device{
					Requests: []string{r.Request}, PoolName: r.Pool, DeviceName: r.Device})
			}
		}
		result[claim.UID] = prepared
	}
	return result, nil
}

func (driver) UnprepareResourceClaims(_ context.Context, claims []kubeletplugin.NamespacedObject) (map[types.UID]error, error) {
	result := map[types.UID]error{}
	for _, claim := range claims {
		result[claim.UID] = nil
	}
	return result, nil
}

func (driver) HandleError(ctx context.Context, err error, msg string) {
	runtime.HandleErrorWithContext(ctx, err, msg)
}

func (driver) WatchHealthStatus(context.Context, chan<- kubeletplugin.DeviceHealthReport) error {
	return kubeletplugin.ErrHealthNotSupported
}

func main() {
	nodeName := flag.String("node-name", "", "the node whose GPUs these are")
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of a client allowed to write ResourceSlices")
	var gpus gpuFlags
	flag.Var(&gpus, "gpu", "NAME=PCIE_ROOT, once per GPU")
	flag.Parse()
	if err := run(*nodeName, *kubeconfig, gpus); err != nil {
		fmt.Fprintln(os.Stderr, "fake-gpu-driver:", err)
		os.Exit(1)
	}
}

func run(nodeName, kubeconfig string, gpus []string) error {
	if nodeName == "" || len(gpus) == 0 {
		return fmt.Errorf("--node-name and at least one --gpu are required")
	}
	var devices []resourceapi.Device
	for _, g := range gpus {
		name, root, ok := strings.Cut(g, "=")
		if !ok {
			return fmt.Errorf("--gpu %q is not NAME=PCIE_ROOT", g)
		}
		devices = append(devices, resourceapi.Device{
			Name: name,
			Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
				"resource.kubernetes.io/pcieRoot": {StringValue: ptr.To(root)},
				"productName":                     {StringValue: ptr.To("fake A100")},
			},
		})
	}
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return err
	}
	// The kubelet-plugin library listens in this folder but does not make it.
	if err := os.MkdirAll(path.Join(kubeletplugin.KubeletPluginsDir, driverName), 0o750); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	helper, err := kubeletplugin.Start(ctx, driver{}, kubeletplugin.DriverName(driverName),
		kubeletplugin.NodeName(nodeName), kubeletplugin.KubeClient(client),
		kubeletplugin.HealthService(false))
	if err != nil {
		return err
	}
	defer helper.Stop()
	err = helper.PublishResources(ctx, resourceslice.DriverResources{
		Pools: map[string]resourceslice.Pool{nodeName: {Slices: []resourceslice.Slice{{Devices: devices}}}},
	})
	if err != nil {
		return err
	}
	<-ctx.Done()
	return nil
}
