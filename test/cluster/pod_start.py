"""Pod start as a user feels it, on the real cluster: from `kubectl create` starting to
the pod's Ready condition arriving on a watch, for a pod that asks for RDMA beside the same pod
without it, created alternately, one at a time. The RDMA pod goes through everything kube-rdma
adds: the webhook's mutation, the scheduler's fit of the extended resource (or the claim), the
device plugin's Allocate (or the DRA driver's prepare) with its CDI devices, and the runtime's
memlock and NCCL hooks. The reference in the same run: under the device plugin the same pod
without RDMA; under the DRA driver a pod with a claim of one fake GPU from the fake GPU driver
(test/cluster/fake-gpu-driver), so that Kubernetes' own claim handling is on both sides.

    scripts/cluster.sh up [--driver dra] && export KUBECONFIG=/var/tmp/kube-rdma-cluster/kubeconfig
    /usr/bin/python3 test/cluster/pod_start.py --rounds 20 [--driver dra] [--node NAME]

--node puts both kinds of pod (and the fake GPU driver) on that node of a cluster of several
(not the burst's pods).

Prints one line per kind (p50 / p90 / max) and the difference of the medians; BENCHMARKS.md
records it.

    /usr/bin/python3 test/cluster/pod_start.py --burst 32 [--driver dra]

instead creates the workers of a job at once (one `kubectl create` of 32 RDMA pods; under the DRA
driver all of them using one ResourceClaim of every RoCE port, as a job shares its NICs) and
prints how long until the last is Ready, the webhook's admission time from the API server's own
histogram (apiserver_admission_webhook_admission_duration_seconds, its change over the burst),
and how the webhook read the claim (rdma_webhook_claim_reads_total by source: one GET for the
job, not one per pod).
"""

import argparse
import collections
import json
import re
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
        self.ready = {}
        self.changed = threading.Condition()
        self.process = subprocess.Popen(
            ["kubectl", "get", "pods", "-n", NAMESPACE, "--watch", "-o",
             'jsonpath={.metadata.name} {.status.conditions[?(@.type=="Ready")].status}{"\\n"}'],
            stdout=subprocess.PIPE, text=True)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.process.stdout:
            name, _, status = line.strip().partition(" ")
            with self.changed:
                if status == "True" and name not in self.ready:
                    self.ready[name] = time.monotonic()
                    self.changed.notify_all()

    def wait(self, name, timeout=120):
        with self.changed:
            if not self.changed.wait_for(lambda: name in self.ready, timeout):
                raise AssertionError(f"{name} not Ready within {timeout} s")
            return self.ready[name]

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


def pod_of(kind, name, driver, node=None):
    if driver == "dra":
        pod = claim_pod(name, "one-port" if kind == "rdma" else "one-gpu")
    elif kind == "rdma":
        pod = toolbox_pod(name, "true", limits={"rdma/shared": "1"})
    else:
        pod = toolbox_pod(name, "true")
    if node:
        pod["spec"]["nodeSelector"] = {"kubernetes.io/hostname": node}
    return pod


def metric_totals(text, name, labels_wanted=()):
    """Sums of `name`'s samples in a Prometheus text, by the values of `labels_wanted`."""
    totals = collections.Counter()
    for line in text.splitlines():
        m = re.match(rf'^{name}(?:{{(.*)}})? (\S+)$', line)
        if m:
            labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(1) or ""))
            totals[tuple(labels.get(k, "") for k in labels_wanted)] += float(m.group(2))
    return totals


def webhook_metrics():
    """The /metrics of every webhook replica, through the API server's pod proxy."""
    pods = json.loads(kubectl("get", "pods", "-n", "kube-rdma", "-o", "json"))["items"]
    return "\n".join(kubectl("get", "--raw", f"/api/v1/namespaces/kube-rdma/pods/"
                             f"{p['metadata']['name']}:9090/proxy/metrics")
                     for p in pods if p["metadata"]["name"].startswith("rdma-webhook")
                     and p["status"].get("phase") == "Running")


ADMISSION = "apiserver_admission_webhook_admission_duration_seconds"


def admission_buckets():
    """The API server's admission histogram of kube-rdma's webhook, by upper bound."""
    text = kubectl("get", "--raw", "/metrics")
    return {float(le): count for (name, le), count in
            metric_totals(text, ADMISSION + "_bucket", ("name", "le")).items()
            if "kube-rdma" in name and le != "+Inf"}, \
        sum(c for (name,), c in metric_totals(text, ADMISSION + "_count", ("name",)).items()
            if "kube-rdma" in name)


