"""End-to-end: kube-rdma with the DRA driver on a real one-node cluster (scripts/cluster.sh up
--driver dra). The API server validates the driver's ResourceSlice, the real kube-scheduler
allocates the examples' claims by our attributes, the real kubelet's DRA manager calls
NodePrepareResources and containerd applies the claim's CDI spec.

    scripts/cluster.sh up --driver dra && python3 -m unittest test/cluster/e2e_dra.py -v
"""

import json
import os
import subprocess
import time
import unittest

import yaml
from e2e_lib import (A100_GID_INDEX, A100_OTHER_POD_IPS, A100_RAIL_POD_GID_INDEX,
                     A100_RAIL_POD_IPS, CAP_IPC_LOCK, CONTAINER_OUTCOME_FAMILIES, GPU_CLASS,
                     NAMESPACE, NODE, PROBE, REPO, STATE, ClusterTest, attached_networks, cluster,
                     container_outcome_changes, container_outcomes, create, daemon_metrics,
                     example_documents, expected_memlock, get, has_cap, helm, in_node, kubectl,
                     parse_report, pod_events, pod_log, probe_container, pytorchjob_worker,
                     rail_networks, requests_of, restore_ports, run_probe, runnable_here,
                     set_port_state, start_fake_gpus, toolbox_pod, wait_until)
from monitoring import PortTraffic

DRIVER = "rdma.kube-rdma.io"
DOMAIN = DRIVER + "/"


# The DeviceClass NVIDIA's GPU driver installs, for the fake GPU driver's devices.
def pod_claim(pod_name):
    """The ResourceClaim the pod's first claim template made for it."""
    status = get("pod", pod_name, NAMESPACE)["status"]
    return get("resourceclaim", status["resourceClaimStatuses"][0]["resourceClaimName"], NAMESPACE)


def allocation_results(claim):
    """The claim's allocated devices by request name."""
    return {r["request"]: r for r in claim["status"]["allocation"]["devices"]["results"]}


# Every port of the driver, whatever its state: only the taints keep the scheduler off a port.
ANY_PORT_CLASS = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                  "metadata": {"name": "e2e-any-port"},
                  "spec": {"selectors": [{"cel": {"expression": f"device.driver == '{DRIVER}'"}}]}}


def attribute(device, name):
    value = device["attributes"].get(name) or device["attributes"].get(DOMAIN + name)
    return next(iter(value.values())) if value else None


def our_slices():
    return [s for s in get("resourceslices")["items"]
            if s["spec"]["driver"] == DRIVER and s["spec"].get("nodeName") == NODE]


