"""Pod start as a user feels it, on the real one-node cluster: from `kubectl create` starting to
the pod's Ready condition arriving on a watch, for a pod that asks for RDMA beside the same pod
without it, created alternately, one at a time. The RDMA pod goes through everything kube-rdma
adds: the webhook's mutation, the scheduler's fit of the extended resource (or the claim), the
device plugin's Allocate (or the DRA driver's prepare) with its CDI devices, and the runtime's
memlock and NCCL hooks. The reference in the same run: under the device plugin the same pod
without RDMA; under the DRA driver a pod with a claim of one fake GPU from the fake GPU driver
(test/cluster/fake-gpu-driver), so that Kubernetes' own claim handling is on both sides.

    scripts/cluster.sh up [--driver dra] && export KUBECONFIG=/var/tmp/kube-rdma-cluster/kubeconfig
    /usr/bin/python3 test/cluster/pod_start.py --rounds 20 [--driver dra]

Prints one line per kind (p50 / p90 / max) and the difference of the medians; BENCHMARKS.md
records it.
"""

import argparse
import json
import queue
import statistics
import subprocess
import threading
import time

from e2e_lib import (GPU_CLASS, NAMESPACE, cluster, create, kubectl, start_fake_gpus, toolbox_pod,
                     wait_until)


class ReadyWatch:
    """`kubectl get pods --watch` in the background: when each pod's Ready condition first
    arrived as True, by its monotonic time here."""

    def __init__(self):
        self.ready = queue.Queue()
        self.process = subprocess.Popen(
            ["kubectl", "get", "pods", "-n", NAMESPACE, "--watch", "-o",
             'jsonpath={.metadata.name} {.status.conditions[?(@.type=="Ready")].status}{"\\n"}'],
            stdout=subprocess.PIPE, text=True)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        seen = set()
        for line in self.process.stdout:
            name, _, status = line.strip().partition(" ")
            if status == "True" and name not in seen:
                seen.add(name)
                self.ready.put((name, time.monotonic()))

    def wait(self, name, timeout=120):
        deadline = time.monotonic() + timeout
        while True:
            got, at = self.ready.get(timeout=max(0.0, deadline - time.monotonic()))
            if got == name:
                return at

    def stop(self):
        self.process.kill()
        self.process.wait()


def one_device_template(name, device_class):
    """A ResourceClaimTemplate of one device of `device_class`."""
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {"spec": {"devices": {"requests": [{
                "name": "one", "exactly": {"deviceClassName": device_class}}]}}}}


def claim_pod(name, template):
    pod = toolbox_pod(name, "true")
    pod["spec"]["resourceClaims"] = [{"name": "one", "resourceClaimTemplateName": template}]
    pod["spec"]["containers"][0]["resources"] = {"claims": [{"name": "one"}]}
    return pod


def pod_of(kind, name, driver):
    if driver == "dra":
        return claim_pod(name, "one-port" if kind == "rdma" else "one-gpu")
    if kind == "rdma":
        return toolbox_pod(name, "true", limits={"rdma/shared": "1"})
    return toolbox_pod(name, "true")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--driver", choices=["device-plugin", "dra"], default="device-plugin")
    args = parser.parse_args()

    kubectl("delete", "namespace", NAMESPACE, "--ignore-not-found", "--wait=true", timeout=180)
    kubectl("create", "namespace", NAMESPACE)
    wait_until("the default service account", lambda: kubectl(
        "get", "serviceaccount", "default", "-n", NAMESPACE, check=False).returncode == 0)
    reference = "plain"
    if args.driver == "dra":
        reference = "gpu"
        start_fake_gpus(["gpu-0=pci0000:f0"])
        kubectl("apply", "-f", "-", stdin=json.dumps(GPU_CLASS))
        for template in (one_device_template("one-port", "roce.rdma.kube-rdma.io"),
                         one_device_template("one-gpu", "gpu.nvidia.com")):
            kubectl("apply", "-f", "-", stdin=json.dumps(template))
    watch = ReadyWatch()
    times = {reference: [], "rdma": []}
    try:
        for i in range(-1, args.rounds):  # round -1 warms both paths up and is not counted
            order = [reference, "rdma"] if i % 2 == 0 else ["rdma", reference]
            for kind in order:
                name = f"{kind}-{i + 1}"
                pod = pod_of(kind, name, args.driver)
                created = time.monotonic()  # kubectl's start, and the admission, included
                create(pod)
                ready = watch.wait(name)
                if i >= 0:
                    times[kind].append((ready - created) * 1000)
                kubectl("delete", "pod", "-n", NAMESPACE, name, "--wait=true")
    finally:
        watch.stop()
        kubectl("delete", "namespace", NAMESPACE, "--ignore-not-found", "--wait=true",
                timeout=180)
        if args.driver == "dra":
            cluster("stop", "fake-gpu-driver")

    medians = {}
    for kind, values in times.items():
        values.sort()
        medians[kind] = statistics.median(values)
        p90 = values[min(len(values) - 1, int(len(values) * 0.9))]
        print(f"{kind:5}  n={len(values)}  p50 {medians[kind]:.0f} ms  p90 {p90:.0f} ms  "
              f"max {values[-1]:.0f} ms")
    print(f"rdma - {reference} at p50: {medians['rdma'] - medians[reference]:+.0f} ms "
          f"({medians['rdma'] / medians[reference]:.2f}x)")


if __name__ == "__main__":
    main()