def burst(args, watch):
    """Creates args.burst RDMA pods at once and waits for all of them."""
    pods = []
    if args.driver == "dra":
        kubectl("apply", "-f", "-", stdin=json.dumps({
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": "job-nics", "namespace": NAMESPACE},
            "spec": {"devices": {"requests": [{"name": "nics", "exactly": {
                "deviceClassName": "roce.rdma.kube-rdma.io", "allocationMode": "All"}}]}}}))
    for i in range(args.burst):
        pod = toolbox_pod(f"worker-{i}", "true")
        if args.driver == "dra":
            pod["spec"]["resourceClaims"] = [{"name": "nics", "resourceClaimName": "job-nics"}]
            pod["spec"]["containers"][0]["resources"] = {"claims": [{"name": "nics"}]}
        else:
            pod["spec"]["containers"][0]["resources"] = {"limits": {"rdma/shared": "1"}}
        pods.append(pod)
    buckets_before, count_before = admission_buckets()
    reads_before = metric_totals(webhook_metrics(), "rdma_webhook_claim_reads_total", ("source",))
    created = time.monotonic()
    kubectl("create", "-f", "-", stdin=json.dumps({"apiVersion": "v1", "kind": "List",
                                                    "items": pods}))
    admitted = time.monotonic()
    last = max(watch.wait(p["metadata"]["name"], timeout=300) for p in pods)
    buckets_after, count_after = admission_buckets()
    reads_after = metric_totals(webhook_metrics(), "rdma_webhook_claim_reads_total", ("source",))
    reviews = count_after - count_before
    p99_bound = next((le for le in sorted(buckets_after)
                      if buckets_after[le] - buckets_before.get(le, 0) >= 0.99 * reviews), None)
    nodes = collections.Counter(p["spec"]["nodeName"] for p in json.loads(kubectl(
        "get", "pods", "-n", NAMESPACE, "-o", "json"))["items"])
    print(f"{args.burst} pods: created in {(admitted - created) * 1000:.0f} ms, the last Ready "
          f"{last - created:.2f} s after the create started (by node: {dict(sorted(nodes.items()))})")
    print(f"webhook admissions during the burst: {reviews:.0f}, p99 <= {p99_bound} s "
          f"(the API server's histogram bucket)")
    print("webhook claim reads: " + ", ".join(
        f"{source}={reads_after[(source,)] - reads_before[(source,)]:.0f}"
        for source in ("api", "cache", "in-flight")))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--driver", choices=["device-plugin", "dra"], default="device-plugin")
    parser.add_argument("--node", help="the node of every pod (default: the scheduler's choice)")
    parser.add_argument("--burst", type=int, default=0,
                        help="create this many RDMA pods at once instead")
    args = parser.parse_args()

    kubectl("delete", "namespace", NAMESPACE, "--ignore-not-found", "--wait=true", timeout=180)
    kubectl("create", "namespace", NAMESPACE)
    wait_until("the default service account", lambda: kubectl(
        "get", "serviceaccount", "default", "-n", NAMESPACE, check=False).returncode == 0)
    reference = "plain"
    if args.driver == "dra":
        reference = "gpu"
        start_fake_gpus(["gpu-0=pci0000:f0"], args.node)
        kubectl("apply", "-f", "-", stdin=json.dumps(GPU_CLASS))
        for template in (one_device_template("one-port", "roce.rdma.kube-rdma.io"),
                         one_device_template("one-gpu", "gpu.nvidia.com")):
            kubectl("apply", "-f", "-", stdin=json.dumps(template))
    watch = ReadyWatch()
    try:
        if args.burst:
            burst(args, watch)
        else:
            report(alternate(args, watch, reference), reference)
    finally:
        watch.stop()
        kubectl("delete", "namespace", NAMESPACE, "--ignore-not-found", "--wait=true",
                timeout=300)
        if args.driver == "dra":
            cluster("stop", "fake-gpu-driver" + (f"@{args.node}" if args.node else ""))


def alternate(args, watch, reference):
    """create -> Ready in ms of each kind, the RDMA pod and the reference taking turns."""
    times = {reference: [], "rdma": []}
    for i in range(-1, args.rounds):  # round -1 warms both paths up and is not counted
        order = [reference, "rdma"] if i % 2 == 0 else ["rdma", reference]
        for kind in order:
            name = f"{kind}-{i + 1}"
            pod = pod_of(kind, name, args.driver, args.node)
            created = time.monotonic()  # kubectl's start, and the admission, included
            create(pod)
            ready = watch.wait(name)
            if i >= 0:
                times[kind].append((ready - created) * 1000)
            kubectl("delete", "pod", "-n", NAMESPACE, name, "--wait=true")
    return times


def report(times, reference):
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
