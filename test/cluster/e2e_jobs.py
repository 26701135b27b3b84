"""End-to-end: the guide's jobs as users run them, on nodes of different hardware (scripts/cluster.sh
up --nodes 4 --operators): the real Kubeflow training operator turns each PyTorchJob of examples/
into its Master and Worker pods and their PodGroup, Volcano's scheduler places the two as one
gang on two nodes, and each container gets the NCCL settings of ITS node from kube-rdma, while
the job's own values stay and the Worker finds the Master by name through the cluster DNS
(CoreDNS). The same for the newer shape, examples/jobset-roce.yaml, through JobSet's controller.

The nodes (scripts/cluster.sh): a100-roce-0 (eight RoCE HCAs mlx5_1..8), rocep-roce-1 (four RoCE
HCAs rocep1s0f0..rocep4s0f0) and ib-hdr8-2, ib-hdr8-3 (eight InfiniBand HCAs mlx5_0..7 each).
What this machine cannot give is taken out of the jobs and named here: the containers run a
probe in the toolbox image instead of torchrun in NVIDIA's PyTorch image; the CPU and memory
requests (90 CPUs, 900Gi) and the dataset volume go. The eight GPUs each pod asks for stay: every
node advertises eight `nvidia.com/gpu` in its status, as Kubernetes documents for an extended
resource no device plugin serves, and carries the A100 product label GPU feature discovery would
put there, so the jobs' GPU limits, node selectors and tolerations are as written, and the GPUs
keep one pod per node as on real 8-GPU nodes. Each pod template names `schedulerName: volcano`,
as the guide's job does (the operator, run with --gang-scheduler-name=volcano, would set it too).

    scripts/cluster.sh up --nodes 4 --operators && python3 -m unittest test/cluster/e2e_jobs.py -v
"""

import json
import unittest

from e2e_lib import (A100_GID_INDEX, A100_HCA, CAP_IPC_LOCK, NAMESPACE, PROBE, ClusterTest,
                     create, example_documents, get, has_cap, kubectl, parse_report, pod_log,
                     probe_container, wait_until)

# What each node's hardware gives (test/fixtures/gen_sysfs.py): its ACTIVE data ports and, on
# RoCE, the index of its RoCE v2 IPv4 GIDs.
IB_HDR8 = {"hca": "=" + ",".join(f"mlx5_{i}:1" for i in range(8)), "gid_index": None, "devices": 8}
NODES = {
    "a100-roce-0": {"hca": A100_HCA, "gid_index": A100_GID_INDEX, "devices": 8},
    "rocep-roce-1": {"hca": "=" + ",".join(f"rocep{b}s0f0:1" for b in range(1, 5)),
                     "gid_index": "3", "devices": 4},
    "ib-hdr8-2": IB_HDR8,
    "ib-hdr8-3": IB_HDR8,
}
GPU_PRODUCT = "NVIDIA-A100-SXM4-80GB"

