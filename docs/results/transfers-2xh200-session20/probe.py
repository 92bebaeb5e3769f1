#!/usr/bin/env python3
"""Interleaved rounds of app runs. argv: ROUNDS CSV; stdin lines: label|ENV=V;...|command line.
Prints per-config medians of seconds, producer, drain, others, checksum, and EXP stderr lines."""
import json, os, shlex, statistics, subprocess, sys
rounds, csvp = int(sys.argv[1]), sys.argv[2]
cfgs = [l.rstrip("\n").split("|", 2) for l in sys.stdin if l.strip() and not l.startswith("#")]
rows = []
with open(csvp, "w") as f:
    f.write("round,label,seconds,producer,drain,others,checksum,exp\n")
    for rd in range(rounds):
        for label, envs, cmd in cfgs:
            env = dict(os.environ)
            for kv in filter(None, envs.split(";")):
                k, v = kv.split("=", 1); env[k] = v
            p = subprocess.run(shlex.split(cmd), env=env, capture_output=True, text=True, timeout=300)
            js = [l for l in p.stdout.splitlines() if l.startswith("{")]
            exp = " / ".join(l.split("EXP ", 1)[1] for l in p.stderr.splitlines() if "EXP " in l)
            if p.returncode or not js:
                print(f"FAIL {label} rc={p.returncode}\n{p.stderr[-1500:]}", flush=True); continue
            j = json.loads(js[-1]); es = j.get("end_split", {})
            r = (rd, label, j["seconds"], es.get("producer_wait_s", 0), es.get("drain_s", 0), es.get("others_s", 0), j.get("checksum"), exp)
            rows.append(r); f.write(",".join(str(x) for x in r) + "\n"); f.flush()
            print(f"r{rd} {label:28s} {j['seconds']:.4f} prod {r[3]*1e3:7.1f} drain {r[4]*1e3:7.1f} others {r[5]*1e3:7.1f} ck {r[6]} {exp}", flush=True)
print("== medians")
for label, _, _ in cfgs:
    rs = [r for r in rows if r[1] == label]
    if rs:
        m = lambda i: statistics.median(r[i] for r in rs)
        print(f"{label:28s} n={len(rs)} s {m(2):.4f} prod {m(3)*1e3:.1f} drain {m(4)*1e3:.1f} others {m(5)*1e3:.1f} d+o {(m(4)+m(5))*1e3:.1f}")
