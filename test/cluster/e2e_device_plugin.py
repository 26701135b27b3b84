"""End-to-end: kube-rdma with the device plugin on a real one-node cluster (scripts/cluster.sh up
--driver device-plugin). Pods go through the real API server (the webhook's patch applied by
it), the real scheduler and the real kubelet's device manager, and run under containerd and
runc; what a container sees is read from inside it.

    scripts/cluster.sh up && python3 -m unittest test/cluster/e2e_device_plugin.py -v
"""

import os
import select
import subprocess
import time
import unittest

from e2e_lib import (A100_GID_INDEX, A100_HCA, A100_OTHER_POD_IPS, A100_RAIL_POD_GID_INDEX,
                     A100_RAIL_POD_IPS, CAP_IPC_LOCK, CONTAINER_OUTCOME_FAMILIES, NAMESPACE, NODE,
                     PROBE, REPO, STATE, ClusterTest, attached_networks, cluster,
                     container_outcome_changes, container_outcomes, create, daemon_metrics,
                     expected_memlock, get, has_cap, in_node_command, kubectl, pod_events, pod_log,
                     pytorchjob_worker, rail_networks, restore_ports, run_probe, runnable_here,
                     set_port_state, toolbox_pod, wait_until)
# The shipped monitoring against a real Prometheus, run with this suite's cluster.
from monitoring import Monitoring  # noqa: F401


def allocatable(resource):
    return get("node", NODE)["status"]["allocatable"].get(resource)


