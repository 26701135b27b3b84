"""Churn on two nodes of different hardware with both drivers (`scripts/cluster.sh up --driver
mixed --nodes a100,rocep`): the device plugin serves a100-roce-0, the DRA driver rocep-roce-1.

For KUBE_RDMA_CHURN_SECONDS (default 180; docs/faults.md has a 20-minute run) pods of three kinds
are created and deleted, at most LIVE at a time: `rdma/shared: 1` on the device plugin's node,
`rdma/shared: 1` on the DRA node (the scheduler makes it a claim of the class that names the
resource), and a pod with a claim of its own from a ResourceClaimTemplate. Meanwhile a fault is
injected every 10 to 30 s, at random: the device plugin or the DRA driver SIGKILLed (the kubelet
restarts its container), or a node's kubelet or containerd SIGKILLed and started again 1 to 5 s
later.

Every pod that runs prints what it got (devices, nccl.conf, environment); each is compared with
what was allocated to THAT pod: the kubelet's device checkpoint entry for its UID, or its claim's
allocation in the API. Then the faults stop, every pod left must run, all are deleted and must go,
one more pod of each kind must start and be right, and each node must hold the state of exactly
those pods: the kubelet's device-plugin and DRA checkpoints, the DRA driver's checkpoint, CDI
specs and nccl.conf files, and the cluster no other ResourceClaim.

KUBE_RDMA_CHURN_SEED repeats a run's draws (each run prints its seed): the faults and their times,
and the kind of each pod and which one goes; what the cluster does in between is its own.
"""

import calendar
import json
import os
import random
import subprocess
import threading
import time
import unittest

from e2e_lib import (A100_GID_INDEX, A100_HCA, NAMESPACE, PROBE, ClusterTest, cluster, create,
                     get, in_node, kubectl, parse_report, toolbox_pod, wait_until)

DURATION = int(os.environ.get("KUBE_RDMA_CHURN_SECONDS", "180"))
SEED = int(os.environ.get("KUBE_RDMA_CHURN_SEED", str(time.time_ns() % 2**32)))
PLUGIN_NODE, DRA_NODE = "a100-roce-0", "rocep-roce-1"
# nsenter's target for each node (the first shares the control plane's namespaces).
NODE_NAMESPACE = {PLUGIN_NODE: None, DRA_NODE: DRA_NODE}
LIVE = 6
# The DRA node's four ports, one per pod of a DRA kind.
DRA_PORTS = 4
SYSFS = "/run/kube-rdma-e2e/sys"
# Both fixtures put their RoCE v2 IPv4 GIDs at index 3, and these pods are on the cluster network
# alone: each container keeps the node's index.
GID_INDEX = A100_GID_INDEX
DRIVER = "rdma.kube-rdma.io"
# How long a pod may take to run, or to go once deleted, after the faults stopped.
SETTLE = 180
# How long the nodes may take to drop what they hold for pods that are gone (see leaks).
LEAKS_SETTLE = 150

CLAIM_TEMPLATE = {
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
    "metadata": {"name": "one-port", "namespace": NAMESPACE},
    "spec": {"spec": {"devices": {"requests": [{"name": "nic", "exactly": {
        "deviceClassName": "roce.rdma.kube-rdma.io"}}]}}}}


def churn_pod(name, kind):
    """A PROBE pod of KIND: plugin (rdma/shared on the device plugin's node), by-name
    (rdma/shared on the DRA node) or claim (a claim from CLAIM_TEMPLATE)."""
    pod = toolbox_pod(name, PROBE, limits=None if kind == "claim" else {"rdma/shared": "1"})
    pod["metadata"]["labels"] = {"churn-kind": kind}
    spec = pod["spec"]
    spec["nodeSelector"] = {"kubernetes.io/hostname": PLUGIN_NODE if kind == "plugin" else DRA_NODE}
    if kind == "claim":
        spec["containers"][0]["resources"] = {"claims": [{"name": "nic"}]}
        spec["resourceClaims"] = [{"name": "nic", "resourceClaimTemplateName": "one-port"}]
    return pod


