"""The demo's second half (scripts/demo.sh): the guide's training pod on a real kubelet.

Expects a cluster of scripts/cluster.sh with the device plugin and KUBECONFIG set. Shows the
node as the kubelet offers it, kube-rdma's own pods, the guide's PyTorchJob worker going through
the real API server (the webhook's patch) and the real scheduler, and what its container sees.
Each check prints ok or FAIL; the last line is the verdict, the exit code 0 only on PASS.
"""

import json
import sys

from e2e_lib import (A100_HCA, CAP_IPC_LOCK, NODE, get, has_cap, kubectl, pytorchjob_worker,
                     run_probe, runnable_here)

NAMESPACE = "training"  # the guide's

failures = []
checks = []


def section(title):
    print(f"\n== {title}")


def check(ok, what):
    print(f"    {'ok  ' if ok else 'FAIL'}  {what}")
    checks.append(what)
    if not ok:
        failures.append(what)


def main():
    section("The cluster: Kubernetes built from its Go modules, one node (the A100 fixture)")
    version = json.loads(kubectl("version", "-o", "json"))["serverVersion"]["gitVersion"]
    node = get("node", NODE)
    info = node["status"]["nodeInfo"]
    print(f"    kube-apiserver {version}, kubelet {info['kubeletVersion']}, "
          f"{info['containerRuntimeVersion']}")
    allocatable = node["status"]["allocatable"]
    print(f"    node {NODE} allocatable: rdma/shared={allocatable.get('rdma/shared')}, "
          f"cpu={allocatable['cpu']}, memory={allocatable['memory']}")
    check(allocatable.get("rdma/shared") == "128",
          "the real kubelet offers rdma/shared from rdma-device-plugin (16 per RoCE HCA)")

    section("kube-rdma, installed with kubectl apply -k (test/cluster/overlays/device-plugin)")
    for p in get("pods", namespace="kube-rdma")["items"]:
        print(f"    {p['metadata']['name']:32} {p['status']['phase']:8} "
              f"{p['status'].get('podIP', '')}")

    section("The guide's worker pod, with only rdma/shared: 1 written by its author")
    kubectl("create", "namespace", NAMESPACE, check=False)
    kubectl("delete", "pod", "-n", NAMESPACE, "bert-large-nccl-worker-0", "--ignore-not-found",
            "--wait=true")
    pod, _ = pytorchjob_worker("pytorchjob-roce.yaml", "bert-large-nccl-worker-0", NAMESPACE)
    # What this one small node cannot give (eight GPUs, 900Gi, the dataset volume) taken out, and
    # the toolbox printing what the container sees instead of torchrun.
    runnable_here(pod["spec"])
    admitted, report = run_probe(pod)
    container = admitted["spec"]["containers"][0]
    print("    the API server stored, from rdma-webhook's patch:")
    print(f"      capabilities.add: {container['securityContext']['capabilities']['add']}")
    for v in admitted["spec"]["volumes"]:
        if v.get("emptyDir", {}).get("medium") == "Memory":
            size = v["emptyDir"].get("sizeLimit")
            print(f"      volume {v['name']}: memory emptyDir, sizeLimit {size}")
    for e in container.get("env", []):
        print(f"      env {e['name']}={e.get('value')}")
    check("kube-rdma.io/injected" in admitted["metadata"].get("annotations", {}),
          "the webhook's patch went through the real admission chain")

    section("Inside the container, on the real kubelet (containerd, runc, CDI)")
    for name, value in sorted(report["env"].items()):
        print(f"    env  {name}={value}")
    for name, value in report["conf"].items():
        print(f"    /etc/nccl.conf  {name}={value}")
    print(f"    devices: {' '.join(sorted(report['dev']))}")
    print(f"    /dev/shm: {report['shm']}")
    check(has_cap(report["capeff"], CAP_IPC_LOCK), "CapEff has IPC_LOCK")
    check(report["env"].get("NCCL_IB_HCA") == A100_HCA,
          "NCCL_IB_HCA names the eight ACTIVE data ports, exactly (= prefix) and with their port")
    check(len([d for d in report["dev"] if "uverbs" in d]) == 8 and
          "/dev/infiniband/rdma_cm" in report["dev"], "uverbs1..8 and rdma_cm granted")
    check(report["conf"].get("NCCL_IB_HCA") == A100_HCA, "nccl.conf mounted with the same values")

    print(f"\nkube-rdma on a real cluster: {'PASS' if not failures else 'FAIL'} "
          f"({len(checks) - len(failures)}/{len(checks)} checks)")
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
