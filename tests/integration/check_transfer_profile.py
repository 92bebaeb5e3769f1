#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Which settings a region takes, field by field (grain.h, grain_region_desc_t):
its own, the GRAIN_TRANSFER_* settings, the transfer profile's line for
(device, app), the defaults.

    check_transfer_profile.py PROFILE -- MPIRUN... build/bin/jacobi

writes PROFILE with a line for this machine's device and jacobi, runs
jacobi with several settings and requires each run's agent, chunk size,
threads and "profiled" to be what the rules give."""
import json
import os
import subprocess
import sys


def run(command, *options, env=None):
    out = subprocess.run(command + ["--n", "34", "--iterations", "2", "--json", "--verify", *options],
                         check=True, stdout=subprocess.PIPE, text=True, env=env).stdout
    report = json.loads(out.strip().splitlines()[-1])
    if report.get("verified") is False:
        sys.exit(f"FAILED: {options} did not verify")
    return report


def main():
    if len(sys.argv) < 4 or sys.argv[2] != "--":
        sys.exit(__doc__)
    profile, command = sys.argv[1], sys.argv[3:]
    env = dict(os.environ, GRAIN_TRANSFER_PROFILE=profile)
    env.pop("GRAIN_TRANSFER_AGENT", None)
    with open(profile, "w") as f:
        f.write("# a line for another device, and one for another app, which must not apply\n"
                "some other device\tjacobi\tbulk\t999\t3\n")
    device = run(command, env=env)["device"]
    with open(profile, "a") as f:
        f.write(f"{device}\tpagerank\tbulk\t777\t4\n{device}\tjacobi\tinline\t4096\t2\t0.1 s, a note\n")
    cases = [
        ("nothing set: the profile's line", [], {}, ("inline", 4096, 2, True)),
        ("another agent: the profile's chunk and threads were not measured with it", ["--agent", "host"], {},
         ("host", 256 << 10, 1, False)),
        ("the profile's agent named: its chunk and threads", ["--agent", "inline"], {}, ("inline", 4096, 2, True)),
        ("a chunk size set: the profile's agent and threads", ["--chunk-size", "64"], {}, ("inline", 64, 2, True)),
        ("GRAIN_TRANSFER_AGENT set", [], {"GRAIN_TRANSFER_AGENT": "bulk"}, ("bulk", 256 << 10, 1, False)),
        ("GRAIN_TRANSFER_PROFILE=none", [], {"GRAIN_TRANSFER_PROFILE": "none"}, ("host", 256 << 10, 1, False)),
    ]
    for what, options, extra, want in cases:
        r = run(command, *options, env=dict(env, **extra))
        got = (r["agent"], r["chunk_bytes"], r["transfer_threads"], r["profiled"])
        if got != want:
            sys.exit(f"FAILED: {what}: agent, chunk, threads, profiled are {got}, want {want}")
        print(f"{what}: {got}")


if __name__ == "__main__":
    main()