class DraDriver(ClusterTest):
    def test_slice_accepted_with_every_data_port(self):
        slices = wait_until("the driver's ResourceSlice", our_slices)
        self.assertEqual(len(slices), 1)
        devices = slices[0]["spec"]["devices"]
        names = sorted(attribute(d, "rdmaDevice") for d in devices)
        # The eight data NICs; mlx5_0 carries the default route and is left out.
        self.assertEqual(names, [f"mlx5_{i}" for i in range(1, 9)])
        for d in devices:
            self.assertEqual(attribute(d, "linkLayer"), "Ethernet")
            self.assertEqual(attribute(d, "state"), "ACTIVE")
            self.assertTrue(attribute(d, "resource.kubernetes.io/pcieRoot").startswith("pci"))

    def test_gpu_with_nic_allocated_on_the_gpus_pcie_root(self):
        nics = our_slices()[0]["spec"]["devices"]
        root = attribute(nics[0], "resource.kubernetes.io/pcieRoot")
        # Two fake GPUs: only gpu-1 shares a root with a NIC, so the constraint decides.
        template, pod = example_documents("dra/gpu-with-nic.yaml")
        start_fake_gpus(["gpu-0=pci0000:f0", f"gpu-1={root}"])
        try:
            kubectl("apply", "-f", "-", stdin=yaml.safe_dump(GPU_CLASS))
            create(template)
            runnable_here(pod["spec"])
            _, report = run_probe(pod)

            claim = pod_claim(pod["metadata"]["name"])
            results = allocation_results(claim)
            self.assertEqual(results["gpu"]["device"], "gpu-1")
            nic = next(d for d in nics if d["name"] == results["nic"]["device"])
            self.assertEqual(attribute(nic, "resource.kubernetes.io/pcieRoot"), root)
            # The claim's nccl.conf names exactly that port.
            hca = f"={attribute(nic, 'rdmaDevice')}:{attribute(nic, 'port')}"
            self.assertEqual(report["conf"].get("NCCL_IB_HCA"), hca)
            self.assertEqual(report["env"].get("KUBE_RDMA_CDI"), "1")
            self.assertEqual(report["memlock"], expected_memlock())
            # The webhook read the claim template: an RDMA container.
            self.assertIn("/dev/infiniband/rdma_cm", report["dev"])

            # Deleting the pod unprepares: the claim's CDI spec leaves the node.
            uid = claim["metadata"]["uid"]
            self.assertIn(uid, in_node("ls", "/var/run/cdi").stdout)
            kubectl("delete", "pod", "-n", NAMESPACE, pod["metadata"]["name"], "--wait=true")
            wait_until("the claim's CDI spec to be removed",
                       lambda: uid not in in_node("ls", "/var/run/cdi").stdout)
        finally:
            # The kubelet needs both drivers to unprepare the pod's claim.
            kubectl("delete", "pod", "-n", NAMESPACE, pod["metadata"]["name"], "--ignore-not-found",
                    "--wait=true")
            cluster("stop", "fake-gpu-driver")

    def test_the_guides_pytorchjob_eight_gpus_eight_nics(self):
        """examples/dra/pytorchjob-roce.yaml: eight GPU-NIC pairs, each on one PCIe root. Four
        fake GPUs sit on each of the fixture's two roots (pci0000:00: mlx5_1..4, pci0000:80:
        mlx5_5..8), so the scheduler must pair every GPU with a NIC of its own root."""
        pod, (template,) = pytorchjob_worker("dra/pytorchjob-roce.yaml",
                                             "bert-large-nccl-dra-worker-0")
        gpus = [f"gpu-{i}=pci0000:{'00' if i < 4 else '80'}" for i in range(8)]
        start_fake_gpus(gpus)
        try:
            kubectl("apply", "-f", "-", stdin=yaml.safe_dump(GPU_CLASS))
            create(template)
            runnable_here(pod["spec"])
            _, report = run_probe(pod)
            results = allocation_results(pod_claim(pod["metadata"]["name"]))
            nics = {d["name"]: d for d in our_slices()[0]["spec"]["devices"]}
            gpu_roots = dict(g.split("=") for g in gpus)
            for i in range(8):
                nic = nics[results[f"nic-{i}"]["device"]]
                self.assertEqual(attribute(nic, "resource.kubernetes.io/pcieRoot"),
                                 gpu_roots[results[f"gpu-{i}"]["device"]], f"pair {i}")
            self.assertEqual(report["conf"].get("NCCL_IB_HCA"),
                             "=" + ",".join(f"mlx5_{i}:1" for i in range(1, 9)))
        finally:
            kubectl("delete", "pod", "-n", NAMESPACE, pod["metadata"]["name"], "--ignore-not-found",
                    "--wait=true")
            cluster("stop", "fake-gpu-driver")

    def test_pods_sharing_one_claim(self):
        """examples/dra/shared-claim.yaml: every ACTIVE RoCE port in one claim, used by the pods
        of a Deployment (two replicas of the toolbox here)."""
        run_two_replicas_with_every_port(self, "dra/shared-claim.yaml")

    def test_two_pods_sharing_a_claim_each_get_their_own_gid_index(self):
        """One claim of mlx5_1's port, prepared once, before either pod had a network; two pods
        use it: one with the rail1 network (Multus' macvlan, its address in the port's table at
        6/7), one on the cluster network alone. Each container's hook resolved its own
        namespace: two answers for one claim, in nccl.conf and, through containerd's NRI, in the
        environment."""
        before = container_outcomes("rdma-dra-driver")
        create(one_nic_claim("rail-nic", device="mlx5_1"))
        on_rail_pod, on_rail = run_probe(toolbox_pod("on-rail", PROBE, claims=["rail-nic"],
                                                     annotations=rail_networks([1])))
        plain_pod, plain = run_probe(toolbox_pod("plain", PROBE, claims=["rail-nic"]))
        # Only the claim makes these RDMA pods: the webhook read it from the API server (through
        # the kubernetes Service, from the pod network) and added IPC_LOCK.
        for admitted, report in ((on_rail_pod, on_rail), (plain_pod, plain)):
            self.assertIn("IPC_LOCK", admitted["spec"]["containers"][0]["securityContext"]
                          ["capabilities"]["add"])
            self.assertTrue(has_cap(report["capeff"], CAP_IPC_LOCK))
        self.assertEqual(attached_networks("on-rail"), {"net1": [A100_RAIL_POD_IPS[0]]})
        for report in (on_rail, plain):
            self.assertEqual(report["conf"].get("NCCL_IB_HCA"), "=mlx5_1:1")
        self.assertEqual(on_rail["conf"].get("NCCL_IB_GID_INDEX"), A100_RAIL_POD_GID_INDEX)
        self.assertEqual(on_rail["env"].get("NCCL_IB_GID_INDEX"), A100_RAIL_POD_GID_INDEX)
        self.assertEqual(plain["conf"].get("NCCL_IB_GID_INDEX"), A100_GID_INDEX)
        self.assertNotIn("NCCL_IB_GID_INDEX", plain["env"])
        self.assertEqual(container_outcome_changes("rdma-dra-driver", before),
                         {family: {"own-gid-index": 1, "no-own-gid": 1}
                          for family in CONTAINER_OUTCOME_FAMILIES})
        # The real kubelet's PodResources API: both pods hold the claim's one port.
        held = sorted(line for line in daemon_metrics("rdma-dra-driver").splitlines()
                      if line.startswith("kube_rdma_pod_port_info{") and 'claim="rail-nic"' in line)
        self.assertEqual(held, [
            f'kube_rdma_pod_port_info{{claim="rail-nic",container="main",device="mlx5_1",'
            f'namespace="{NAMESPACE}",pod="{name}",port="1"}} 1' for name in ("on-rail", "plain")])
        for name in ("on-rail", "plain"):
            kubectl("delete", "pod", "-n", NAMESPACE, name, "--wait=true")

    def test_a_pod_whose_ports_disagree_is_told_so_in_its_events(self):
        """A claim of mlx5_1 and mlx5_2 for a pod whose rail-1 address sits at index 5 of mlx5_1's
        table and rail-2 address at 7 of mlx5_2's. NCCL takes one index for all ports, so the
        container keeps the node's (nccl.conf's 3, nothing in its environment), and the pod's
        events say why: a Warning the driver posted through the real API server, as
        `kubectl describe pod` shows it."""
        devices = "['mlx5_1', 'mlx5_2']"
        create({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                "metadata": {"name": "two-rails", "namespace": NAMESPACE},
                "spec": {"devices": {"requests": [{"name": "nics", "exactly": {
                    "deviceClassName": "roce.rdma.kube-rdma.io", "allocationMode": "ExactCount",
                    "count": 2, "selectors": [{"cel": {"expression":
                        f"device.attributes['{DRIVER}'].rdmaDevice in {devices}"}}]}}]}}})
        networks = rail_networks([1, 2], {1: A100_OTHER_POD_IPS[0], 2: A100_RAIL_POD_IPS[1]},
                                 name="skewed")
        try:
            _, report = run_probe(toolbox_pod("skewed", PROBE, claims=["two-rails"],
                                              annotations=networks))
            self.assertEqual(report["conf"].get("NCCL_IB_HCA"), "=mlx5_1:1,mlx5_2:1")
            self.assertEqual(report["conf"].get("NCCL_IB_GID_INDEX"), A100_GID_INDEX)
            self.assertNotIn("NCCL_IB_GID_INDEX", report["env"])

            wait_until("the driver's Warning event on the pod",
                       lambda: pod_events("skewed", "RdmaGidPortsDisagree"))
            (event,) = pod_events("skewed", "RdmaGidPortsDisagree")
            self.assertEqual(event["type"], "Warning")
            self.assertEqual(event["source"], {"component": "rdma-dra-driver", "host": NODE})
            self.assertIn("(mlx5_1:1=5,mlx5_2:1=7)", event["message"])
            described = kubectl("describe", "pod", "-n", NAMESPACE, "skewed")
            self.assertRegex(described, r"Warning\s+RdmaGidPortsDisagree\s")
        finally:
            # The two ports go back to the other tests of the class.
            kubectl("delete", "pod", "-n", NAMESPACE, "skewed", "--ignore-not-found",
                    "--wait=true")
            kubectl("delete", "resourceclaim", "-n", NAMESPACE, "two-rails", "--wait=true")

    def test_a_claim_held_and_not_used_is_flagged_until_its_port_moves(self):
        """Granted RDMA, not using it, on a DRA node: the driver reads the data counters of the
        ports the pod's claims hold (the real kubelet's PodResources answer) and, after the test
        config's 20 s (unusedRdmaAfterSeconds), posts a Warning event on the pod (its UID from
        containerd's NRI) and sets kube_rdma_pod_rdma_unused; both go once the port carries
        traffic, which the driver's own port counters show."""
        create(one_nic_claim("idle-nic", device="mlx5_4"))
        admitted, _ = run_probe(toolbox_pod("idle-claim", PROBE, claims=["idle-nic"]))
        unused = (f'kube_rdma_pod_rdma_unused{{namespace="{NAMESPACE}",pod="idle-claim"}} 1')
        try:
            [event] = wait_until("the driver's Warning event on the idle pod",
                                 lambda: pod_events("idle-claim", "RdmaGrantedNotUsed"),
                                 timeout=90)
            self.assertEqual(event["type"], "Warning")
            self.assertEqual(event["involvedObject"]["uid"], admitted["metadata"]["uid"])
            self.assertEqual(event["source"], {"component": "rdma-dra-driver", "host": NODE})
            self.assertIn("held RDMA ports mlx5_4:1 for 20 s", event["message"])
            self.assertIn(unused, daemon_metrics("rdma-dra-driver").splitlines())

            def sent_bytes():
                prefix = 'kube_rdma_port_xmit_data_bytes_total{device="mlx5_4",'
                return next(float(line.split()[-1])
                            for line in daemon_metrics("rdma-dra-driver").splitlines()
                            if line.startswith(prefix) and 'port="1"' in line)
            before = sent_bytes()
            traffic = PortTraffic([("mlx5_4", "1")], words=1024)
            try:
                wait_until("the flag gone once the port carries traffic",
                           lambda: unused not in daemon_metrics("rdma-dra-driver").splitlines(),
                           timeout=30)
                self.assertGreaterEqual(sent_bytes() - before, 4096)  # 1024 words, x4
            finally:
                traffic.stop()
            self.assertEqual(len(pod_events("idle-claim", "RdmaGrantedNotUsed")), 1)
        finally:
            kubectl("delete", "pod", "-n", NAMESPACE, "idle-claim", "--wait=true")
            kubectl("delete", "resourceclaim", "-n", NAMESPACE, "idle-nic", "--wait=true")

    def test_a_pod_asking_rdma_shared_by_name_is_served_by_the_driver(self):
        """components/dra-extended-resources: the guide's `rdma/shared: 1` on a node without the
        device plugin. The real scheduler makes the pod a claim of the class that names
        rdma/shared (roce.rdma.kube-rdma.io), the kubelet has the driver prepare it, and the
        webhook mutates the pod as it does under the device plugin."""
        pod = toolbox_pod("by-name", PROBE, limits={"rdma/shared": "1"})
        admitted, report = run_probe(pod)
        container = admitted["spec"]["containers"][0]
        self.assertIn("IPC_LOCK", container["securityContext"]["capabilities"]["add"])
        self.assertTrue(has_cap(report["capeff"], CAP_IPC_LOCK))
        self.assertIn("tmpfs", report["shm"])

        status = get("pod", "by-name", NAMESPACE)["status"]
        claim = get("resourceclaim", status["extendedResourceClaimStatus"]["resourceClaimName"],
                    NAMESPACE)
        (result,) = claim["status"]["allocation"]["devices"]["results"]
        self.assertEqual((result["driver"], result["pool"]), (DRIVER, NODE))
        nic = next(d for d in our_slices()[0]["spec"]["devices"] if d["name"] == result["device"])
        # The same NCCL settings as a claim of the class: exactly the allocated port.
        self.assertEqual(report["conf"].get("NCCL_IB_HCA"),
                         f"={attribute(nic, 'rdmaDevice')}:{attribute(nic, 'port')}")
        self.assertEqual(report["env"].get("KUBE_RDMA_CDI"), "1")
        self.assertEqual(len([d for d in report["dev"] if "uverbs" in d]), 1, report["dev"])
        self.assertEqual(report["memlock"], expected_memlock())
        uid = claim["metadata"]["uid"]
        kubectl("delete", "pod", "-n", NAMESPACE, "by-name", "--wait=true")
        wait_until("the scheduler's claim and its CDI spec to go with the pod",
                   lambda: uid not in in_node("ls", "/var/run/cdi").stdout)

    def test_policy_refuses_another_nodes_slice_with_the_drivers_token(self):
        pod = wait_until("the driver's pod", driver_pod)["metadata"]["name"]
        token = kubectl("exec", "-n", "kube-rdma", pod, "-c", "rdma-dra-driver", "--",
                        "cat", "/var/run/secrets/kubernetes.io/serviceaccount/token").strip()
        other = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                 "metadata": {"name": "someone-elses"},
                 "spec": {"driver": DRIVER, "nodeName": "another-node",
                          "pool": {"name": "another-node", "generation": 1,
                                   "resourceSliceCount": 1},
                          "devices": []}}
        # A kubeconfig with nothing but that token: the API server sees the driver's identity.
        as_driver = os.path.join(STATE, "dra-driver-token.kubeconfig")
        with open(os.environ["KUBECONFIG"]) as f:
            server = yaml.safe_load(f)["clusters"][0]["cluster"]["server"]
        with open(as_driver, "w") as f:
            yaml.safe_dump({"apiVersion": "v1", "kind": "Config",
                            "clusters": [{"name": "e2e", "cluster": {
                                "server": server,
                                "certificate-authority": os.path.join(STATE, "pki", "ca.crt")}}],
                            "users": [{"name": "driver", "user": {"token": token}}],
                            "contexts": [{"name": "e2e",
                                          "context": {"cluster": "e2e", "user": "driver"}}],
                            "current-context": "e2e"}, f)
        self.assertIn("system:serviceaccount:kube-rdma:rdma-dra-driver",
                      kubectl("--kubeconfig", as_driver, "auth", "whoami"))
        run = kubectl("--kubeconfig", as_driver, "create", "-f", "-",
                      stdin=yaml.safe_dump(other), check=False)
        self.assertNotEqual(run.returncode, 0, "another node's slice was created")
        self.assertIn("may write only ResourceSlices", run.stderr)


