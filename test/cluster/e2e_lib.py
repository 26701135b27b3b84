"""What the end-to-end tests share: kubectl against the cluster of scripts/cluster.sh, pods of the
toolbox image, and waiting for the cluster to agree.

Everything goes through the real kubectl and the real API server; nothing here knows how
kube-rdma computes a value.
"""

import copy
import json
import os
import subprocess
import time
import unittest

import yaml

NAMESPACE = "e2e"
NODE = "a100-roce-0"
TOOLBOX = "localhost/kube-rdma/toolbox:e2e"
# The A100 fixture: eight RoCE data ports, all ACTIVE, each with its RoCE v2 IPv4 GID at index 3
# (test/fixtures/gen_sysfs.py); mlx5_0 is the management NIC (eth0, the default route).
A100_HCA = "=" + ",".join(f"mlx5_{i}:1" for i in range(1, 9))
A100_GID_INDEX = "3"
# What test/cluster gives its pod on the rails (a macvlan of rdma-data0 per rail, through Multus)
# and where the fixture (a100-roce-pod-rails) has the kernel put those addresses in each data
# port's table: after the node's 2/3 and another pod's 4/5.
A100_RAIL_POD_IPS = [f"25.11.128.{11 + 32 * i}" for i in range(8)]
A100_RAIL_POD_GID_INDEX = "7"
# The fixture's other pod on every rail, at index 5 of each data port's table.
A100_OTHER_POD_IPS = [f"25.11.128.{10 + 32 * i}" for i in range(8)]
STATE = os.environ.get("KUBE_RDMA_CLUSTER_DIR", "/var/tmp/kube-rdma-cluster")
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_tool(program, *args, stdin=None, check=True, timeout=120):
    """Runs one of the cluster's programs (kubectl, helm: built side by side); returns its
    stdout. A failure raises with the program's own message."""
    run = subprocess.run([program, *args], input=stdin, capture_output=True, text=True,
                         timeout=timeout)
    if check and run.returncode != 0:
        raise AssertionError(f"{program} {' '.join(args)} failed: {run.stderr.strip()}")
    return run.stdout if check else run


def kubectl(*args, **options):
    return run_tool("kubectl", *args, **options)


def helm(*args, **options):
    return run_tool("helm", *args, **options)


def get(kind, name="", namespace=None):
    args = ["get", kind] + ([name] if name else []) + ["-o", "json"]
    if namespace:
        args += ["-n", namespace]
    return json.loads(kubectl(*args))


def apply(obj):
    return json.loads(kubectl("apply", "-o", "json", "-f", "-", stdin=json.dumps(obj)))


def create(obj, dry_run=False):
    args = ["create", "-o", "json", "-f", "-"] + (["--dry-run=server"] if dry_run else [])
    return json.loads(kubectl(*args, stdin=json.dumps(obj)))


