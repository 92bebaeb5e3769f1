#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""k-mer and extension counts against jellyfish, a counter grain did not write.

    check_kmer.py READS K -- COMMAND...

runs COMMAND (an mpirun line ending in build/bin/kmer) with --reads READS
--k K --out FILE, and counts READS with `jellyfish count -C` twice: k-mers,
and (k+1)-mers.  Every canonical k-mer must have jellyfish's count, and its
count of base b on the right must be jellyfish's count of the (k+1)-mer
KMER+b (canonical), on the left that of b+KMER: the (k+1)-mers are exactly
the k-mers seen with a neighbour.  A (k+1)-mer that is its own reverse
complement holds the k-mer twice (once each way), so it counts twice.
READS may be .xz (decompressed first)."""
import os
import subprocess
import sys
import tempfile

COMPLEMENT = str.maketrans("ACGT", "TGCA")


def reverse_complement(s):
    return s.translate(COMPLEMENT)[::-1]


def canonical(s):
    return min(s, reverse_complement(s))


def sides(longer, w):
    """The side events the (k+1)-mer w stands for."""
    return longer.get(canonical(w), 0) * (2 if w == reverse_complement(w) else 1)


def jellyfish(reads, k, tmp):
    db = os.path.join(tmp, f"{k}.jf")
    subprocess.run(["jellyfish", "count", "-m", str(k), "-C", "-s", "4M", "-t", "2", "-o", db, reads], check=True)
    out = subprocess.run(["jellyfish", "dump", "-c", db], check=True, capture_output=True, text=True).stdout
    return {kmer: int(count) for kmer, count in (line.split() for line in out.splitlines())}


if len(sys.argv) < 5 or sys.argv[3] != "--":
    sys.exit(__doc__)
reads, k, command = sys.argv[1], int(sys.argv[2]), sys.argv[4:]
with tempfile.TemporaryDirectory() as tmp:
    if reads.endswith(".xz"):
        plain = os.path.join(tmp, "reads.fa")
        with open(plain, "wb") as f:
            subprocess.run(["xz", "-dc", reads], check=True, stdout=f)
        reads = plain
    out = os.path.join(tmp, "kmers.txt")
    subprocess.run(command + ["--reads", reads, "--k", str(k), "--out", out], check=True)
    ours = {}
    for line in open(out):
        fields = line.split()
        if fields[0] in ours:
            sys.exit(f"FAILED: {fields[0]} written twice")
        ours[fields[0]] = [int(x) for x in fields[1:]]
    counts, longer = jellyfish(reads, k, tmp), jellyfish(reads, k + 1, tmp)
if set(ours) != set(counts):
    sys.exit(f"FAILED: {len(ours)} k-mers written, jellyfish counts {len(counts)} "
             f"({len(set(ours) - set(counts))} only here, {len(set(counts) - set(ours))} only there)")
wrong = 0
for kmer, (count, *seen) in ours.items():
    expect = [counts[kmer]] + [sides(longer, b + kmer) for b in "ACGT"] + [sides(longer, kmer + b) for b in "ACGT"]
    if [count, *seen] != expect:
        wrong += 1
        if wrong <= 3:
            print(f"{kmer}: {count} {seen}, jellyfish {expect}")
print(f"{sys.argv[1]}: k={k}, {len(ours)} distinct k-mers, {sum(v[0] for v in ours.values())} in all, "
      f"{wrong} with counts other than jellyfish's")
if wrong:
    sys.exit("FAILED")
