# SPDX-License-Identifier: BSD-3-Clause
"""What the benchmark drivers share: running one app and reading its JSON
report, the median run, matplotlib when it is there, and the progress line."""
import json
import os
import subprocess
import sys
import time


def app_error(stderr, app):
    """The app's own sentence from a failed run's stderr, not mpirun's banner."""
    lines = [x.strip() for x in stderr.splitlines() if x.strip().strip("-")]
    for wanted in (lambda x: x.startswith("grain[") and " error: " in x, lambda x: x.startswith(f"{app}:")):
        found = [x for x in lines if wanted(x)]
        if found:
            return found[0]
    return lines[-1] if lines else "no message"


def run_app(cmd, app, timeout, every=False):
    """Runs `cmd` (an mpirun line of `app` with --json); returns (report, "")
    or (None, why it gave none); with `every`, the list of every report it
    printed, a line each, in place of the last.  Exit 1, a failed
    verification, still reports."""
    env = dict(os.environ)
    if os.geteuid() == 0:  # Open MPI refuses root unless told
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout,
                           env=env)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {timeout} s"
    if p.returncode not in (0, 1):
        return None, f"exit {p.returncode}: " + app_error(p.stderr, app)
    try:
        if every:
            reports = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
            return (reports, "") if reports else (None, f"exit {p.returncode} without a JSON report: " +
                                                  app_error(p.stderr, app))
        return json.loads(p.stdout.strip().splitlines()[-1]), ""
    except (IndexError, ValueError):
        return None, f"exit {p.returncode} without a JSON report: " + app_error(p.stderr, app)


def split_extra(argv):
    """The driver's own arguments, and those after "--", which go to every app."""
    if "--" not in argv:
        return argv, []
    return argv[:argv.index("--")], argv[argv.index("--") + 1:]


def add_app_options(ap, apps, repeat, out):
    """The options of the drivers that run the graph apps on app_scaling's inputs."""
    ap.add_argument("--bin", default="build/bin")
    ap.add_argument("--scale", type=int, default=20)
    ap.add_argument("--apps", default=apps)
    ap.add_argument("--repeat", type=int, default=repeat)
    # Generated inputs stay apart from the results, which would otherwise
    # carry a 90 MB genome at scale 22, and are reused from run to run.
    ap.add_argument("--data", default="bench-results/inputs")
    add_run_options(ap, out)


def add_run_options(ap, out, timeout=900):
    """Where a driver writes, how it starts ranks, how long one run may take, and --replot (draw the figures
    again from what it wrote)."""
    ap.add_argument("--out", default=out)
    ap.add_argument("--mpirun", default="mpirun --bind-to none --oversubscribe")
    ap.add_argument("--timeout", type=int, default=timeout)
    ap.add_argument("--replot", action="store_true")


def require_built(tool, bin_dir, apps):
    """Exits, naming the first app of `apps` that bin_dir lacks."""
    for app in apps:
        if not os.access(os.path.join(bin_dir, app), os.X_OK):
            sys.exit(f"{tool}: {os.path.join(bin_dir, app)} is not built (cmake --build build)")


def median(rows, **key):
    """The run of median time among the rows without an error that match
    every key=value; None when there is none."""
    runs = sorted((r for r in rows if not r["error"] and all(r[k] == v for k, v in key.items())),
                  key=lambda r: r["seconds"])
    return runs[len(runs) // 2] if runs else None


def pyplot(tool):
    """matplotlib.pyplot drawing to files, or None (said once) without it."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"{tool}: no matplotlib (python3-matplotlib), no plots")
        return None
    return plt


class Progress:
    """A bar, the run's number, the time so far and, from the runs done, an
    estimate of the time left: the matrices run for minutes."""

    def __init__(self, total, out=sys.stdout, width=20):
        self.total, self.out, self.width = total, out, width
        self.done, self.t0 = 0, time.time()

    def start(self, what):
        """Prints the line for the next run, left open for its result."""
        elapsed = time.time() - self.t0
        filled = self.width * self.done // max(self.total, 1)
        left = f", ~{elapsed / self.done * (self.total - self.done):.0f} s left" if self.done else ""
        print(f"[{'#' * filled}{'.' * (self.width - filled)}] {self.done + 1}/{self.total} "
              f"({elapsed:.0f} s{left}) {what} ...", end=" ", file=self.out, flush=True)

    def finish(self, result):
        """Closes the line with the run's result."""
        self.done += 1
        print(result, file=self.out, flush=True)