def run_two_replicas_with_every_port(test, example):
    """The example's claim (template) and its Deployment, two replicas of probes: each must
    print a report with all eight RoCE ports (its nccl.conf and uverbs nodes). Then the
    Deployment goes."""
    claim, deployment = example_documents(example)
    create(claim)
    probe_container(deployment["spec"]["template"]["spec"]["containers"][0])
    deployment["spec"]["replicas"] = 2
    create(deployment)
    labels = deployment["spec"]["template"]["metadata"]["labels"].items()

    def reports():
        pods = get("pods", namespace=NAMESPACE)["items"]
        logs = [pod_log(p["metadata"]["name"]) for p in pods
                if p["metadata"].get("labels", {}).items() >= labels]
        return [parse_report(log) for log in logs if "e2e-done" in log]

    done = wait_until("both replicas to print their reports",
                      lambda: (lambda r: r if len(r) == 2 else None)(reports()), timeout=120)
    hca = "=" + ",".join(f"mlx5_{i}:1" for i in range(1, 9))
    for report in done:
        test.assertEqual(report["conf"].get("NCCL_IB_HCA"), hca)
        test.assertEqual(len([d for d in report["dev"] if "uverbs" in d]), 8, report["dev"])
    kubectl("delete", "deployment", "-n", NAMESPACE, deployment["metadata"]["name"],
            "--wait=true")


