"""Many DRA drivers against the real API server: what a fleet of rdma-dra-driver costs it.

Starts N rdma-dra-driver processes on this machine, each for a Node object of its own
(scale-node-000, ...; no kubelet: publishing needs none) and all reading one copy of the A100
fixture, against the cluster of scripts/cluster.sh. Then measures, from the API server's audit
log and the drivers' /proc:

- the time from the drivers' start until all N pools are published;
- requests per minute by verb while nothing changes (an idle window);
- a port going DOWN on every node at once: the time until all N slices say so, and the requests
  it cost;
- the drivers' RSS and CPU.

    scripts/cluster.sh up --driver dra
    /usr/bin/python3 test/cluster/scale_dra.py --program build/dra/rdma-dra-driver --drivers 200

Prints one table; BENCHMARKS.md records it. Not part of the test suites (it measures).
"""

import argparse
import collections
import json
import os
import shutil
import signal
import statistics
import subprocess
import tempfile
import time

import yaml
from e2e_lib import STATE, kubectl, requests_of

DRIVER = "rdma.kube-rdma.io"
PREFIX = "scale-node-"


def nodes(count):
    return [f"{PREFIX}{i:03d}" for i in range(count)]


def create_nodes(names):
    docs = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": n}} for n in names]
    kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(docs))


def scale_slices():
    listed = json.loads(kubectl("get", "resourceslices", "-o", "json"))["items"]
    return [s for s in listed if s["spec"]["driver"] == DRIVER
            and s["spec"].get("nodeName", "").startswith(PREFIX)]


def port_state(slice_, device):
    for d in slice_["spec"]["devices"]:
        attributes = d["attributes"]
        if attributes.get("rdmaDevice", {}).get("string") == device:
            return attributes.get("state", {}).get("string")
    return None


def wait_for(what, probe, timeout):
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if probe():
            return time.monotonic() - start
        time.sleep(0.5)
    raise SystemExit(f"scale_dra: timed out after {timeout} s waiting for {what}")


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def per_minute(sent, seconds):
    counts = collections.Counter(f"{verb} {resource}" for verb, resource in sent)
    return {k: n * 60 / seconds for k, n in sorted(counts.items())}


def set_state(sys_root, device, state):
    codes = {"DOWN": 1, "ACTIVE": 4}
    path = os.path.join(sys_root, "class", "infiniband", device, "ports", "1", "state")
    with open(path, "w") as f:
        f.write(f"{codes[state]}: {state}\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--program", required=True, help="the rdma-dra-driver to start")
    parser.add_argument("--drivers", type=int, default=200)
    parser.add_argument("--idle-seconds", type=int, default=120)
    args = parser.parse_args()

    work = tempfile.mkdtemp(prefix="kube-rdma-scale.")
    fixture = os.path.join(work, "fixture")
    shutil.copytree(os.path.join(STATE, "fixture"), fixture, symlinks=True)
    sys_root = os.path.join(fixture, "sys")
    names = nodes(args.drivers)
    create_nodes(names)
    processes = []
    log = open(os.path.join(work, "drivers.log"), "w")
    try:
        started = time.time()
        for name in names:
            d = os.path.join(work, name)
            os.makedirs(d)
            processes.append(subprocess.Popen(
                [args.program, "--node-name", name,
                 "--kubeconfig", os.path.join(STATE, "admin.kubeconfig"),
                 "--sysfs-root", sys_root, "--proc-root", os.path.join(fixture, "proc"),
                 "--dev-root", os.path.join(fixture, "dev"),
                 "--plugin-registry-dir", os.path.join(d, "registry"),
                 "--plugin-dir", os.path.join(d, "plugin"), "--cdi-dir", os.path.join(d, "cdi"),
                 "--state-dir", os.path.join(d, "state")],
                stdout=log, stderr=subprocess.STDOUT))
        wait_for(f"{args.drivers} published pools",
                 lambda: len(scale_slices()) >= args.drivers, 600)
        to_all = time.time() - started

        time.sleep(10)  # the last publications' watch events
        cpu_before = {p.pid: cpu_seconds(p.pid) for p in processes}
        idle_start = time.time()
        time.sleep(args.idle_seconds)
        idle_end = time.time()
        idle = per_minute(requests_of("rdma-dra-driver", idle_start, idle_end),
                          idle_end - idle_start)
        cpu_idle = [(cpu_seconds(p.pid) - cpu_before[p.pid]) / (idle_end - idle_start) * 100
                    for p in processes]
        rss = [rss_mib(p.pid) for p in processes]

        change_start = time.time()
        set_state(sys_root, "mlx5_3", "DOWN")
        changed = wait_for("mlx5_3 DOWN in every pool", lambda: all(
            port_state(s, "mlx5_3") == "DOWN" for s in scale_slices()), 300)
        time.sleep(5)
        change_end = time.time()
        during = requests_of("rdma-dra-driver", change_start, change_end)
        set_state(sys_root, "mlx5_3", "ACTIVE")

        dead = [p.pid for p in processes if p.poll() is not None]
        print(f"drivers: {args.drivers} (release build {args.program}), one node each")
        print(f"all pools published: {to_all:.1f} s after the first driver started")
        print(f"idle window {idle_end - idle_start:.0f} s, requests per minute, all drivers:")
        for key, rate in idle.items():
            print(f"  {key:32} {rate:8.1f}   ({rate / args.drivers:.3f} per driver)")
        if not idle:
            print("  (none)")
        print(f"a port DOWN on every node: all slices right after {changed:.1f} s; "
              f"requests in {change_end - change_start:.0f} s:")
        for key, n in sorted(collections.Counter(f"{v} {r}" for v, r in during).items()):
            print(f"  {key:32} {n:8d}   ({n / args.drivers:.2f} per driver)")
        print(f"driver RSS MiB: median {statistics.median(rss):.1f}, max {max(rss):.1f}")
        print(f"driver CPU at idle, % of a core: median {statistics.median(cpu_idle):.2f}, "
              f"max {max(cpu_idle):.2f}")
        print(f"drivers that exited: {len(dead)}")
    finally:
        for p in processes:
            p.send_signal(signal.SIGTERM)
        for p in processes:
            p.wait(timeout=30)
        # The garbage collector deletes their slices with them (ownerReference).
        kubectl("delete", "node", *names, "--wait=false", check=False)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