def wait_until(what, probe, timeout=60, interval=0.5):
    """Calls probe until it returns something true; returns that. Fails naming `what`."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = probe()
            if last:
                return last
        except (AssertionError, subprocess.TimeoutExpired, KeyError, json.JSONDecodeError) as e:
            last = e
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout} s waiting for {what} (last: {last!r})")


def cluster(*args):
    """scripts/cluster.sh COMMAND (start/stop one component)."""
    subprocess.run([os.path.join(REPO, "scripts", "cluster.sh"), *args], check=True)


# The fake GPU driver's class (test/cluster/fake-gpu-driver: driver gpu.nvidia.com).
GPU_CLASS = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
             "metadata": {"name": "gpu.nvidia.com"},
             "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com'"}}]}}


def start_fake_gpus(gpus, node=None):
    """The fake GPU driver with GPUs NAME=PCIE_ROOT on the first node or NODE, once its slice is
    published (a pod created before would wait for the scheduler's next retry)."""
    cluster("start", "fake-gpu-driver" + (f"@{node}" if node else ""),
            *[a for g in gpus for a in ("--gpu", g)])
    wait_until("the fake GPU driver's slice", lambda: [
        s for s in get("resourceslices")["items"] if s["spec"]["driver"] == "gpu.nvidia.com"])


def in_node_command(*command, node=None):
    """The command, to run in the namespaces of the first node (the control plane's) or of NODE
    (the node's view of its files and its network)."""
    with open(os.path.join(STATE, "pids", "namespace" + (f"@{node}" if node else ""))) as f:
        holder = f.read().strip()
    return ["nsenter", "--target", holder, "--mount", "--net", "--", *command]


def in_node(*command, node=None):
    """Runs a command in the namespaces of the first node or of NODE."""
    return subprocess.run(in_node_command(*command, node=node), capture_output=True, text=True,
                          check=False)


def rail_networks(rails=range(1, 9), addresses=None, name="rail"):
    """NetworkAttachmentDefinitions <name>N in the test namespace, as the network operator's
    shared RoCE setup gives pods their rails: a macvlan of the node's rdma-data0 (its stand-in for
    the data port of mlx5_N) with the address addresses[N] (default A100_RAIL_POD_IPS[N-1]), so
    one pod at a time. Returns the pod annotation that names them for Multus."""
    addresses = addresses or {rail: A100_RAIL_POD_IPS[rail - 1] for rail in rails}
    for rail in rails:
        config = {"cniVersion": "1.0.0", "name": f"{name}{rail}", "type": "macvlan",
                  "master": "rdma-data0", "mode": "bridge",
                  "ipam": {"type": "static", "addresses": [{"address": f"{addresses[rail]}/27"}]}}
        apply({"apiVersion": "k8s.cni.cncf.io/v1", "kind": "NetworkAttachmentDefinition",
               "metadata": {"name": f"{name}{rail}", "namespace": NAMESPACE},
               "spec": {"config": json.dumps(config)}})
    return {"k8s.v1.cni.cncf.io/networks": ",".join(f"{name}{rail}" for rail in rails)}


def daemon_metrics(daemon_prefix):
    """The /metrics of the kube-rdma pod whose name starts with `daemon_prefix`, through the API
    server's pod proxy as an operator reads it."""
    pod = next(p["metadata"]["name"] for p in get("pods", namespace="kube-rdma")["items"]
               if p["metadata"]["name"].startswith(daemon_prefix)
               and p["status"].get("phase") == "Running")
    return kubectl("get", "--raw", f"/api/v1/namespaces/kube-rdma/pods/{pod}:9436/proxy/metrics")


# What each container got at its creation, counted by the NCCL hook and by the NRI plugin.
CONTAINER_OUTCOME_FAMILIES = ("kube_rdma_nccl_hook_containers_total",
                              "kube_rdma_nri_containers_total")


def container_outcomes(daemon_prefix):
    """{family: {outcome: count}} of CONTAINER_OUTCOME_FAMILIES, from the daemon's /metrics."""
    text = daemon_metrics(daemon_prefix)
    counts = {}
    for family in CONTAINER_OUTCOME_FAMILIES:
        prefix = family + '{outcome="'
        counts[family] = {line[len(prefix):line.index('"', len(prefix))]: float(line.split()[-1])
                          for line in text.splitlines() if line.startswith(prefix)}
    return counts


def container_outcome_changes(daemon_prefix, before):
    """What each family of container_outcomes gained since `before`: the outcomes that moved."""
    after = container_outcomes(daemon_prefix)
    return {family: {k: n - before[family][k] for k, n in after[family].items()
                     if n != before[family][k]} for family in after}


def pod_events(pod_name, reason):
    """The events of pod `pod_name` of the test namespace with `reason`, from the API server."""
    return json.loads(kubectl("get", "events", "-n", NAMESPACE, "-o", "json", "--field-selector",
                              f"involvedObject.name={pod_name},reason={reason}"))["items"]


def attached_networks(pod_name):
    """{interface: [addresses]} of the pod's networks besides eth0, as Multus reported them."""
    annotations = get("pod", pod_name, NAMESPACE)["metadata"]["annotations"]
    status = json.loads(annotations["k8s.v1.cni.cncf.io/network-status"])
    return {s["interface"]: s["ips"] for s in status if s.get("interface") != "eth0"}


# After a probe: the marker run_probe waits for, then the container stays with its devices.
STAY = "\necho e2e-done; exec sleep 3600"


def probe_container(container, script=None, keep_gpus=False):
    """An example's container made to run SCRIPT (the PROBE) in the toolbox image instead of
    training: its name and env stay, and of its resources only what kube-rdma grants (rdma/
    limits, DRA claims) and, with keep_gpus, the nvidia.com/gpu limit; the CPUs, memory, GPUs,
    dataset mounts and arguments this small node lacks go."""
    resources = container.get("resources", {})
    kept = {}
    limits = {k: v for k, v in resources.get("limits", {}).items()
              if k.startswith("rdma/") or (keep_gpus and k == "nvidia.com/gpu")}
    if limits:
        kept["limits"] = limits
    if "claims" in resources:
        kept["claims"] = resources["claims"]
    for key in ("args", "volumeMounts"):
        container.pop(key, None)
    container.update(image=TOOLBOX, imagePullPolicy="Never",
                     command=["sh", "-c", (script or PROBE) + STAY], resources=kept)


def runnable_here(spec):
    """A pod spec of the examples made runnable on the test node: no GPU node selector,
    tolerations or dataset volumes, every container a probe, run once."""
    for key in ("nodeSelector", "tolerations", "volumes"):
        spec.pop(key, None)
    spec["restartPolicy"] = "Never"
    for container in spec["containers"]:
        probe_container(container)


def example_documents(example, namespace=NAMESPACE):
    """The documents of examples/EXAMPLE, moved into `namespace`."""
    with open(os.path.join(REPO, "examples", example)) as f:
        docs = [d for d in yaml.safe_load_all(f) if d]
    for d in docs:
        d["metadata"]["namespace"] = namespace
    return docs


def pytorchjob_worker(example, name, namespace=NAMESPACE):
    """The Worker pod the training operator makes from the PyTorchJob in examples/EXAMPLE, exactly
    as written, and the file's other documents (claim templates), all in `namespace`."""
    docs = example_documents(example, namespace)
    job = next(d for d in docs if d["kind"] == "PyTorchJob")
    others = [d for d in docs if d is not job]
    spec = copy.deepcopy(job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"])
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "namespace": namespace}, "spec": spec}
    return pod, others