def one_nic_claim(name, device=None, device_class="roce.rdma.kube-rdma.io"):
    """A claim of one port of the class; of `device`'s (mlx5_N) when given."""
    exactly = {"deviceClassName": device_class}
    if device:
        expression = f"device.attributes['{DRIVER}'].rdmaDevice == '{device}'"
        exactly["selectors"] = [{"cel": {"expression": expression}}]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {"devices": {"requests": [{"name": "nic", "exactly": exactly}]}}}


def driver_pod():
    pods = [p for p in get("pods", namespace="kube-rdma")["items"]
            if p["metadata"]["name"].startswith("rdma-dra-driver")
            and p["status"].get("phase") == "Running"]
    return pods[0] if pods else None


class DraFaults(ClusterTest):
    def test_driver_killed_then_claim_unprepared_from_its_checkpoint(self):
        create(one_nic_claim("nic"))
        run_probe(toolbox_pod("claimant", PROBE, claims=["nic"]))
        uid = get("resourceclaim", "nic", NAMESPACE)["metadata"]["uid"]
        self.assertIn(uid, in_node("ls", "/var/run/cdi").stdout)
        # SIGKILL: no chance to save anything; the kubelet restarts the container.
        pid = subprocess.run(["pgrep", "-x", "rdma-dra-driver"], capture_output=True,
                             text=True).stdout.split()
        self.assertEqual(len(pid), 1, pid)
        os.kill(int(pid[0]), 9)
        wait_until("the driver's container to restart",
                   lambda: (driver_pod() or {}).get("status", {}).get("containerStatuses", [{}])[0]
                   .get("restartCount", 0) >= 1 and driver_pod()["status"]["containerStatuses"][0]
                   .get("ready"))
        kubectl("delete", "pod", "-n", NAMESPACE, "claimant", "--wait=true")
        wait_until("the claim's CDI spec to be removed by the restarted driver",
                   lambda: uid not in in_node("ls", "/var/run/cdi").stdout)

    def test_port_down_taints_the_device_and_shows_in_the_pods_status(self):
        """Ports go DOWN: the slice says so (state, and a NoSchedule taint that alone keeps the
        scheduler off a port), and for a running pod's port the real kubelet, from the driver's
        health stream, puts it in the pod's allocatedResourcesStatus. Back ACTIVE, all clears."""
        create(one_nic_claim("on-mlx5-4", device="mlx5_4"))
        run_probe(toolbox_pod("on-mlx5-4", PROBE, claims=["on-mlx5-4"]))
        kubectl("apply", "-f", "-", stdin=yaml.safe_dump(ANY_PORT_CLASS))
        try:
            # Rediscovery every second, and a change within 1.5 s of the last publication waits
            # for the rest of the 1.5 s (a flapping port is folded into one update per interval).
            set_port_state("mlx5_4", 1, "DOWN")
            set_port_state("mlx5_3", 1, "DOWN")
            wait_until("mlx5_3 and mlx5_4 DOWN in the slice",
                       lambda: state_of("mlx5_4") == state_of("mlx5_3") == "DOWN",
                       timeout=8, interval=0.1)
            (taint,) = device_of("mlx5_4")["taints"]
            self.assertEqual((taint["key"], taint["value"], taint["effect"]),
                             (DOMAIN + "unhealthy", "DOWN", "NoSchedule"))
            self.assertIn("timeAdded", taint)  # stamped by the API server
            health = wait_until("the pod's status to show mlx5_4 unhealthy",
                                lambda: device_health("on-mlx5-4") == "Unhealthy" and
                                allocated_status("on-mlx5-4"), timeout=30)
            print(f"\n  allocatedResourcesStatus: {health}", end=" ")

            # Through a class without the state selector, a claim for mlx5_3 stays unallocated
            # unless it tolerates the taint.
            create(one_nic_claim("wants-mlx5-3", device="mlx5_3", device_class="e2e-any-port"))
            create(toolbox_pod("wants-mlx5-3", PROBE, claims=["wants-mlx5-3"]))
            tolerant = one_nic_claim("tolerates", device="mlx5_3", device_class="e2e-any-port")
            tolerant["spec"]["devices"]["requests"][0]["exactly"]["tolerations"] = [
                {"key": DOMAIN + "unhealthy", "operator": "Exists", "effect": "NoSchedule"}]
            create(tolerant)
            create(toolbox_pod("tolerates", PROBE, claims=["tolerates"]))
            allocated = wait_until("the tolerating claim to be allocated",
                                   lambda: get("resourceclaim", "tolerates", NAMESPACE)
                                   .get("status", {}).get("allocation"))
            self.assertEqual(allocated["devices"]["results"][0]["device"],
                             device_of("mlx5_3")["name"])
            # The driver still will not prepare a port that is down, and says why.
            wait_until("the kubelet to report the driver's refusal",
                       lambda: "no ACTIVE port" in kubectl("get", "events", "-n", NAMESPACE,
                                                           "--field-selector",
                                                           "involvedObject.name=tolerates"))
            kubectl("delete", "pod", "-n", NAMESPACE, "tolerates", "--wait=true")
            self.assertTrue(any(c.get("reason") == "Unschedulable" for c in
                                get("pod", "wants-mlx5-3", NAMESPACE)["status"]
                                .get("conditions", [])))
            self.assertNotIn("allocation", get("resourceclaim", "wants-mlx5-3", NAMESPACE)
                             .get("status", {}))
        finally:
            restore_ports()
        wait_until("both ports ACTIVE in the slice",
                   lambda: state_of("mlx5_4") == state_of("mlx5_3") == "ACTIVE",
                   timeout=8, interval=0.1)
        self.assertNotIn("taints", device_of("mlx5_4"))
        wait_until("the pod's status to show mlx5_4 healthy again",
                   lambda: device_health("on-mlx5-4") == "Healthy", timeout=30)
        # The scheduler retries the waiting pod once the slice changes.
        wait_until("the waiting pod to run once its port is back",
                   lambda: "e2e-done" in pod_log("wants-mlx5-3"), timeout=60)
        for pod in ("on-mlx5-4", "wants-mlx5-3"):
            kubectl("delete", "pod", "-n", NAMESPACE, pod, "--wait=true")
        kubectl("delete", "deviceclass", "e2e-any-port")

