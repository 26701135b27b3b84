#!/usr/bin/env python3
"""What kube-rdma-nccl-hook adds to a container's creation, measured beside a reference in the same
run, alternating (BENCHMARKS.md, "Per-container GID index"). Needs root, podman, runc, busybox and
unshare, and a build tree with the hook and the fixtures.

1. The hook alone, as runc runs it (a mount namespace of its own, the OCI state on stdin), against
   the same `unshare -m -n` running /bin/true: on the A100 fixture for a pod on the cluster
   network only (its interfaces are a veth: no table is read, the common case), for a pod with a
   macvlan but no GID of its own there (every table read whole, the worst case), and on the
   roce-pod-network fixture for a macvlan pod (its own GID found, the file bind-mounted).
2. Whole containers under podman with runc, alternating: a plain busybox container (no RDMA), the
   same with the pool's CDI device and nccl.conf mount but the hook left out of the spec, and with
   the hook, in a network namespace holding the pod's addresses.

    sudo test/nccl_hook/bench_hook.py BUILD_DIR [--runs N] [--containers N]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def summary(name, values):
    ms = [v * 1000 for v in values]
    return {"what": name, "n": len(ms), "p50_ms": round(statistics.median(ms), 2),
            "p90_ms": round(percentile(ms, 90), 2), "p99_ms": round(percentile(ms, 99), 2)}


def timed(command):
    start = time.perf_counter()
    subprocess.run(command, shell=True, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


VETH_ONLY = "ip link add eth0 type veth peer name veth1"
MACVLAN = ("ip link add veth0 type veth peer name veth1 && "
           "ip link add link veth0 name net1 type macvlan mode bridge")


def hook_case(tmp, name, hook, fixture, pod_proc, node_conf, links):
    """A bundle whose config.json mounts node_conf at /etc/nccl.conf, in a network namespace with
    `links` and a pod's addresses (pod_proc); the shell command that runs the hook there as runc
    would, and the reference command."""
    bundle = os.path.join(tmp, name + "-bundle")
    conf = os.path.join(tmp, name + "-state", "nccl-node.conf")
    write(conf, node_conf)
    write(os.path.join(bundle, "rootfs", "etc", "nccl.conf"), "")
    write(os.path.join(bundle, "config.json"), json.dumps({
        "root": {"path": "rootfs"}, "process": {"env": []},
        "linux": {"namespaces": [{"type": "network"}]},
        "mounts": [{"destination": "/etc/nccl.conf", "source": conf}]}))
    state = os.path.join(tmp, name + "-state.json")
    write(state, json.dumps({"ociVersion": "1.1.0", "id": "bench", "pid": 1, "bundle": bundle}))
    target = os.path.join(bundle, "rootfs", "etc", "nccl.conf")
    setup = f"{links} && mount --bind {conf} {target} && mount -o remount,bind,ro {target}"
    # Timed from inside the namespace, so that unshare and the bind mount count for neither: the
    # child's fork, exec and run, with the OCI state on its stdin.
    probe = os.path.join(tmp, "probe.py")
    write(probe, "import subprocess, sys, time\n"
                 "start = time.perf_counter()\n"
                 "subprocess.run(sys.argv[2:], stdin=open(sys.argv[1]), check=True)\n"
                 "print(time.perf_counter() - start)\n")
    timed_run = f"python3 {probe} {state}"
    hook_cmd = (f"unshare -m -n --propagation private sh -c '{setup} && {timed_run} {hook} "
                f"--sysfs-root={fixture}/sys --proc-root={pod_proc}'")
    true_cmd = f"unshare -m -n --propagation private sh -c '{setup} && {timed_run} true'"
    return hook_cmd, true_cmd


def seconds(command):
    out = subprocess.run(command, shell=True, check=True, capture_output=True, text=True)
    return float(out.stdout.strip().splitlines()[-1])


def bench_hook(build, runs, tmp):
    hook = os.path.join(build, "nccl_hook", "kube-rdma-nccl-hook")
    fixtures = os.path.join(build, "fixtures")
    a100 = os.path.join(fixtures, "a100-roce")
    pods = os.path.join(fixtures, "roce-pod-network")
    a100_conf = ("NCCL_IB_HCA==" + ",".join(f"mlx5_{i}:1" for i in range(1, 9)) +
                 "\nNCCL_IB_DISABLE=0\nNCCL_IB_GID_INDEX=3\nNCCL_SOCKET_IFNAME==eth0\n")
    bridge = os.path.join(pods, "pods", "podbridge", "proc")
    cases = {
        "A100, 8 ports, pod on the cluster network only (its veth says so: no table read)":
            hook_case(tmp, "veth", hook, a100, bridge, a100_conf, VETH_ONLY),
        "A100, 8 ports, no GID of the pod's own behind a macvlan (every table read whole)":
            hook_case(tmp, "scan", hook, a100, bridge, a100_conf, MACVLAN),
        "roce-pod-network, 2 ports, macvlan pod (own GID 7, file bind-mounted)":
            hook_case(tmp, "own", hook, pods, os.path.join(pods, "pods", "podA", "proc"),
                      "NCCL_IB_HCA==mlx5_1:1,mlx5_2:1\nNCCL_IB_DISABLE=0\nNCCL_IB_GID_INDEX=3\n",
                      MACVLAN),
    }
    rows = []
    for name, (hook_cmd, true_cmd) in cases.items():
        hook_times, true_times = [], []
        for _ in range(runs):
            hook_times.append(seconds(hook_cmd))
            true_times.append(seconds(true_cmd))
        rows.append(summary("hook: " + name, hook_times))
        rows.append(summary("reference: /bin/true the same way", true_times))
    return rows


def bench_containers(build, count, tmp):
    hook = os.path.join(build, "nccl_hook", "kube-rdma-nccl-hook")
    fixture = os.path.join(build, "fixtures", "roce-pod-network")
    rootfs = os.path.join(tmp, "rootfs")
    os.makedirs(os.path.join(rootfs, "bin"))
    os.makedirs(os.path.join(rootfs, "etc"))
    shutil.copy(shutil.which("busybox"), os.path.join(rootfs, "bin", "busybox"))
    os.symlink("busybox", os.path.join(rootfs, "bin", "true"))
    conf = os.path.join(tmp, "state", "nccl-node.conf")
    write(conf, "NCCL_IB_HCA==mlx5_1:1,mlx5_2:1\nNCCL_IB_DISABLE=0\nNCCL_IB_GID_INDEX=3\n")
    # The device nodes, made here (no RDMA card): rdma_cm, and mlx5_1's uverbs node as the
    # fixture numbers it.
    rdma_cm = os.path.join(tmp, "dev", "rdma_cm")
    uverbs = os.path.join(tmp, "dev", "uverbs1")
    os.makedirs(os.path.dirname(rdma_cm))
    subprocess.run(["mknod", "-m", "666", rdma_cm, "c", "10", "58"], check=True)
    major, minor = open(os.path.join(fixture, "sys", "class", "infiniband_verbs", "uverbs1",
                                     "dev")).read().strip().split(":")
    subprocess.run(["mknod", "-m", "666", uverbs, "c", major, minor], check=True)
    kind = f"kube-rdma.io/bench_{os.getpid()}"
    hook_entry = {"hookName": "createContainer", "path": hook,
                  "args": ["kube-rdma-nccl-hook", "--container-path=/etc/nccl.conf",
                           f"--sysfs-root={fixture}/sys",
                           f"--log-file={os.path.join(tmp, 'nccl-hook.log')}"]}
    specs = {}
    for name, hooks in (("nohook", []), ("hook", [hook_entry])):
        spec = {"cdiVersion": "0.5.0", "kind": f"{kind}{name}",
                "devices": [{"name": "mlx5_1", "containerEdits": {"deviceNodes": [
                    {"path": "/dev/infiniband/uverbs1", "hostPath": uverbs,
                     "permissions": "rw"}]}}],
                "containerEdits": {"env": ["KUBE_RDMA_CDI=1"],
                                   "deviceNodes": [{"path": "/dev/infiniband/rdma_cm",
                                                    "hostPath": rdma_cm, "permissions": "rw"}],
                                   "hooks": hooks}}
        path = f"/var/run/cdi/kube-rdma.io-bench_{os.getpid()}{name}.json"
        os.makedirs("/var/run/cdi", exist_ok=True)
        write(path, json.dumps(spec))
        specs[name] = path
    netns = f"krdma-bench-{os.getpid()}"
    subprocess.run(f"ip netns add {netns} && ip -n {netns} link set lo up && "
                   f"ip -n {netns} link add lower0 type veth peer name lower1 && "
                   f"ip -n {netns} link set lower0 up && "
                   f"ip -n {netns} link add link lower0 name net1 type macvlan mode bridge && "
                   f"ip -n {netns} link set net1 up && "
                   f"ip -n {netns} addr add 198.51.100.31/24 dev net1 && "
                   f"ip -n {netns} addr add 198.51.101.31/24 dev net1", shell=True, check=True)
    # nofile and nproc below podman's defaults, which root without CAP_SYS_RESOURCE may not set.
    base = ("podman run --rm --runtime runc --ulimit nofile=1024:1024 --ulimit nproc=1024:1024"
            " --network ns:/var/run/netns/" + netns)
    run = f" --rootfs {rootfs} /bin/true"  # the root filesystem is podman's positional argument
    commands = {
        "plain container (no RDMA)": base + run,
        "RDMA container, CDI device and nccl.conf mount, no hook":
            base + f" -v {conf}:/etc/nccl.conf:ro --device {kind}nohook=mlx5_1" + run,
        "RDMA container with kube-rdma-nccl-hook (own GID 7, file bind-mounted)":
            base + f" -v {conf}:/etc/nccl.conf:ro --device {kind}hook=mlx5_1" + run,
    }
    try:
        for command in commands.values():  # warm podman's storage and caches
            timed(command)
        times = {name: [] for name in commands}
        for _ in range(count):
            for name, command in commands.items():
                times[name].append(timed(command))
        log = open(os.path.join(tmp, "nccl-hook.log")).read()
        if log.count("gid_index=7") < count:
            sys.exit("the hook did not resolve in every container: " + log[-500:])
        return [summary(name, values) for name, values in times.items()]
    finally:
        subprocess.run(["ip", "netns", "del", netns])
        for path in specs.values():
            os.remove(path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build")
    parser.add_argument("--runs", type=int, default=200, help="hook runs per case")
    parser.add_argument("--containers", type=int, default=40, help="containers per kind")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        rows = bench_hook(os.path.abspath(args.build), args.runs, tmp)
        if args.containers:
            rows += bench_containers(os.path.abspath(args.build), args.containers, tmp)
    for row in rows:
        print(json.dumps(row))


if __name__ == "__main__":
    main()