class DevicePluginPods(ClusterTest):
    def assert_rdma_container(self, report, *, user_hca=None):
        self.assertTrue(has_cap(report["capeff"], CAP_IPC_LOCK),
                        f"CapEff {report['capeff']} lacks IPC_LOCK")
        # The policy's /dev/shm: a memory-backed emptyDir of 16Gi.
        self.assertIn("tmpfs", report["shm"])
        self.assertEqual(int(report["shm_kib"]), 16 * 1024 * 1024, report["shm"])
        env = report["env"]
        self.assertEqual(env.get("NCCL_IB_HCA"), user_hca or A100_HCA)
        # Resolved per container by kube-rdma-nccl-hook: in nccl.conf only, never in the
        # environment, where it would hide the container's own value. This pod is on the bridge
        # CNI's veth only, so it has no GID of its own and keeps the node's index.
        self.assertNotIn("NCCL_IB_GID_INDEX", env)
        self.assertEqual(report["conf"].get("NCCL_IB_GID_INDEX"), A100_GID_INDEX)
        # The pod network's interface (the webhook's policy and the plugin agree on it).
        self.assertEqual(env.get("NCCL_SOCKET_IFNAME"), "eth0")
        self.assertEqual(report["conf"].get("NCCL_IB_HCA"), A100_HCA)
        # Every uverbs node of the eight data NICs and rdma_cm, none of the management NIC's.
        devices = sorted(report["dev"])
        self.assertIn("/dev/infiniband/rdma_cm", devices)
        self.assertEqual(len([d for d in devices if "uverbs" in d]), 8, devices)

    def test_allocatable_offers_rdma_shared(self):
        # The default config's sharedCount "auto": 16 per HCA of the pool, eight HCAs.
        self.assertEqual(wait_until("rdma/shared in the node's allocatable",
                                    lambda: allocatable("rdma/shared")), "128")
        self.assertIsNone(allocatable("rdma/hca"))  # no InfiniBand port on this node

    def test_example_config_offers_rdma_hca(self):
        """examples/every-port-as-hca's config, put into the ConfigMap as an operator edits it:
        the plugin reloads it live and the kubelet offers every data port as rdma/hca."""
        def set_config(path):
            manifest = kubectl("create", "configmap", "rdma-device-plugin-config", "-n",
                               "kube-rdma", f"--from-file=config.json={path}",
                               "--dry-run=client", "-o", "yaml")
            kubectl("apply", "-f", "-", stdin=manifest)
            # A pod update makes the kubelet refresh the pod's ConfigMap volume at once instead
            # of at its next periodic sync.
            plugin = [p["metadata"]["name"] for p in get("pods", namespace="kube-rdma")["items"]
                      if p["metadata"]["name"].startswith("rdma-device-plugin")][0]
            kubectl("annotate", "pod", "-n", "kube-rdma", plugin, "--overwrite",
                    f"e2e.kube-rdma.io/config={os.path.basename(os.path.dirname(path))}")

        set_config(os.path.join(REPO, "examples", "every-port-as-hca", "plugin-config.json"))
        try:
            self.assertEqual(wait_until("rdma/hca in the allocatable",
                                        lambda: allocatable("rdma/hca"), timeout=120), "128")
        finally:
            set_config(os.path.join(REPO, "test", "cluster", "overlays", "common",
                                    "plugin-config.json"))
        wait_until("rdma/shared back", lambda: allocatable("rdma/shared") == "128", timeout=120)

    def test_pod_asking_rdma_shared(self):
        pod = toolbox_pod("resource", PROBE, limits={"rdma/shared": "1"},
                          env={"NCCL_DEBUG": "WARN"})
        admitted, report = run_probe(pod)
        # The API server stored what the webhook patched in.
        self.assertIn("kube-rdma.io/injected", admitted["metadata"]["annotations"])
        self.assert_rdma_container(report)
        self.assertEqual(report["env"].get("NCCL_DEBUG"), "WARN")
        # containerd and runc ran kube-rdma-nccl-hook from the plugin's CDI spec for this
        # container, in its network namespace: the bridge CNI's veth alone, so no GID of its own.
        line = self.hook_log_line(pod)
        self.assertIn("only loopback and veth interfaces", line)
        self.assertIn("outcome=no-own-gid", line)
        # The real kubelet's PodResources API names the running pod as the holder of the pool's
        # eight ports, each joinable with its counters on device and port.
        held = [line for line in daemon_metrics("rdma-device-plugin").splitlines()
                if line.startswith("kube_rdma_pod_port_info{") and 'pod="resource"' in line]
        self.assertEqual(sorted(held), sorted(
            f'kube_rdma_pod_port_info{{container="main",device="mlx5_{i}",namespace="{NAMESPACE}",'
            f'pod="resource",port="1",resource="rdma/shared"}} 1' for i in range(1, 9)))

    def hook_log_line(self, pod):
        """kube-rdma-nccl-hook's one log line for the pod's container."""
        status = get("pod", pod["metadata"]["name"], pod["metadata"]["namespace"])["status"]
        container = status["containerStatuses"][0]["containerID"].split("://")[-1]
        with open(os.path.join(STATE, "node", "kube-rdma", "nccl-hook.log")) as f:
            lines = [line for line in f if f"container={container}" in line]
        self.assertEqual(len(lines), 1, lines)
        return lines[0]

    def test_pod_on_the_rails_gets_its_own_gid_index(self):
        """The network operator's shared RoCE setup: Multus gives the pod a macvlan per rail
        (net1..net8) with an address of that rail's subnet, and the kernel has put those
        addresses in the data ports' GID tables after the node's and another pod's. The container
        gets the index of its own addresses, in its nccl.conf (the hook) and its environment (the
        NRI plugin, through containerd's NRI); the node's index stays the node's."""
        before = container_outcomes("rdma-device-plugin")
        pod = toolbox_pod("rails", PROBE, limits={"rdma/shared": "1"},
                          annotations=rail_networks())
        _, report = run_probe(pod)
        # Multus attached the eight networks and said so on the pod.
        self.assertEqual(attached_networks("rails"),
                         {f"net{rail}": [address]
                          for rail, address in enumerate(A100_RAIL_POD_IPS, start=1)})
        # Its own index on every port, not the node's 3 nor the other pod's 5.
        self.assertEqual(report["conf"].get("NCCL_IB_GID_INDEX"), A100_RAIL_POD_GID_INDEX)
        self.assertEqual(report["env"].get("NCCL_IB_GID_INDEX"), A100_RAIL_POD_GID_INDEX)
        self.assertEqual(report["conf"].get("NCCL_IB_HCA"), A100_HCA)
        # Bootstrap stays on the cluster network, not a rail.
        self.assertEqual(report["env"].get("NCCL_SOCKET_IFNAME"), "eth0")
        line = self.hook_log_line(pod)
        self.assertIn("the container's own GID index", line)
        self.assertIn(f"pod={NAMESPACE}/rails ", line)  # named from containerd's annotations
        self.assertIn(f"gid_index={A100_RAIL_POD_GID_INDEX}", line)
        # A pod on the cluster network alone, at the same time, keeps the node's index.
        _, plain = run_probe(toolbox_pod("no-rails", PROBE, limits={"rdma/shared": "1"}))
        self.assertEqual(plain["conf"].get("NCCL_IB_GID_INDEX"), A100_GID_INDEX)
        self.assertNotIn("NCCL_IB_GID_INDEX", plain["env"])
        # The plugin's metrics counted both containers, each by what the hook and the NRI plugin
        # did.
        self.assertEqual(container_outcome_changes("rdma-device-plugin", before),
                         {family: {"own-gid-index": 1, "no-own-gid": 1}
                          for family in CONTAINER_OUTCOME_FAMILIES})

    def test_a_pod_whose_ports_disagree_is_told_so_in_its_events(self):
        """rdma/shared gives all eight data ports; the pod's rail-1 address sits at index 5 of
        mlx5_1's table, its addresses on rails 2-8 at 7. NCCL takes one index for all ports: the
        container keeps the node's (nccl.conf's 3, nothing in its environment), and the plugin
        posts a Warning on the pod with the token the CDI component gives it for that alone."""
        addresses = {rail: A100_RAIL_POD_IPS[rail - 1] for rail in range(1, 9)}
        addresses[1] = A100_OTHER_POD_IPS[0]
        networks = rail_networks(range(1, 9), addresses, name="skewed")
        try:
            _, report = run_probe(toolbox_pod("skewed", PROBE, limits={"rdma/shared": "1"},
                                              annotations=networks))
            self.assertEqual(report["conf"].get("NCCL_IB_GID_INDEX"), A100_GID_INDEX)
            self.assertNotIn("NCCL_IB_GID_INDEX", report["env"])
            event = wait_until("the plugin's Warning event on the pod",
                               lambda: pod_events("skewed", "RdmaGidPortsDisagree"))[0]
            self.assertEqual(event["source"], {"component": "rdma-device-plugin", "host": NODE})
            self.assertIn("(mlx5_1:1=5,mlx5_2:1=7,", event["message"])
        finally:
            kubectl("delete", "pod", "-n", NAMESPACE, "skewed", "--ignore-not-found",
                    "--wait=true")

    def test_annotation_only_pod(self):
        pod = toolbox_pod("annotation", PROBE, annotations={"kube-rdma.io/rdma": "1(roce)"})
        admitted, report = run_probe(pod)
        limits = admitted["spec"]["containers"][0]["resources"]["limits"]
        self.assertEqual(limits.get("rdma/shared"), "1")
        self.assert_rdma_container(report)

    def test_users_own_nccl_value_wins(self):
        pod = toolbox_pod("user-hca", PROBE, limits={"rdma/shared": "1"},
                          env={"NCCL_IB_HCA": "=mlx5_3:1"})
        _, report = run_probe(pod)
        self.assert_rdma_container(report, user_hca="=mlx5_3:1")

    def test_non_root_container_gets_memlock_from_the_hook(self):
        pod = toolbox_pod("non-root", PROBE, limits={"rdma/shared": "1"},
                          security={"runAsUser": 1000, "runAsNonRoot": True})
        _, report = run_probe(pod)
        # The CDI spec's marker and the hook's work: the container would otherwise start with
        # containerd's soft limit (64 KiB here, scripts/cluster.sh), which a non-root process
        # cannot raise.
        self.assertEqual(report["env"].get("KUBE_RDMA_CDI"), "1")
        self.assertEqual(report["memlock"], expected_memlock())

    def test_the_guides_pytorchjob(self):
        """The guide's PyTorchJob pod template, as the training operator would create it: first
        exactly as written (server-side dry run: the API server calls the webhook), then, with
        what this one small node cannot give (eight GPUs, 900Gi, the dataset volume) taken out,
        scheduled and run."""
        pod, _ = pytorchjob_worker("pytorchjob-roce.yaml", "bert-large-nccl-worker-0")
        dry = create(pod, dry_run=True)
        container = dry["spec"]["containers"][0]
        self.assertIn("IPC_LOCK", container["securityContext"]["capabilities"]["add"])
        self.assertIn("/dev/shm", [m["mountPath"] for m in container["volumeMounts"]])
        env = {e["name"]: e.get("value") for e in container["env"]}
        self.assertEqual(env.get("NCCL_IB_TIMEOUT"), "22")
        self.assertEqual(env.get("PYTHONUNBUFFERED"), "1")

        runnable_here(pod["spec"])
        _, report = run_probe(pod)
        self.assert_rdma_container(report)
        self.assertEqual(report["env"].get("NCCL_IB_TIMEOUT"), "22")


