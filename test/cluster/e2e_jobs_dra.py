"""End-to-end: the guide's job through Dynamic Resource Allocation on two nodes (scripts/cluster.sh
up --driver dra --install helm --nodes a100,a100 --operators): examples/dra/pytorchjob-roce.yaml,
whose pods each claim eight GPU+NIC pairs on shared PCIe roots, made into its Master and Worker by
the real Kubeflow training operator, scheduled by kube-scheduler on two A100 nodes, each pod's
claim allocated from ITS node's devices and its container's nccl.conf naming them.

What this machine cannot give is taken out as in e2e_jobs.py (the probe instead of torchrun, no
CPU and memory requests, no dataset volume). The GPUs are the fake GPU DRA driver's, eight on each
node, four on each of the fixture's two PCIe roots, so every pair can be made and each pod needs a
whole node. The pod templates name `schedulerName: default-scheduler`: the training operator runs
with Volcano as its gang scheduler, and Volcano 1.10 allocates no ResourceClaims; the operator
still makes the job's PodGroup, which Volcano admits, and leaves the named scheduler in place.

    scripts/cluster.sh up --driver dra --install helm --nodes a100,a100 --operators &&
        python3 -m unittest test/cluster/e2e_jobs_dra.py -v
"""

import unittest

import yaml

from e2e_jobs import GPU_PRODUCT, assert_rendezvous, run_job, runnable_job
from e2e_lib import (A100_GID_INDEX, A100_HCA, CAP_IPC_LOCK, GPU_CLASS, NAMESPACE, ClusterTest,
                     cluster, create, get, has_cap, kubectl, wait_until)

NODES = ["a100-roce-0", "a100-roce-1"]
# The fixture's NICs: mlx5_1..4 on pci0000:00, mlx5_5..8 on pci0000:80.
GPUS = [f"gpu-{i}=pci0000:{'00' if i < 4 else '80'}" for i in range(8)]


def start_fake_gpus_on_every_node():
    for node in NODES:
        cluster("start", f"fake-gpu-driver@{node}", *[a for g in GPUS for a in ("--gpu", g)])
        kubectl("label", "node", node, "--overwrite", f"nvidia.com/gpu.product={GPU_PRODUCT}")
    wait_until("the fake GPU driver's slice of every node", lambda: sorted(
        s["spec"]["nodeName"] for s in get("resourceslices")["items"]
        if s["spec"]["driver"] == "gpu.nvidia.com") == NODES)


class DraJobs(ClusterTest):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        start_fake_gpus_on_every_node()
        kubectl("apply", "-f", "-", stdin=yaml.safe_dump(GPU_CLASS))

    @classmethod
    def tearDownClass(cls):
        for node in NODES:
            cluster("stop", f"fake-gpu-driver@{node}")
        super().tearDownClass()

    def test_the_guides_dra_job_on_two_nodes(self):
        job, others = runnable_job("dra/pytorchjob-roce.yaml", "bert-large-nccl-dra",
                                   scheduler="default-scheduler")
        for doc in others:  # the claim template
            create(doc)
        pods = run_job(job)
        nodes = {role: pod["spec"]["nodeName"] for role, (pod, _) in pods.items()}
        self.assertEqual(sorted(nodes.values()), NODES)
        for role, (pod, report) in pods.items():
            with self.subTest(role=role, node=nodes[role]):
                claim_name = pod["status"]["resourceClaimStatuses"][0]["resourceClaimName"]
                claim = get("resourceclaim", claim_name, NAMESPACE)
                results = claim["status"]["allocation"]["devices"]["results"]
                self.assertEqual(len(results), 16)
                # Every GPU and every NIC of the claim is the pod's own node's.
                self.assertEqual({r["pool"] for r in results}, {nodes[role]}, results)
                self.assertTrue(has_cap(report["capeff"], CAP_IPC_LOCK), report["capeff"])
                self.assertEqual(report["conf"].get("NCCL_IB_HCA"), A100_HCA)
                self.assertEqual(report["conf"].get("NCCL_IB_GID_INDEX"), A100_GID_INDEX)
                self.assertEqual(len([d for d in report["dev"] if "uverbs" in d]), 8)
                self.assertEqual(report["python_unbuffered"], "1")
        assert_rendezvous(self, pods, "bert-large-nccl-dra")


if __name__ == "__main__":
    unittest.main()