def node_file(node, path):
    run = in_node("cat", path, node=NODE_NAMESPACE[node])
    return run.stdout if run.returncode == 0 else None


def node_listing(node, directory):
    run = in_node("ls", "-A", directory, node=NODE_NAMESPACE[node])
    return sorted(run.stdout.split()) if run.returncode == 0 else []


def kubelet_checkpoint(node, name):
    """The Data of one of the kubelet's checkpoint files (JSON, the DRA one's Data a string)."""
    text = node_file(node, f"/var/lib/kubelet/{name}")
    if text is None:
        return {}
    data = json.loads(text)["Data"]
    return json.loads(data) if isinstance(data, str) else data


def device_plugin_entries():
    """The kubelet's device-plugin checkpoint: pod UID -> resources it holds devices of."""
    entries = {}
    data = kubelet_checkpoint(PLUGIN_NODE, "device-plugins/kubelet_internal_checkpoint")
    for entry in data.get("PodDeviceEntries") or []:
        entries.setdefault(entry["PodUID"], set()).add(entry["ResourceName"])
    return entries


def kubelet_claims():
    """The claim UIDs in the DRA node's kubelet checkpoint."""
    data = kubelet_checkpoint(DRA_NODE, "dra_manager_state")
    return {c["ClaimUID"] for c in data.get("ClaimInfoStateList") or []}


def driver_state():
    """What the DRA driver keeps on its node: the claim UIDs of its checkpoint, its CDI specs and
    its nccl.conf files (the claim UIDs their names carry), and any other file there."""
    text = node_file(DRA_NODE, "/var/run/kube-rdma/dra/dra-checkpoint.json")
    recorded = set(json.loads(text)["claims"]) if text else set()
    specs, confs, others = set(), set(), []
    for name in node_listing(DRA_NODE, "/var/run/cdi"):
        if name.startswith(f"{DRIVER}-claim_") and name.endswith(".json"):
            specs.add(name[len(f"{DRIVER}-claim_"):-len(".json")])
        else:
            others.append(f"/var/run/cdi/{name}")
    for name in node_listing(DRA_NODE, "/var/run/kube-rdma/dra"):
        if name.startswith("nccl-claim-") and name.endswith(".conf"):
            confs.add(name[len("nccl-claim-"):-len(".conf")])
        elif name != "dra-checkpoint.json":
            others.append(f"/var/run/kube-rdma/dra/{name}")
    return {"checkpoint": recorded, "cdi": specs, "conf": confs, "others": others}


def uverbs_of(node):
    """HCA name -> its /dev/infiniband/uverbsN on NODE, from the node's sysfs."""
    out = {}
    for name in node_listing(node, f"{SYSFS}/class/infiniband_verbs"):
        ibdev = node_file(node, f"{SYSFS}/class/infiniband_verbs/{name}/ibdev")
        if ibdev:
            out[ibdev.strip()] = f"/dev/infiniband/{name}"
    return out