def device_of(rdma_device):
    """The node's slice's device for mlx5_N's port."""
    for d in our_slices()[0]["spec"]["devices"]:
        if attribute(d, "rdmaDevice") == rdma_device:
            return d
    return None


def state_of(rdma_device):
    """The state attribute the node's slice gives the device's port."""
    device = device_of(rdma_device)
    return attribute(device, "state") if device else None


def allocated_status(pod_name):
    """The kubelet's allocatedResourcesStatus of the pod's first container."""
    statuses = get("pod", pod_name, NAMESPACE)["status"].get("containerStatuses", [])
    return statuses[0].get("allocatedResourcesStatus") if statuses else None


def device_health(pod_name):
    """The health the pod's status gives its one claimed device (None while it says nothing)."""
    for entry in allocated_status(pod_name) or []:
        for resource in entry.get("resources", []):
            return resource.get("health")
    return None


def driver_restarts():
    return driver_pod()["status"]["containerStatuses"][0].get("restartCount", 0)


# How long the API server is stopped: the 3 minutes, longer than the liveness probe's
# 3 x 10 s and the driver's --health-timeout of 1 minute together.
OUTAGE_SECONDS = int(os.environ.get("KUBE_RDMA_E2E_OUTAGE_SECONDS", "180"))


def installer():
    """How scripts/cluster.sh installed kube-rdma: kustomize or helm."""
    with open(os.path.join(STATE, "installer")) as f:
        return f.read().strip()