# What torchrun's c10d rendezvous needs of the cluster, across nodes: a name that resolves to the
# leader's pod and its port. `serve PORT` answers every connection with the pod's hostname;
# `meet NAME FQDN PORT` prints the address FQDN resolves to and what the leader said on PORT of
# NAME. busybox's nslookup asks a name with a dot in it as it is, without the search list
# (glibc's resolver, torchrun's and nc's here, goes through it: ndots:5), and the cluster DNS
# answers SERVFAIL for names outside the cluster; so it is given the whole name. Both wait up to
# a minute: the leader's record exists once its pod has an address.
RENDEZVOUS = PROBE + r"""
echo "python_unbuffered=$PYTHONUNBUFFERED"
serve() { (while true; do echo "hello-from-$HOSTNAME" | nc -l -p "$1" >/dev/null 2>&1; done) & }
meet() {
  echo "master_addr=$1"
  for i in $(seq 60); do
    ip=$(nslookup "$2" 2>/dev/null | awk '/^Name:/ { n = 1 } n && /^Address/ { print $NF; exit }')
    [ -n "$ip" ] && break
    sleep 1
  done
  echo "master_ip=$ip"
  for i in $(seq 60); do
    said=$(nc -w 2 "$1" "$3" </dev/null 2>/dev/null)
    case "$said" in hello-from-*) echo "master_said=$said"; break ;; esac
    sleep 1
  done
}
namespace=$(cat /var/run/secrets/kubernetes.io/serviceaccount/namespace)
"""
# A PyTorchJob: the operator's MASTER_ADDR (the Master's Service) and MASTER_PORT.
MASTER_SCRIPT = RENDEZVOUS + r"""
echo "rank=$RANK"
serve "$MASTER_PORT"
"""
WORKER_SCRIPT = RENDEZVOUS + r"""
echo "rank=$RANK"
meet "$MASTER_ADDR" "$MASTER_ADDR.$namespace.svc.cluster.local" "$MASTER_PORT"
"""
# A JobSet's two pods share one template: pod 0 leads at examples/jobset-roce.yaml's rendezvous
# endpoint, its name under the JobSet's headless Service.
JOBSET_SCRIPT = RENDEZVOUS + r"""
echo "rank=$JOB_COMPLETION_INDEX"
leader="$JOBSET_NAME-workers-0-0.$JOBSET_NAME"
if [ "$JOB_COMPLETION_INDEX" = 0 ]; then
  serve 29500
else
  meet "$leader" "$leader.$namespace.svc.cluster.local" 29500
fi
"""


def advertise_fake_gpus():
    """Eight nvidia.com/gpu in every node's status and the A100 product label (module doc)."""
    for node in NODES:
        kubectl("patch", "node", node, "--subresource=status", "--type=json", "-p", json.dumps(
            [{"op": "add", "path": "/status/capacity/nvidia.com~1gpu", "value": "8"}]))
        kubectl("label", "node", node, "--overwrite", f"nvidia.com/gpu.product={GPU_PRODUCT}")
    wait_until("eight allocatable GPUs on every node", lambda: all(
        get("node", n)["status"]["allocatable"].get("nvidia.com/gpu") == "8" for n in NODES))


def runnable_job(example, name, scheduler="volcano"):
    """The PyTorchJob of examples/EXAMPLE, renamed NAME, in the test namespace, with only what
    this machine cannot give taken out (module doc), and the other documents of the file."""
    docs = example_documents(example)
    job = next(d for d in docs if d["kind"] == "PyTorchJob")
    job["metadata"]["name"] = name
    for role, replica in job["spec"]["pytorchReplicaSpecs"].items():
        spec = replica["template"]["spec"]
        spec["schedulerName"] = scheduler
        spec.pop("volumes", None)
        for container in spec["containers"]:
            probe_container(container, MASTER_SCRIPT if role == "Master" else WORKER_SCRIPT,
                            keep_gpus=True)
    return job, [d for d in docs if d is not job]


def runnable_jobset(example, name):
    """The JobSet of examples/EXAMPLE, renamed NAME, in the test namespace, made runnable as
    runnable_job makes a PyTorchJob."""
    jobset = next(d for d in example_documents(example) if d["kind"] == "JobSet")
    jobset["metadata"]["name"] = name
    for replicated in jobset["spec"]["replicatedJobs"]:
        spec = replicated["template"]["spec"]["template"]["spec"]
        spec.pop("volumes", None)
        for container in spec["containers"]:
            probe_container(container, JOBSET_SCRIPT, keep_gpus=True)
    return jobset


