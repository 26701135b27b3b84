"""How much each program asks of the API server while nothing changes: requests per minute by
user agent, verb and resource over an idle window, from kube-apiserver's audit log (every request,
with the caller's user and User-Agent; scripts/cluster.sh turns it on), cross-checked against the
API server's own apiserver_request_total counters for the resources kube-rdma touches.

    scripts/cluster.sh up --driver dra
    /usr/bin/python3 test/cluster/api_load.py --seconds 120

Prints one table; BENCHMARKS.md records it.
"""

import argparse
import collections
import os
import re
import time

from e2e_lib import STATE, audit_events, kubectl, rfc3339

KUBE_RDMA_AGENTS = ("rdma-dra-driver", "rdma-webhook", "kube-rdma")


def request_totals(resources):
    """apiserver_request_total summed by (verb, resource) for the named resources."""
    totals = collections.Counter()
    pattern = re.compile(r'^apiserver_request_total\{(.*)\} (\S+)$')
    for line in kubectl("get", "--raw", "/metrics").splitlines():
        m = pattern.match(line)
        if not m:
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(1)))
        if labels.get("resource") in resources:
            totals[(labels["verb"], labels["resource"])] += float(m.group(2))
    return totals


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=120, help="the idle window")
    args = parser.parse_args()
    resources = {"resourceslices", "resourceclaims", "resourceclaimtemplates", "nodes"}
    before = request_totals(resources)
    start = time.time()
    time.sleep(args.seconds)
    end = time.time()
    after = request_totals(resources)
    minutes = (end - start) / 60

    by_agent = collections.Counter()
    for e in audit_events(os.path.join(STATE, "logs", "audit.log"), rfc3339(start), rfc3339(end)):
        agent = e.get("userAgent", "").split("/")[0].split(" ")[0]
        if agent in KUBE_RDMA_AGENTS:
            ref = e.get("objectRef", {})
            by_agent[(agent, e["user"]["username"], e["verb"], ref.get("resource", ""))] += 1

    print(f"idle window: {end - start:.0f} s ({rfc3339(start)} .. {rfc3339(end)})")
    print(f"{'user agent':18} {'user':48} {'verb':8} {'resource':16} {'per minute':>10}")
    for (agent, user, verb, resource), n in sorted(by_agent.items()):
        print(f"{agent:18} {user:48} {verb:8} {resource:16} {n / minutes:10.1f}")
    if not by_agent:
        print("(no request from a kube-rdma program)")
    print("\napiserver_request_total, all callers (cross-check):")
    for key in sorted(set(after) | set(before)):
        delta = after[key] - before[key]
        if delta:
            print(f"  {key[0]:8} {key[1]:24} {delta / minutes:10.1f} per minute")


if __name__ == "__main__":
    main()