def set_shared_ports(shared):
    """The driver with or without --share-ports, as the installer does it: with kustomize,
    test/cluster/overlays/dra-shared-ports or dra applied; with Helm, an upgrade of the release
    with dra.sharePorts=true, and back with a rollback to the revision before it. Waits for the
    driver's rollout."""
    if installer() == "helm":
        if shared:
            helm("upgrade", "kube-rdma", os.path.join(REPO, "manifests", "helm", "kube-rdma"),
                 "-n", "kube-rdma", "--reuse-values", "--set", "dra.sharePorts=true")
        else:
            helm("rollback", "kube-rdma", "-n", "kube-rdma")
    else:
        overlay = "dra-shared-ports" if shared else "dra"
        kubectl("apply", "-k", os.path.join(os.path.dirname(__file__), "overlays", overlay))
    kubectl("-n", "kube-rdma", "rollout", "status", "daemonset/rdma-dra-driver", "--timeout=120s",
            timeout=150)


def release_history():
    """[(revision, status, description)] of the kube-rdma Helm release, oldest first."""
    return [(r["revision"], r["status"], r["description"]) for r in
            json.loads(helm("history", "kube-rdma", "-n", "kube-rdma", "-o", "json"))]


def shared_ports():
    """Whether the node's published ports are allocatable to many claims (all, or none: None)."""
    devices = our_slices()[0]["spec"]["devices"]
    shared = [d.get("allowMultipleAllocations", False) for d in devices]
    return shared[0] if len(set(shared)) == 1 else None