def toolbox_pod(name, script, *, limits=None, annotations=None, env=None, security=None,
                claims=None, sleep=True):
    """A pod of the toolbox image running `script` and then sleeping, so that its log can be
    read while it keeps its devices."""
    container = {
        "name": "main",
        "image": TOOLBOX,
        "imagePullPolicy": "Never",
        "command": ["sh", "-c", script + (STAY if sleep else "")],
    }
    if limits:
        container["resources"] = {"limits": limits}
    if env:
        container["env"] = [{"name": k, "value": v} for k, v in env.items()]
    if security:
        container["securityContext"] = security
    spec = {"containers": [container], "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 0}
    if claims:
        container.setdefault("resources", {})["claims"] = [{"name": c} for c in claims]
        spec["resourceClaims"] = [{"name": c, "resourceClaimName": c} for c in claims]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE, "annotations": annotations or {}},
        "spec": spec,
    }


# What every probe pod prints, one fact a line, read back by parse_report.
PROBE = r"""
echo "capeff=$(grep CapEff /proc/self/status | cut -f2)"
echo "memlock=$(ulimit -l)"
env | grep -E '^(NCCL_|KUBE_RDMA_)' | sed 's/^/env:/'
if [ -r /etc/nccl.conf ]; then sed 's/^/conf:/' /etc/nccl.conf; fi
for d in /dev/infiniband/*; do [ -c "$d" ] && echo "dev=$d"; done
grep ' /dev/shm ' /proc/mounts | sed 's/^/shm=/'
echo "shm_kib=$(df -k /dev/shm | awk 'NR == 2 { print $2 }')"
"""


def parse_report(log):
    """The PROBE's lines as {"env": {...}, "conf": {...}, "dev": [...], key: value}."""
    out = {"env": {}, "conf": {}, "dev": []}
    for line in log.splitlines():
        if line.startswith("env:") or line.startswith("conf:"):
            kind, _, rest = line.partition(":")
            name, _, value = rest.partition("=")
            out[kind][name] = value
        elif line.startswith("dev="):
            out["dev"].append(line[4:])
        elif "=" in line:
            key, _, value = line.partition("=")
            out[key] = value
    return out