def kubelet_log_times(since_line, text):
    """Seconds of the day at which the kubelet logged lines containing `text`, after line
    `since_line` of its log (klog's header: I1204 16:49:36.807503 ...)."""
    with open(os.path.join(STATE, "logs", "kubelet.log")) as f:
        lines = f.readlines()[since_line:]
    times = []
    for line in lines:
        if text in line:
            h, m, sec = line.split()[1].split(":")
            times.append(int(h) * 3600 + int(m) * 60 + float(sec))
    return times


def kubelet_log_length():
    with open(os.path.join(STATE, "logs", "kubelet.log")) as f:
        return sum(1 for _ in f)


class DevicePluginFaults(ClusterTest):
    """Restarts and faults with running pods. Each test leaves the cluster as it found it."""

    def test_kubelet_restart(self):
        pod = toolbox_pod("survivor", PROBE, limits={"rdma/shared": "1"})
        run_probe(pod)
        cluster("stop", "kubelet")
        since = kubelet_log_length()
        cluster("start", "kubelet")
        # The kubelet's own log: its device-plugin socket serving again, then the plugin's pool
        # registered with it (through the plugin watcher or kubelet.sock, whichever it uses).
        registered = wait_until(
            "the kubelet to register rdma/shared again",
            lambda: kubelet_log_times(since, '"Registered client" name="rdma/shared"'), timeout=60)
        serving = kubelet_log_times(since, "Starting device plugin registration server")
        delay = registered[0] - serving[0]
        print(f"\n    registered {delay * 1000:.0f} ms after the kubelet's socket", end=" ")
        self.assertLessEqual(delay, 1.0)
        wait_until("rdma/shared back in the allocatable",
                   lambda: allocatable("rdma/shared") == "128")
        # The running pod kept its container and its devices.
        status = get("pod", "survivor", NAMESPACE)["status"]
        self.assertEqual(status["phase"], "Running")
        self.assertEqual(status["containerStatuses"][0]["restartCount"], 0)
        # (exec is served once the restarted kubelet has read its pods from the API server)
        devices = wait_until("exec into the pod", lambda: kubectl(
            "exec", "-n", NAMESPACE, "survivor", "--", "ls", "/dev/infiniband").split())
        self.assertEqual(len(devices), 9, devices)

    def test_ports_going_down(self):
        try:
            # One port DOWN: the pool still serves, and a new pod's NCCL_IB_HCA leaves it out.
            set_port_state("mlx5_1", 1, "DOWN")
            time.sleep(1.5)  # two health ticks
            _, report = run_probe(toolbox_pod("one-down", PROBE, limits={"rdma/shared": "1"}))
            self.assertEqual(report["env"]["NCCL_IB_HCA"],
                             "=" + ",".join(f"mlx5_{i}:1" for i in range(2, 9)))
            # Every port DOWN: no usable HCA, the kubelet offers none.
            for i in range(2, 9):
                set_port_state(f"mlx5_{i}", 1, "DOWN")
            wait_until("rdma/shared to drop to 0", lambda: allocatable("rdma/shared") == "0")
        finally:
            restore_ports()
        wait_until("rdma/shared back to 128", lambda: allocatable("rdma/shared") == "128")

    def test_webhook_down(self):
        kubectl("-n", "kube-rdma", "scale", "deployment/rdma-webhook", "--replicas=0")
        try:
            wait_until("the webhook's pods to go",
                       lambda: not [p for p in get("pods", namespace="kube-rdma")["items"]
                                    if p["metadata"]["name"].startswith("rdma-webhook")])
            # failurePolicy Ignore: admitted unchanged, and the device plugin's values still come.
            admitted, report = run_probe(toolbox_pod("no-webhook", PROBE,
                                                     limits={"rdma/shared": "1"}))
            self.assertNotIn("kube-rdma.io/injected", admitted["metadata"].get("annotations", {}))
            self.assertFalse(has_cap(report["capeff"], CAP_IPC_LOCK))
            self.assertEqual(report["env"].get("NCCL_IB_HCA"), A100_HCA)
            # The plugin's own value: the pod network's eth0, which here is also the node's
            # management netdev (exact match).
            self.assertEqual(report["env"].get("NCCL_SOCKET_IFNAME"), "=eth0")
            self.assertEqual(report["conf"].get("NCCL_IB_HCA"), A100_HCA)
        finally:
            kubectl("-n", "kube-rdma", "scale", "deployment/rdma-webhook", "--replicas=2")
            kubectl("-n", "kube-rdma", "rollout", "status", "deployment/rdma-webhook",
                    "--timeout=120s", timeout=150)

    def test_a_metrics_port_another_program_holds(self):
        """dcgm-exporter (or anything else) on the plugin's metrics port: the plugin still serves
        the devices, says so in its log and is not ready; it serves /metrics once the port is
        free, and is never restarted for it."""
        def plugin():
            pods = [p for p in get("pods", namespace="kube-rdma")["items"]
                    if p["metadata"]["name"].startswith("rdma-device-plugin-")
                    and not p["metadata"].get("deletionTimestamp")]
            return pods[0] if len(pods) == 1 else None

        old = wait_until("the device plugin's pod", plugin)
        node_ip = old["status"]["hostIP"]
        # Takes the port the moment the old plugin lets it go, before the new one starts.
        holder = subprocess.Popen(in_node_command("python3", "-c", f"""
import socket, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # past the old plugin's TIME_WAITs
while True:
    try:
        s.bind(({node_ip!r}, 9436))
        break
    except OSError:
        time.sleep(0.005)
s.listen()
print("held", flush=True)
time.sleep(300)
"""), stdout=subprocess.PIPE, text=True)
        try:
            since = kubelet_log_length()
            kubectl("delete", "pod", "-n", "kube-rdma", old["metadata"]["name"], "--wait=true")
            ready, _, _ = select.select([holder.stdout], [], [], 60)
            self.assertTrue(ready, "the port was never free")
            self.assertEqual(holder.stdout.readline().strip(), "held")
            new = wait_until("the new plugin to say the port is held", lambda: (
                p := plugin()) and p["status"].get("phase") == "Running" and
                "another program holds the metrics port" in pod_log(p["metadata"]["name"],
                                                                     "kube-rdma") and p)
            name = new["metadata"]["name"]
            # The kubelet keeps the old plugin's allocatable for a while: wait for its own log of
            # the new plugin's registration before a pod needs it.
            wait_until("the kubelet to register the new plugin", lambda: kubelet_log_times(
                since, '"Registered client" name="rdma/shared"'), timeout=120)
            wait_until("rdma/shared in the allocatable", lambda: allocatable("rdma/shared") == "128")
            _, report = run_probe(toolbox_pod("port-held", PROBE, limits={"rdma/shared": "1"}))
            self.assertEqual(len([d for d in report["dev"] if "uverbs" in d]), 8, report["dev"])
            status = get("pod", name, "kube-rdma")["status"]["containerStatuses"][0]
            self.assertFalse(status["ready"])
        finally:
            holder.kill()
            holder.wait()
            holder.stdout.close()
        wait_until("the plugin to be ready once the port is free",
                   lambda: get("pod", name, "kube-rdma")["status"]["containerStatuses"][0]["ready"],
                   timeout=90)
        self.assertIn("the metrics port is free", pod_log(name, "kube-rdma"))
        self.assertIn("no-own-gid",
                      container_outcomes("rdma-device-plugin")[CONTAINER_OUTCOME_FAMILIES[0]])
        self.assertEqual(
            get("pod", name, "kube-rdma")["status"]["containerStatuses"][0]["restartCount"], 0)


if __name__ == "__main__":
    unittest.main()