def job_pods(name):
    """{"master": pod, "worker": pod} of job NAME: a PyTorchJob's by the training operator's
    labels, a JobSet's by its label and the pod's completion index (0 is the master)."""
    pods = {}
    for pod in get("pods", namespace=NAMESPACE)["items"]:
        labels = pod["metadata"].get("labels", {})
        if labels.get("training.kubeflow.org/job-name") == name:
            pods[labels["training.kubeflow.org/replica-type"]] = pod
        elif labels.get("jobset.sigs.k8s.io/jobset-name") == name:
            index = labels.get("batch.kubernetes.io/job-completion-index")
            pods["master" if index == "0" else "worker"] = pod
    return pods


def run_job(job):
    """Creates the job (a PyTorchJob or a JobSet); returns {"master"|"worker": (pod, report)}
    once both containers printed their report."""
    name = job["metadata"]["name"]
    create(job)

    def reported():
        pods = job_pods(name)
        if set(pods) != {"master", "worker"}:
            return None
        for pod in pods.values():
            if pod["status"].get("phase") == "Failed":
                raise AssertionError(f"pod {pod['metadata']['name']} failed: {pod['status']}")
            if pod["status"].get("phase") != "Running" or \
                    "e2e-done" not in pod_log(pod["metadata"]["name"]):
                return None
        return pods
    pods = wait_until(f"job {name}'s two pods to report", reported, timeout=180, interval=1)
    return {role: (pod, parse_report(pod_log(pod["metadata"]["name"])))
            for role, pod in pods.items()}


def assert_rendezvous(test, pods, job_name):
    """The Worker resolved MASTER_ADDR to the Master pod's address and read from its port."""
    master, worker = pods["master"][0], pods["worker"][1]
    test.assertEqual(worker["master_addr"], f"{job_name}-master-0")
    test.assertEqual(worker["master_ip"], master["status"]["podIP"])
    test.assertEqual(worker.get("master_said"), f"hello-from-{master['metadata']['name']}")


