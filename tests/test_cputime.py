"""CpuClock counts this process's and its children's CPU time inside the block, not outside it."""

import subprocess
import sys
import time

from treebench.cputime import CpuClock

# a child that, for each line it reads, burns that many CPU seconds and answers "done"
_WORKER = """
import sys, time
for line in sys.stdin:
    end = time.process_time() + float(line)
    while time.process_time() < end:
        pass
    print("done", flush=True)
"""


def _burn(seconds):
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def _ask(worker, seconds):
    worker.stdin.write(f"{seconds}\n")
    worker.stdin.flush()
    assert worker.stdout.readline().strip() == "done"


def test_counts_own_threads_and_an_ended_child():
    clock = CpuClock()
    _burn(0.2)
    subprocess.run(
        [
            sys.executable,
            "-c",
            "import time\ne=time.process_time()+0.3\nwhile time.process_time()<e: pass",
        ],
        check=True,
    )
    assert 0.5 <= clock.seconds() < 1.5  # 0.2 here, 0.3 in the child plus its start-up


def test_a_worker_that_outlives_the_block_counts_its_work_inside_it_only():
    worker = subprocess.Popen(
        [sys.executable, "-c", _WORKER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        _ask(worker, 0.6)  # before the clock: not counted
        clock = CpuClock()
        _ask(worker, 0.3)
        inside = clock.seconds()
        assert 0.27 <= inside < 0.5  # CPU times tick in hundredths of a second
        worker.stdin.close()  # the worker ends and is reaped: its 0.6 s from before stay out
        worker.wait()
        assert 0.27 <= clock.seconds() < 0.5
    finally:
        worker.kill()
        worker.wait()