class DraSharedPorts(ClusterTest):
    """components/dra-shared-ports: the driver with --share-ports, for this class's tests."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        set_shared_ports(True)
        wait_until("the ports allocatable to many claims", lambda: shared_ports() is True,
                   timeout=60)

    @classmethod
    def tearDownClass(cls):
        kubectl("delete", "namespace", NAMESPACE, "--wait=true", timeout=180)
        set_shared_ports(False)
        wait_until("the ports one claim's again", lambda: shared_ports() is False, timeout=60)
        if installer() == "helm":
            # Installed, upgraded, rolled back to the first revision.
            history = release_history()
            assert [(r, s) for r, s, _ in history[-3:]] == [
                (1, "superseded"), (2, "superseded"), (3, "deployed")], history
            assert history[-1][2] == "Rollback to 1", history
        super().tearDownClass()

    def test_the_upgrade_is_the_releases_deployed_revision(self):
        if installer() != "helm":
            self.skipTest("installed with kustomize")
        self.assertEqual([(r, s) for r, s, _ in release_history()],
                         [(1, "superseded"), (2, "deployed")])
        values = json.loads(helm("get", "values", "kube-rdma", "-n", "kube-rdma", "-o", "json"))
        self.assertEqual(values["dra"], {"extendedResources": True, "sharePorts": True})

    def test_two_pods_with_claims_of_their_own_share_one_port(self):
        """The issue's case: two claims of mlx5_5's port, both allocated (distinct shareIDs, one
        tenant each of the pool's 128), each pod with that port's NCCL settings."""
        pods = ("share-a", "share-b")
        for name in pods:
            create(one_nic_claim(name, device="mlx5_5"))
        reports = [run_probe(toolbox_pod(name, PROBE, claims=[name]))[1] for name in pods]
        results = [allocation_results(get("resourceclaim", name, NAMESPACE))["nic"]
                   for name in pods]
        port = device_of("mlx5_5")
        self.assertEqual({r["device"] for r in results}, {port["name"]})
        self.assertEqual(len({r["shareID"] for r in results}), 2, results)
        for r in results:
            self.assertEqual(r["consumedCapacity"], {"tenants": "1"})
        self.assertEqual(port["capacity"]["tenants"]["value"], "128")
        for report in reports:
            self.assertEqual(report["conf"].get("NCCL_IB_HCA"), "=mlx5_5:1")
            self.assertEqual(len([d for d in report["dev"] if "uverbs" in d]), 1, report["dev"])
        for name in pods:
            kubectl("delete", "pod", "-n", NAMESPACE, name, "--wait=true")

    def test_two_requests_of_one_claim_get_one_port_twice_unless_distinct(self):
        """What docs/dra.md "Shared ports" warns of: the scheduler's first fit gives both requests
        of a claim the same shared port; a distinctAttribute constraint on rdmaDevice keeps them
        apart."""
        rdma_device = {d["name"]: attribute(d, "rdmaDevice")
                       for d in our_slices()[0]["spec"]["devices"]}
        got = {}
        for name, distinct in (("two-plain", False), ("two-distinct", True)):
            requests = [{"name": f"nic-{i}", "exactly": {"deviceClassName":
                                                         "roce.rdma.kube-rdma.io"}}
                        for i in range(2)]
            claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                     "metadata": {"name": name, "namespace": NAMESPACE},
                     "spec": {"devices": {"requests": requests}}}
            if distinct:
                claim["spec"]["devices"]["constraints"] = [
                    {"requests": ["nic-0", "nic-1"], "distinctAttribute": DOMAIN + "rdmaDevice"}]
            create(claim)
            run_probe(toolbox_pod(name, PROBE, claims=[name]))
            results = get("resourceclaim", name, NAMESPACE)["status"]["allocation"]["devices"]
            got[name] = [rdma_device[r["device"]] for r in results["results"]]
            kubectl("delete", "pod", "-n", NAMESPACE, name, "--wait=true")
        self.assertEqual(len(set(got["two-plain"])), 1, got)
        self.assertEqual(len(set(got["two-distinct"])), 2, got)

    def test_every_pod_its_own_claim_of_every_port(self):
        """examples/dra/shared-ports.yaml: the device plugin's rdma/shared under DRA. Two replicas,
        each with a claim of every RoCE port from the template, run side by side on the node."""
        run_two_replicas_with_every_port(self, "dra/shared-ports.yaml")


class DraWithTheApiServer(ClusterTest):
    def test_a_deleted_slice_is_back_through_the_watch_without_a_list(self):
        wait_until("the node's slice", our_slices)
        name = our_slices()[0]["metadata"]["name"]
        start = time.time()
        kubectl("delete", "resourceslice", name, "--wait=false")
        wait_until("a new slice of the node", lambda: [
            s for s in our_slices() if s["metadata"]["name"] != name], timeout=10, interval=0.05)
        print(f"\n  slice back {time.time() - start:.2f} s after kubectl delete", end=" ")
        time.sleep(1)  # the audit log's last lines
        sent = requests_of("rdma-dra-driver", start, time.time())
        self.assertNotIn(("list", "resourceslices"), sent)
        self.assertNotIn(("get", "resourceslices"), sent)
        self.assertIn(("create", "resourceslices"), sent)

    def test_an_api_server_outage_restarts_no_driver(self):
        restarts = driver_restarts()
        cluster("stop", "kube-apiserver")
        try:
            time.sleep(OUTAGE_SECONDS / 2)
            set_port_state("mlx5_2", 1, "DOWN")  # the slice must say so once the API is back
            time.sleep(OUTAGE_SECONDS / 2)
        finally:
            cluster("start", "kube-apiserver")
        try:
            wait_until("the API server", lambda: kubectl("get", "--raw", "/readyz", timeout=5))
            ready = time.monotonic()
            # The driver reaches the API server through the kubernetes Service, which the API
            # server takes out of its endpoints when it stops and kube-proxy brings back after
            # its own watch recovers (about 30 s here): time the driver from then on.
            wait_until("the kubernetes Service from the node", lambda: in_node(
                "curl", "-sk", "-o", "/dev/null", "-m", "2", "-w", "%{http_code}",
                "https://10.96.0.1/readyz").stdout not in ("", "000"), timeout=120, interval=0.2)
            service = time.monotonic()
            wait_until("mlx5_2's state DOWN in the slice", lambda: state_of("mlx5_2") == "DOWN",
                       timeout=15, interval=0.1)
            print(f"\n  Service back {service - ready:.1f} s after the API server's /readyz, "
                  f"slice right {time.monotonic() - service:.1f} s after that", end=" ")
        finally:
            restore_ports()
        self.assertEqual(driver_restarts(), restarts)
        wait_until("the driver's pod ready", lambda: driver_pod()["status"]["containerStatuses"][0]
                   .get("ready"))


if __name__ == "__main__":
    unittest.main()