class Jobs(ClusterTest):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        advertise_fake_gpus()

    def tearDown(self):
        kubectl("delete", "pytorchjobs,jobsets", "--all", "-n", NAMESPACE, "--wait=true",
                timeout=120)
        wait_until("the jobs' pods to go", lambda: not get("pods", namespace=NAMESPACE)["items"],
                   timeout=120)

    def assert_nodes_own_settings(self, pods, fabric_nodes, ib_timeout="22"):
        """Each pod on a node of FABRIC_NODES, the two on different nodes, each container with
        its own node's kube-rdma settings (and NCCL_IB_TIMEOUT, the policy's unless the job set
        its own)."""
        nodes = {role: pod["spec"]["nodeName"] for role, (pod, _) in pods.items()}
        self.assertNotEqual(nodes["master"], nodes["worker"], nodes)
        for role, (pod, report) in pods.items():
            node = NODES[nodes[role]]
            self.assertIn(nodes[role], fabric_nodes, nodes)
            with self.subTest(role=role, node=nodes[role]):
                self.assertTrue(has_cap(report["capeff"], CAP_IPC_LOCK), report["capeff"])
                self.assertIn("tmpfs", report["shm"])
                self.assertEqual(report["env"].get("NCCL_IB_HCA"), node["hca"])
                self.assertEqual(report["conf"].get("NCCL_IB_HCA"), node["hca"])
                self.assertEqual(report["conf"].get("NCCL_IB_GID_INDEX"), node["gid_index"])
                self.assertEqual(report["env"].get("NCCL_SOCKET_IFNAME"), "eth0")
                self.assertEqual(report["env"].get("NCCL_IB_TIMEOUT"), ib_timeout)
                self.assertEqual(len([d for d in report["dev"] if "uverbs" in d]),
                                 node["devices"], report["dev"])
                # The job's own value, and the training operator's rendezvous settings.
                self.assertEqual(report["python_unbuffered"], "1")
                self.assertEqual(report["rank"], "0" if role == "master" else "1")

    def assert_gang_scheduled(self, pods, job_name):
        """Both pods went through Volcano as one PodGroup of two."""
        group = get("podgroups.scheduling.volcano.sh", job_name, NAMESPACE)
        self.assertEqual(group["spec"]["minMember"], 2)
        self.assertEqual(group["status"].get("phase"), "Running", group["status"])
        for pod, _ in pods.values():
            self.assertEqual(pod["spec"]["schedulerName"], "volcano")
            self.assertEqual(pod["metadata"]["annotations"].get("scheduling.k8s.io/group-name"),
                             job_name)

    def test_every_node_offers_its_own_hardware(self):
        allocatable = {n: get("node", n)["status"]["allocatable"] for n in NODES}
        self.assertEqual(allocatable["a100-roce-0"].get("rdma/shared"), "128")
        self.assertEqual(allocatable["rocep-roce-1"].get("rdma/shared"), "64")
        for node in ("ib-hdr8-2", "ib-hdr8-3"):
            self.assertNotIn("rdma/shared", allocatable[node])
            self.assertTrue(int(allocatable[node].get("rdma/hca", "0")) > 0, allocatable[node])

    def test_the_guides_roce_job_on_two_nodes_of_different_hardware(self):
        """pytorchjob-roce.yaml, with two NCCL values of the user's own in both replicas (the
        guide's launcher sets NCCL_DEBUG=INFO; a timeout other than the policy's 22): they stay as
        written on both nodes."""
        job, _ = runnable_job("pytorchjob-roce.yaml", "bert-large-nccl")
        for replica in job["spec"]["pytorchReplicaSpecs"].values():
            replica["template"]["spec"]["containers"][0]["env"] += [
                {"name": "NCCL_DEBUG", "value": "INFO"}, {"name": "NCCL_IB_TIMEOUT", "value": "20"}]
        pods = run_job(job)
        self.assert_nodes_own_settings(pods, {"a100-roce-0", "rocep-roce-1"}, ib_timeout="20")
        for _, report in pods.values():
            self.assertEqual(report["env"].get("NCCL_DEBUG"), "INFO")
        self.assert_gang_scheduled(pods, "bert-large-nccl")
        assert_rendezvous(self, pods, "bert-large-nccl")

    def test_the_shorthand_job(self):
        job, _ = runnable_job("pytorchjob-shorthand.yaml", "bert-large-nccl-shorthand")
        pods = run_job(job)
        self.assert_nodes_own_settings(pods, {"a100-roce-0", "rocep-roce-1"})
        for pod, _ in pods.values():
            limits = pod["spec"]["containers"][0]["resources"]["limits"]
            self.assertEqual(limits.get("rdma/shared"), "1")
        self.assert_gang_scheduled(pods, "bert-large-nccl-shorthand")
        assert_rendezvous(self, pods, "bert-large-nccl-shorthand")

    def test_the_jobset(self):
        """examples/jobset-roce.yaml: JobSet's controller makes one Indexed Job of two pods and
        their headless Service, kube-scheduler places them (JobSet has no gang scheduler of its
        own); pod 1 reaches pod 0 by its DNS name under that Service."""
        pods = run_job(runnable_jobset("jobset-roce.yaml", "bert-large-nccl"))
        self.assert_nodes_own_settings(pods, {"a100-roce-0", "rocep-roce-1"})
        leader, follower = pods["master"][0], pods["worker"][1]
        self.assertEqual(follower["master_ip"], leader["status"]["podIP"])
        self.assertEqual(follower.get("master_said"), "hello-from-bert-large-nccl-workers-0-0")

    def test_the_infiniband_job(self):
        job, _ = runnable_job("pytorchjob-ib.yaml", "bert-large-nccl-ib")
        pods = run_job(job)
        self.assert_nodes_own_settings(pods, {"ib-hdr8-2", "ib-hdr8-3"})
        self.assert_gang_scheduled(pods, "bert-large-nccl-ib")
        assert_rendezvous(self, pods, "bert-large-nccl-ib")


if __name__ == "__main__":
    unittest.main()
