# SPDX-License-Identifier: BSD-3-Clause
"""An app's --json object as a script reads it: one object, verified, and a
time split whose parts are non-negative and add up to no more than the run.
Under --model, the network statistics must show the model's aggregation.

usage: check_json.py -- MPIRUN... APP OPTIONS  (--verify --json are added)"""
import json
import subprocess
import sys

PARTS = ("compute_s", "queue_s", "aggregation_s", "network_s")


def main():
    if len(sys.argv) < 3 or sys.argv[1] != "--":
        sys.exit(__doc__)
    out = subprocess.run(sys.argv[2:] + ["--verify", "--json"], check=True, stdout=subprocess.PIPE, text=True).stdout
    d = json.loads(out)
    if d.get("verified") is not True:
        sys.exit(f"FAILED: verified is {d.get('verified')!r}")
    split, seconds = d["time_split"], d["seconds"]
    parts = [split[k] for k in PARTS + ("host_s",)]
    # host_s is each rank's wall time less its parts: negative only if a part
    # were counted twice or outside the timed region.
    if min(parts) < -1e-6:
        sys.exit(f"FAILED: a negative part in {split}")
    if sum(parts) > seconds * (1 + 1e-6) + 1e-6:
        sys.exit(f"FAILED: the parts {split} add up to more than the slowest rank's {seconds} s")
    # The runtime counts since grain_init, the app over its run only.
    total = d["stats"]["total"]["time_split"]
    for k in PARTS:
        if total[k] < split[k] - 1e-6:
            sys.exit(f"FAILED: {k} is {split[k]} in the run but {total[k]} since grain_init")
    # Every message counts once, local, remote or direct, wherever it was
    # applied (kmer's active messages to the own rank run in the sender,
    # those to the node's other ranks on the direct path in the sender too).
    t = d["stats"]["total"]
    sent = {"gups": d.get("updates"), "kmer": d.get("kmers")}.get(d["app"])
    check_model(d, t)
    if "coprocessor" in d.get("model", ""):
        sent = None  # its messages never enter grain
    counted = t["local_messages"] + t["remote_messages"] + t["direct_messages"]
    if sent is not None and counted != sent:
        sys.exit(f"FAILED: {t['local_messages']} local + {t['remote_messages']} remote + "
                 f"{t['direct_messages']} direct messages, {sent} sent")
    ranks = d["stats"]["per_rank"]
    if len(ranks) != d["ranks"] or any(set(PARTS) - set(r["time_split"]) for r in ranks):
        sys.exit("FAILED: a rank without its time split")
    print(f"{d['app']} on {d['ranks']} ranks: {seconds:.3f} s = " +
          ", ".join(f"{k[:-2]} {split[k]:.4f}" for k in PARTS + ("host_s",)))


def check_model(d, t):
    """What each networking model (graphapps/common/model.h) does to the wire."""
    model, flushes, buffers = d.get("model"), t["flushes"], t["buffers_sent"]
    if model == "msg-per-lane" and buffers != t["remote_messages"]:
        sys.exit(f"FAILED: msg-per-lane sent {buffers} buffers for {t['remote_messages']} remote messages")
    if model == "coalesced" and (flushes["scope"] != buffers or flushes["full"] + flushes["timeout"] > 0):
        sys.exit(f"FAILED: coalesced buffers left for other reasons than their work-group send ended: {flushes}")
    if model in ("grain", "coalesced-aggregated") and flushes["scope"] != 0:
        sys.exit(f"FAILED: {model} aggregates across the device, yet {flushes['scope']} scope flushes")
    if model in ("coprocessor", "coprocessor-buffered"):
        if t["local_messages"] + t["remote_messages"] + t["direct_messages"] != 0:
            sys.exit("FAILED: the coprocessor model sent grain messages")
        if d["ranks"] > 1 and d["coprocessor"]["sends"] == 0:
            sys.exit("FAILED: the coprocessor model shipped no per-node queue")
    if model is not None:
        print(f"{model}: {buffers} buffers, flushes {flushes}, {t['remote_messages']} remote messages")


main()
