"""The benchmark drivers' progress line: a bar, the run's number, the time
so far and, from the runs done, an estimate of the time left.  Long matrices
(model_compare.py runs for minutes) should say how far they are."""
import sys
import time


class Progress:
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
