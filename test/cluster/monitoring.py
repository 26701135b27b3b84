"""The shipped monitoring (manifests/monitoring/) against a real Prometheus on the test cluster:
Prometheus (built by scripts/cluster-build.sh) runs in the node's network namespace, as a Prometheus
inside the cluster would, finds kube-rdma's pods through the real API server with the shipped
scrape job, scrapes them, and evaluates the shipped alert rules; the shipped dashboard's queries
are put to it. The device plugin's suite runs it (e2e_device_plugin.py imports the class).

Real: the API server's pod list, the kubelet's PodResources answer behind kube_rdma_pod_port_info,
the scrape, PromQL. Not real: the traffic. The node has no HCA, so the test writes the fixture's
counter files as the kernel would update them while the pod runs, and checks that the documented
query turns them into that pod's traffic.
"""

import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
from urllib.parse import urlencode

import yaml

from e2e_lib import (NAMESPACE, PROBE, REPO, STATE, ClusterTest, in_node, in_node_command,
                     kubectl, pod_events, run_probe, toolbox_pod, wait_until)

MONITORING = os.path.join(REPO, "manifests", "monitoring")
PROMETHEUS_ADDRESS = "127.0.0.1:19090"  # in the node's network namespace only
COUNTERS = os.path.join(STATE, "fixture", "sys", "class", "infiniband")
# The saturating PortCounters the alert watches, with their maxima (docs/plugin.md).
SATURATING = {"symbol_error": 65535, "port_rcv_errors": 65535,
              "port_rcv_remote_physical_errors": 65535, "port_xmit_discards": 65535,
              "link_error_recovery": 255, "link_downed": 255, "local_link_integrity_errors": 15,
              "excessive_buffer_overrun_errors": 15}


def prometheus_config(directory):
    """prometheus.yml: the shipped job and rules; the API server reached with the cluster's admin
    kubeconfig (a Prometheus in a pod would use its service account); scraped every 2 s so the
    test does not wait minutes (the timeout is the interval: an ASan build's scrape, which asks the
    kubelet's PodResources too, can take more than a second)."""
    with open(os.path.join(MONITORING, "scrape-config.yaml")) as f:
        jobs = yaml.safe_load(f)
    for job in jobs:
        for sd in job["kubernetes_sd_configs"]:
            sd["kubeconfig_file"] = os.path.join(STATE, "admin.kubeconfig")
    config = {"global": {"scrape_interval": "2s", "scrape_timeout": "2s",
                         "evaluation_interval": "1s"},
              "rule_files": [os.path.join(MONITORING, "alerts.yaml")],
              "scrape_configs": jobs}
    path = os.path.join(directory, "prometheus.yml")
    with open(path, "w") as f:
        yaml.safe_dump(config, f)
    return path


class Prometheus:
    """Prometheus, started in the node's network namespace."""

    def __init__(self):
        with open(os.path.join(STATE, "bin")) as f:  # the cluster's programs
            self.bin = f.read().strip()
        self.dir = tempfile.mkdtemp(prefix="kube-rdma-prometheus.")
        config = prometheus_config(self.dir)
        check = subprocess.run([os.path.join(self.bin, "promtool"), "check", "config", config],
                               capture_output=True, text=True, check=False)
        if check.returncode != 0:
            raise AssertionError(f"promtool check config: {check.stdout}{check.stderr}")
        self.log = open(os.path.join(STATE, "logs", "prometheus.log"), "w")
        self.process = subprocess.Popen(in_node_command(
            os.path.join(self.bin, "prometheus"), f"--config.file={config}",
            f"--storage.tsdb.path={self.dir}/data", f"--web.listen-address={PROMETHEUS_ADDRESS}"),
            stdout=self.log, stderr=subprocess.STDOUT)
        wait_until("Prometheus ready", lambda: self.get("/-/ready") is not None, timeout=60)

    def get(self, path):
        """The body of GET path, or None when Prometheus does not answer 200 (yet)."""
        run = in_node("/usr/bin/python3", "-c",
                      "import sys, urllib.request\n"
                      "sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=5)"
                      ".read().decode())", f"http://{PROMETHEUS_ADDRESS}{path}")
        return run.stdout if run.returncode == 0 else None

    def api(self, path, **params):
        body = self.get(f"/api/v1/{path}?{urlencode(params)}")
        if body is None:
            raise AssertionError(f"Prometheus refused /api/v1/{path} {params}")
        answer = json.loads(body)
        if answer["status"] != "success":
            raise AssertionError(f"{path} {params}: {answer}")
        return answer["data"]

    def query(self, expr):
        return self.api("query", query=expr)["result"]

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=30)
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


class PortTraffic:
    """Adds `words` to port_xmit_data and port_rcv_data (4-byte words, as the kernel counts them)
    of the given ports every second, until stopped."""

    def __init__(self, ports, words):
        self.ports, self.words = ports, words
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stopping.wait(1.0):
            for device, port in self.ports:
                for name in ("port_xmit_data", "port_rcv_data"):
                    path = os.path.join(COUNTERS, device, "ports", port, "counters", name)
                    with open(path) as f:
                        value = int(f.read())
                    with open(path, "w") as f:
                        f.write(f"{value + self.words}\n")

    def stop(self):
        self.stopping.set()
        self.thread.join()