class Churn(ClusterTest):
    def setUp(self):
        # One generator per thread, so that a seed repeats each one's draws.
        self.random = random.Random(SEED)
        self.fault_random = random.Random(SEED + 1)
        print(f"\nchurn: seed {SEED}, {DURATION} s, at most {LIVE} pods", flush=True)
        self.uverbs = {node: uverbs_of(node) for node in NODE_NAMESPACE}
        self.slices = {d["name"]: d for s in get("resourceslices")["items"]
                       if s["spec"]["driver"] == DRIVER for d in s["spec"]["devices"]}
        create(CLAIM_TEMPLATE)
        self.faults = {}
        self.wrong = []
        self.checked = set()
        self.started = {}   # pod name -> seconds from creation to its report
        self.deleted = {}   # pod name -> when it was deleted
        self.gone = {}      # pod name -> seconds from deletion to gone
        self.refused = {}   # pod name -> why the kubelet failed it
        self.created = 0

    # --- what each pod must have -----------------------------------------------------------

    def expected_ports(self, pod):
        """(node, the HCA:port list it was allocated) for the pod, from the kubelet's checkpoint
        or its claim's allocation; None while that is not known yet."""
        kind = pod["metadata"]["labels"]["churn-kind"]
        if kind == "plugin":
            if "rdma/shared" not in device_plugin_entries().get(pod["metadata"]["uid"], ()):
                return None
            # A shared ID grants every usable port of the pool: the fixture's eight.
            return PLUGIN_NODE, A100_HCA
        status = pod["status"]
        claim_name = (status.get("extendedResourceClaimStatus", {}).get("resourceClaimName")
                      if kind == "by-name" else
                      next((c["resourceClaimName"] for c in status.get("resourceClaimStatuses", [])
                            if c.get("resourceClaimName")), None))
        if not claim_name:
            return None
        claim = get("resourceclaim", claim_name, NAMESPACE)
        owners = [o["uid"] for o in claim["metadata"].get("ownerReferences", [])]
        if pod["metadata"]["uid"] not in owners:
            self.wrong.append(f"{pod['metadata']['name']}: its claim {claim_name} is owned by "
                              f"{owners}")
        results = claim["status"]["allocation"]["devices"]["results"]
        ports = []
        for result in results:
            attributes = self.slices[result["device"]]["attributes"]
            ports.append(f"{attributes['rdmaDevice']['string']}:{attributes['port']['int']}")
        return DRA_NODE, "=" + ",".join(ports), claim_name

    def check(self, pod, report):
        name = pod["metadata"]["name"]
        kind = pod["metadata"]["labels"]["churn-kind"]
        expected = self.expected_ports(pod)
        if expected is None:
            self.wrong.append(f"{name}: runs with no allocation of its own on record")
            return
        node, hca = expected[0], expected[1]
        problems = []
        if pod["spec"]["nodeName"] != node:
            problems.append(f"on {pod['spec']['nodeName']}, not {node}")
        if report["conf"].get("NCCL_IB_HCA") != hca:
            problems.append(f"nccl.conf NCCL_IB_HCA {report['conf'].get('NCCL_IB_HCA')!r}, "
                            f"allocated {hca!r}")
        if report["conf"].get("NCCL_IB_GID_INDEX") != GID_INDEX:
            problems.append(f"GID index {report['conf'].get('NCCL_IB_GID_INDEX')!r}")
        devices = sorted(self.uverbs[node][port.split(":")[0]]
                         for port in hca.lstrip("=").split(","))
        got = sorted(d for d in report["dev"] if "uverbs" in d)
        if got != devices:
            problems.append(f"devices {got}, allocated {devices}")
        if kind != "plugin":
            claim = report["env"].get("KUBE_RDMA_CLAIM")
            if claim != f"{NAMESPACE}/{expected[2]}":
                problems.append(f"KUBE_RDMA_CLAIM {claim!r}, its claim {expected[2]}")
        if problems:
            self.wrong.append(f"{name} ({kind}): " + "; ".join(problems))

    # --- the churn ---------------------------------------------------------------------------

    def pods(self):
        return {p["metadata"]["name"]: p for p in get("pods", namespace=NAMESPACE)["items"]}

    def create_pod(self, live):
        dra_live = sum(1 for p in live.values()
                       if p["metadata"]["labels"]["churn-kind"] != "plugin")
        kinds = ["plugin"] + (["by-name", "claim"] if dra_live < DRA_PORTS else [])
        kind = self.random.choice(kinds)
        self.created += 1
        name = f"{kind}-{self.created}"
        create(churn_pod(name, kind))

    def observe(self, pods):
        """Checks each pod that printed its report; deletes the ones the kubelet failed."""
        for name, pod in pods.items():
            if name in self.deleted or name in self.checked:
                continue
            phase = pod["status"].get("phase")
            if phase == "Failed":
                self.refused[name] = pod["status"].get("reason") or pod["status"].get("message")
                self.delete(name)
            elif phase == "Running":
                log = kubectl("logs", "-n", NAMESPACE, name, check=False)
                if log.returncode == 0 and "e2e-done" in log.stdout:
                    self.checked.add(name)
                    created = pod["metadata"]["creationTimestamp"]
                    self.started[name] = time.time() - calendar.timegm(
                        time.strptime(created, "%Y-%m-%dT%H:%M:%SZ"))
                    self.check(pod, parse_report(log.stdout))

    def delete(self, name):
        kubectl("delete", "pod", "-n", NAMESPACE, name, "--wait=false")
        self.deleted[name] = time.monotonic()

    def note_gone(self, pods):
        for name, when in list(self.deleted.items()):
            if name not in pods and when is not None:
                self.gone[name] = time.monotonic() - when
                self.deleted[name] = None

    def inject_faults(self, stop):
        kinds = ["device-plugin", "dra-driver", f"kubelet@{PLUGIN_NODE}", f"kubelet@{DRA_NODE}",
                 f"containerd@{PLUGIN_NODE}", f"containerd@{DRA_NODE}"]
        while not stop.wait(self.fault_random.uniform(10, 30)):
            fault = self.fault_random.choice(kinds)
            self.faults[fault] = self.faults.get(fault, 0) + 1
            print(f"churn: {time.strftime('%H:%M:%S')} kill {fault}", flush=True)
            if fault in ("device-plugin", "dra-driver"):
                subprocess.run(["pkill", "-KILL", "-f", f"^/usr/bin/rdma-{fault} "], check=False)
            else:
                component = fault.split("@")[0]
                node = fault.split("@")[1]
                target = component + ("" if node == PLUGIN_NODE else f"@{node}")
                cluster("kill", target)
                time.sleep(self.fault_random.uniform(1, 5))
                cluster("start", target)

    def test_churn(self):
        stop = threading.Event()
        faults = threading.Thread(target=self.inject_faults, args=(stop,))
        faults.start()
        deadline = time.monotonic() + DURATION
        try:
            while time.monotonic() < deadline:
                pods = self.pods()
                self.note_gone(pods)
                self.observe(pods)
                live = {n: p for n, p in pods.items() if n not in self.deleted}
                if len(live) < LIVE:
                    self.create_pod(live)
                else:
                    ready = [n for n in live if n in self.checked]
                    if ready:
                        self.delete(self.random.choice(ready))
                time.sleep(1)
        finally:
            stop.set()
            faults.join()
        self.settle_and_sweep()

    def settle_and_sweep(self):
        # Every pod still there must run and be right, once the faults stopped.
        for name in self.pods():
            if name not in self.deleted:
                self.wait_checked(name)
        kubectl("delete", "pods", "-n", NAMESPACE, "--all", "--wait=false")
        stuck = []
        try:
            wait_until("every churn pod to go", lambda: not self.pods(), SETTLE)
        except AssertionError:
            stuck = sorted(self.pods())
        self.note_gone({})
        # Fresh pods of each kind, once the nodes have settled: served right, and the nodes'
        # state is theirs alone (the kubelet drops the device entries of pods that are gone when
        # it next allocates).
        finals = {}
        for kind in ("plugin", "by-name", "claim"):
            self.created += 1
            name = f"final-{kind}"
            finals[name] = create(churn_pod(name, kind))["metadata"]["uid"]
        for name in finals:
            self.wait_checked(name)
        # A claim whose pod went while the DRA driver was down is unprepared by the kubelet's
        # DRA manager, which retries for pods that are gone once a minute: two rounds of it.
        final_claims = {c["metadata"]["uid"] for c in get("resourceclaims", namespace=NAMESPACE)[
            "items"] if any(o["uid"] in finals.values()
                            for o in c["metadata"].get("ownerReferences", []))}
        since = time.monotonic()
        leaks = []
        try:
            wait_until("the nodes to hold the state of the live pods alone",
                       lambda: not self.leaks(finals["final-plugin"], final_claims),
                       LEAKS_SETTLE, interval=2)
        except AssertionError:
            leaks = self.leaks(finals["final-plugin"], final_claims)
        held = "still held state of pods that are gone" if leaks else "held the live pods' alone"
        print(f"churn: the nodes {held} {time.monotonic() - since:.0f} s after the final pods ran",
              flush=True)
        pods = self.pods()
        self.report(stuck, leaks, pods)
        self.assertEqual(self.wrong, [], "pods with what was not theirs")
        self.assertEqual(stuck, [], "pods that did not go")
        self.assertEqual(leaks, [], "state of pods that are gone")

    @staticmethod
    def leaks(plugin_pod, claims):
        """What the nodes hold of pods other than the live PLUGIN_POD and the pods of CLAIMS."""
        leaks = []
        entries = device_plugin_entries()
        if set(entries) != {plugin_pod}:
            leaks.append(f"kubelet device checkpoint holds pods {sorted(entries)}, "
                         f"the live one is {plugin_pod}")
        in_api = {c["metadata"]["uid"] for c in get("resourceclaims", namespace=NAMESPACE)["items"]}
        if in_api != claims:
            leaks.append(f"ResourceClaims {sorted(in_api - claims)} of no live pod")
        prepared = kubelet_claims()
        if prepared != claims:
            leaks.append(f"kubelet DRA checkpoint claims {sorted(prepared)}, live {sorted(claims)}")
        state = driver_state()
        for key in ("checkpoint", "cdi", "conf"):
            if state[key] != claims:
                leaks.append(f"DRA driver {key}: {sorted(state[key])}, live {sorted(claims)}")
        if state["others"]:
            leaks.append(f"other files: {state['others']}")
        return leaks

    def wait_checked(self, name):
        def done():
            pods = self.pods()
            self.observe({name: pods[name]})
            return name in self.checked
        try:
            wait_until(f"pod {name} to run and report", done, SETTLE, interval=2)
        except AssertionError as e:
            self.wrong.append(f"{name}: stuck ({e})")

    def report(self, stuck, leaks, pods):
        def quantiles(values):
            if not values:
                return "none"
            values = sorted(values)
            return (f"{len(values)}: median {values[len(values) // 2]:.1f} s, "
                    f"p90 {values[len(values) * 9 // 10]:.1f} s, max {values[-1]:.1f} s")
        print(f"churn: seed {SEED}; {self.created} pods created, {len(self.checked)} ran and were "
              f"checked, {len(self.refused)} failed by the kubelet "
              f"({sorted(set(self.refused.values()))})", flush=True)
        print(f"churn: faults {dict(sorted(self.faults.items()))}", flush=True)
        def slowest(times):
            return ", ".join(f"{name} {seconds:.0f} s" for name, seconds in
                             sorted(times.items(), key=lambda item: -item[1])[:3])
        # Both to the churn loop's resolution, about a second.
        print(f"churn: created to report {quantiles(list(self.started.values()))} (slowest: "
              f"{slowest(self.started)}); deleted to gone {quantiles(list(self.gone.values()))} "
              f"(slowest: {slowest(self.gone)})", flush=True)
        print(f"churn: wrong {len(self.wrong)}, stuck {len(stuck)}, leaks {len(leaks)}; "
              f"pods left {sorted(pods)}", flush=True)
        for line in self.wrong + leaks:
            print(f"churn:   {line}", flush=True)


if __name__ == "__main__":
    unittest.main()