def pod_log(name, namespace=NAMESPACE):
    return kubectl("logs", "-n", namespace, name)


def run_probe(pod, timeout=90):
    """Creates the pod, waits until its PROBE ran, returns (the admitted pod, the report)."""
    admitted = create(pod)
    name, namespace = pod["metadata"]["name"], pod["metadata"]["namespace"]
    wait_until(f"pod {name} to print its report",
               lambda: "e2e-done" in pod_log(name, namespace) or
               phase(name, namespace) == "Failed", timeout)
    if phase(name, namespace) == "Failed":
        raise AssertionError(f"pod {name} failed: {get('pod', name, namespace)['status']}")
    return admitted, parse_report(pod_log(name, namespace))


def phase(name, namespace=NAMESPACE):
    return get("pod", name, namespace)["status"].get("phase")


def has_cap(capeff_hex, bit):
    return (int(capeff_hex, 16) >> bit) & 1 == 1


CAP_IPC_LOCK = 14
CAP_SYS_RESOURCE = 24


def expected_memlock():
    """What the memlock hook gives a container here, as `ulimit -l` prints it: unlimited where
    the runtime may raise the hard limit (CAP_SYS_RESOURCE), else the soft limit raised to the
    hard one, 8 MiB (scripts/cluster.sh starts containerd with 64 KiB soft, 8 MiB hard)."""
    with open("/proc/self/status") as f:
        eff = next(line.split()[1] for line in f if line.startswith("CapEff:"))
    return "unlimited" if has_cap(eff, CAP_SYS_RESOURCE) else "8192"


class ClusterTest(unittest.TestCase):
    """Makes the test namespace fresh for each test class and deletes it afterwards."""

    @classmethod
    def setUpClass(cls):
        kubectl("delete", "namespace", NAMESPACE, "--ignore-not-found", "--wait=true",
                timeout=180)
        kubectl("create", "namespace", NAMESPACE)
        # The namespace's default service account must exist before a pod is created.
        wait_until("the default service account",
                   lambda: kubectl("get", "serviceaccount", "default", "-n", NAMESPACE,
                                   check=False).returncode == 0)

    @classmethod
    def tearDownClass(cls):
        kubectl("delete", "namespace", NAMESPACE, "--ignore-not-found", "--wait=false")
        # kube-rdma's own containers must have lived within the manifests' memory limits.
        for pod in get("pods", namespace="kube-rdma")["items"]:
            for status in pod["status"].get("containerStatuses", []):
                last = status.get("lastState", {}).get("terminated", {})
                if last.get("reason") == "OOMKilled":
                    raise AssertionError(f"{pod['metadata']['name']}/{status['name']} was "
                                         f"OOM-killed at {last.get('finishedAt')}")


def set_port_state(device, port, state):
    """Rewrites a fixture port's state file in place, as the kernel's attribute changes (the
    plugin and the driver read it through the bind mount of the fixture's sysfs)."""
    codes = {"DOWN": 1, "INIT": 2, "ARMED": 3, "ACTIVE": 4}
    path = os.path.join(STATE, "fixture", "sys", "class", "infiniband", device, "ports", str(port),
                        "state")
    with open(path, "w") as f:
        f.write(f"{codes[state]}: {state}\n")


def restore_ports():
    for i in range(1, 9):
        set_port_state(f"mlx5_{i}", 1, "ACTIVE")


def rfc3339(t):
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t % 1 * 1e6):06d}Z"


def audit_events(path, since, until):
    with open(path) as f:
        for line in f:
            event = json.loads(line)
            stamp = event.get("stageTimestamp", "")
            if since <= stamp < until and event.get("stage") == "ResponseComplete":
                yield event


def requests_of(user_agent, since, until):
    """(verb, resource) of every request the program sent between two time.time() stamps, from
    the API server's audit log."""
    return [(e["verb"], e.get("objectRef", {}).get("resource", ""))
            for e in audit_events(os.path.join(STATE, "logs", "audit.log"), rfc3339(since),
                                  rfc3339(until))
            if e.get("userAgent", "").split("/")[0].split(" ")[0] == user_agent]