def saturated_ports():
    """(device, port) of the fixture whose saturating counters sit at their maximum, read from
    the files themselves."""
    found = set()
    for device in os.listdir(COUNTERS):
        ports = os.path.join(COUNTERS, device, "ports")
        for port in os.listdir(ports):
            for name, maximum in SATURATING.items():
                path = os.path.join(ports, port, "counters", name)
                if os.path.exists(path):
                    with open(path) as f:
                        if int(f.read()) >= maximum:
                            found.add((device, port))
    return found


def dashboard_panels():
    """{panel title: [expr]} of the shipped Grafana dashboard, its variables as Grafana
    substitutes them for "All" nodes and for this test's 2-second scrape interval
    ($__rate_interval is at least four scrape intervals; five here)."""
    with open(os.path.join(MONITORING, "grafana-dashboard.json")) as f:
        dashboard = json.load(f)
    return {panel["title"]: [target["expr"].replace('"$node"', '".*"')
                             .replace("$__rate_interval", "10s")
                             for target in panel["targets"]]
            for panel in dashboard["panels"] if panel["type"] != "row"}


class Monitoring(ClusterTest):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.prometheus = Prometheus()

    @classmethod
    def tearDownClass(cls):
        cls.prometheus.stop()
        super().tearDownClass()

    def test_rules_files_agree(self):
        """The PrometheusRule for the Prometheus Operator holds alerts.yaml's groups."""
        with open(os.path.join(MONITORING, "alerts.yaml")) as f:
            rules = yaml.safe_load(f)
        with open(os.path.join(MONITORING, "prometheusrule.yaml")) as f:
            self.assertEqual(yaml.safe_load(f)["spec"], rules)

    def test_the_shipped_job_finds_every_kube_rdma_pod(self):
        pods = {p["metadata"]["name"] for p in json.loads(kubectl(
            "get", "pods", "-n", "kube-rdma", "-o", "json"))["items"]}

        def scraped():
            up = self.prometheus.query('up{job="kube-rdma"} == 1')
            return {r["metric"]["pod"] for r in up} == pods and up
        up = wait_until("every kube-rdma pod scraped", scraped, timeout=60)
        self.assertEqual({r["metric"]["node"] for r in up}, {"a100-roce-0"})

    def test_granted_rdma_not_used(self):
        """A pod holding ports that carry nothing: KubeRdmaPodNotUsingRdma pending (the rule's
        `for` is 15 minutes), and the device plugin's own flag after the test config's 20 s
        (unusedRdmaAfterSeconds): a Warning event on the pod, where `kubectl describe pod` finds
        it (its UID), and kube_rdma_pod_rdma_unused. Both go once the ports carry traffic."""
        ports = [(f"mlx5_{i}", "1") for i in range(1, 9)]  # the shared pool's
        moving = self.prometheus.query(
            'rate(kube_rdma_port_xmit_data_bytes_total{device=~"mlx5_[1-8]"}[5m]) > 0')
        self.assertEqual(moving, [], "this test needs the pool's counters flat for 5 minutes: "
                         "it must run before the tests that write traffic")
        pod = toolbox_pod("idle", PROBE, limits={"rdma/shared": "1"})
        admitted, _ = run_probe(pod)
        flagged = ('ALERTS{alertname="KubeRdmaPodNotUsingRdma",alertstate="pending",'
                   f'namespace="{NAMESPACE}",pod="idle"}}')
        unused = f'kube_rdma_pod_rdma_unused{{namespace="{NAMESPACE}",pod="idle"}} == 1'
        try:
            alert = wait_until("the idle pod flagged", lambda: self.prometheus.query(flagged),
                               timeout=60)
            self.assertEqual(alert[0]["metric"]["node"], "a100-roce-0")
            [event] = wait_until("the plugin's Warning event on the idle pod",
                                 lambda: pod_events("idle", "RdmaGrantedNotUsed"), timeout=60)
            self.assertEqual(event["type"], "Warning")
            self.assertEqual(event["involvedObject"]["uid"], admitted["metadata"]["uid"])
            self.assertEqual(event["source"], {"component": "rdma-device-plugin",
                                               "host": "a100-roce-0"})
            self.assertIn("mlx5_1:1, mlx5_2:1,", event["message"])
            self.assertIn("for 20 s", event["message"])
            wait_until("kube_rdma_pod_rdma_unused of the idle pod",
                       lambda: self.prometheus.query(unused), timeout=30)
            traffic = PortTraffic(ports, words=262144)
            try:
                wait_until("the flags gone once the ports carry traffic",
                           lambda: not self.prometheus.query(flagged)
                           and not self.prometheus.query(unused), timeout=60)
            finally:
                traffic.stop()
            self.assertEqual(len(pod_events("idle", "RdmaGrantedNotUsed")), 1)
        finally:
            kubectl("delete", "pod", "idle", "-n", NAMESPACE, "--wait=true")

    def test_pod_traffic_from_the_documented_query(self):
        pod = toolbox_pod("traffic", PROBE, limits={"rdma/shared": "1"})
        run_probe(pod)
        # The shared pool's eight ports, each carrying 1 MiB/s each way while the pod runs.
        traffic = PortTraffic([(f"mlx5_{i}", "1") for i in range(1, 9)], words=262144)
        try:
            [sent] = dashboard_panels()["RDMA sent per pod"]

            def pod_rate():
                for sample in self.prometheus.query(sent):
                    if sample["metric"] == {"namespace": NAMESPACE, "pod": "traffic"}:
                        return float(sample["value"][1])
                return None
            # 8 ports x 1 MiB/s x 8 bits, once the rate's window holds only the traffic; a rate
            # over 2-second scrapes of a counter bumped once a second by a thread is only about
            # right.
            expected = 8 * 8 * 1048576
            bits = wait_until("the pod's traffic in Prometheus",
                              lambda: (pod_rate() or 0) > expected / 2 and pod_rate(), timeout=60)
            self.assertLess(bits, expected * 1.5)
        finally:
            traffic.stop()
            kubectl("delete", "pod", "traffic", "-n", NAMESPACE, "--wait=true")
        wait_until("the pod gone from kube_rdma_pod_port_info", lambda: not self.prometheus.query(
            f'kube_rdma_pod_port_info{{namespace="{NAMESPACE}",pod="traffic"}}'), timeout=60)

    def test_saturated_counters_alert(self):
        expected = saturated_ports()
        self.assertTrue(expected, "the fixture should have a saturated counter (gen_sysfs.py)")

        def firing():
            alerts = self.prometheus.query(
                'ALERTS{alertname="KubeRdmaPortErrorCounterSaturated",alertstate="firing"}')
            found = {(a["metric"]["device"], a["metric"]["port"]) for a in alerts}
            return found == expected and found
        wait_until("KubeRdmaPortErrorCounterSaturated firing for exactly the saturated ports",
                   firing, timeout=60)

    def scraped_every_pod(self):
        pods = json.loads(kubectl("get", "pods", "-n", "kube-rdma", "-o", "json"))["items"]
        wait_until("a scrape of every kube-rdma pod", lambda: len(self.prometheus.query(
            'up{job="kube-rdma"} == 1')) == len(pods), timeout=60)

    def test_alert_rules_loaded_and_healthy(self):
        self.scraped_every_pod()

        def evaluated():
            rules = [r for g in self.prometheus.api("rules")["groups"] for r in g["rules"]]
            # An unevaluated rule's lastEvaluation is the zero time, year 0001.
            return all(r.get("lastEvaluation", "").startswith("2") for r in rules) and rules
        rules = wait_until("every rule evaluated", evaluated, timeout=60)
        with open(os.path.join(MONITORING, "alerts.yaml")) as f:
            shipped = [r["alert"] for g in yaml.safe_load(f)["groups"] for r in g["rules"]]
        self.assertEqual([r["name"] for r in rules], shipped)
        self.assertEqual({r["name"]: r["health"] for r in rules if r["health"] != "ok"}, {})
        # Every series name the rules read is one kube-rdma serves from the start (a misspelt
        # name would evaluate fine and never fire; a counter that appears at 1 is missed by
        # increase()), except the per-pod info, there only while a pod holds a port, and the DRA
        # driver's, which does not run in this suite.
        served = set(self.prometheus.api("label/__name__/values"))
        named = {word for r in rules for word in _metric_names(r["query"])}
        elsewhere = {"kube_rdma_pod_port_info", "kube_rdma_dra_prepare_claims_total",
                     "kube_rdma_dra_pod_resources_errors_total"}
        self.assertEqual(named - served - elsewhere, set())

    def test_dashboard_queries(self):
        """Every query of the dashboard is valid PromQL to a real Prometheus, and those of the
        series this node has return data."""
        self.scraped_every_pod()
        # A DRA panel on a device-plugin node, pod panels with no pod holding a port, and
        # checks that are all ok. Waited for: a rate needs two scrapes in its window.
        expected = sorted({"RDMA sent per pod", "RDMA received per pod", "Ports held by pods",
                           "Pods holding RDMA ports without traffic",
                           "Claim preparations (DRA)", "Node checks not ok"})

        def empty_panels():
            empty = sorted(title for title, queries in dashboard_panels().items()
                           if not any([self.prometheus.query(expr) for expr in queries]))
            if empty != expected:
                raise AssertionError(f"panels without data: {empty}, expected {expected}")
            return True
        wait_until("the panels with data to show it", empty_panels, timeout=60)


def _metric_names(expr):
    return set(re.findall(r"\b(?:kube_rdma|rdma_webhook)_[a-z0-9_]+", expr))
