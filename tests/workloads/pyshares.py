#!/usr/bin/python3
"""A Python program whose profile is known by construction, for test-python.py.

    pyshares.py cpu SECONDS        rounds of: Work.alpha 5 units through Work.recurse (10 deep),
                                   beta_thread 3 units in a second thread (the main thread waits
                                   for it: the two never run at once), gamma_coro 2 units in an
                                   asyncio coroutine, interleaved a unit at a time; a unit is the
                                   same pure-Python work (unit()) each time, so of the CPU time
                                   the three spend, 0.50, 0.30 and 0.20 are theirs by
                                   construction; at the end prints `spent NAME NS` for each, the
                                   CPU time its units took by its thread's clock (the second
                                   thread's cost more or less than the main thread's, by run)
    pyshares.py selfcheck SECONDS  the same (each function's units at once, 4 times as long),
                                   sampled by the program itself: an ITIMER_PROF timer
                                   every millisecond of CPU time, whose handler reads the frames of
                                   the thread that runs unit() (sys._current_frames()) and counts
                                   each function once per sample; prints `share NAME VALUE` for
                                   the three (an independent sampler to cross-check against)
    pyshares.py syscalls SECONDS   getppid_loop: os.getppid() in a loop; sleep_loop: sleeps of
                                   1 ms (context switches), alternately
    pyshares.py zlib SECONDS       compress_loop: zlib.compress() of 1 MiB (libz's deflate under it)

Each mode prints `pid N` first. Runs for SECONDS of CPU time (wall time for syscalls)."""
import asyncio
import os
import signal
import sys
import threading
import time
import zlib

UNIT = 100000  # about 5 ms
# selfcheck's: about 20 ms, long beside a thread's wake-up on a loaded machine
SELFCHECK_UNIT = 400000
# The order of a round's units in cpu mode: the three interleaved, so that a profiler kept from
# the CPU for a while (its samples then weigh the intervals it missed) misses them alike.
ROUND = 'abacabacab'


# The CPU time each function spent in unit() (its thread's clock, CLOCK_THREAD_CPUTIME_ID).
SPENT = {}


def unit():
    s = 0
    for i in range(UNIT):
        s += i * i
    return s


def timed(name):
    t = time.thread_time_ns()
    unit()
    SPENT[name] = SPENT.get(name, 0) + time.thread_time_ns() - t


class Work:
    def recurse(self, depth, units):
        if depth == 0:
            return self.alpha(units)
        return self.recurse(depth - 1, units)

    def alpha(self, units):
        for _ in range(units):
            timed('Work.alpha')


def beta_thread(units):
    for _ in range(units):
        timed('beta_thread')


async def gamma_coro(units):
    for _ in range(units):
        timed('gamma_coro')
        await asyncio.sleep(0)


class Beta:
    """The second thread: runs beta_thread when asked, while the main thread waits."""

    def __init__(self):
        self.go, self.done, self.stop = threading.Event(), threading.Event(), False
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        # selfcheck's SIGPROF goes to the main thread, which (waiting for this one) runs the
        # handler at once and reads this thread's frames.
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGPROF})
        while True:
            self.go.wait()
            self.go.clear()
            if self.stop:
                return
            beta_thread(self.units)
            self.done.set()

    def round(self, units):
        self.units = units
        self.done.clear()
        self.go.set()
        self.done.wait()


def cpu(seconds, interleaved=True):
    """Rounds of 5 units of alpha, 3 of beta, 2 of gamma: interleaved one unit at a time, or
    (selfcheck, whose own sampler needs long stretches in the thread) each function's at once."""
    w, beta, loop = Work(), Beta(), asyncio.new_event_loop()
    end = time.process_time() + seconds
    while time.process_time() < end:
        if interleaved:
            for f in ROUND:
                if f == 'a':
                    w.recurse(10, 1)
                elif f == 'b':
                    beta.round(1)
                else:
                    loop.run_until_complete(gamma_coro(1))
        else:
            w.recurse(10, 5)
            beta.round(3)
            loop.run_until_complete(gamma_coro(2))
    beta.stop = True
    beta.go.set()
    loop.close()
    for name, ns in sorted(SPENT.items()):
        print('spent %s %d' % (name, ns))


def selfcheck(seconds):
    counts, total = {}, [0]
    me = threading.get_ident()

    def sample(signum, frame):
        frames = sys._current_frames()
        for tid, f in sorted(frames.items(), key=lambda kv: kv[0] != me):
            names = []
            while f is not None:
                names.append(f.f_code.co_qualname)
                f = f.f_back
            if 'unit' in names:
                for n in set(names):
                    counts[n] = counts.get(n, 0) + 1
                total[0] += 1
                return

    signal.signal(signal.SIGPROF, sample)
    # The handler runs in the main thread, which must take the GIL from the second thread to
    # read its frames: soon, so that the frame read is the one the signal interrupted.
    sys.setswitchinterval(0.0002)
    signal.setitimer(signal.ITIMER_PROF, 0.001, 0.001)
    global UNIT
    UNIT = SELFCHECK_UNIT
    cpu(seconds, interleaved=False)
    signal.setitimer(signal.ITIMER_PROF, 0, 0)
    for n in ('Work.alpha', 'beta_thread', 'gamma_coro'):
        print('share %s %.4f' % (n, counts.get(n, 0) / total[0] if total[0] else 0.0))
    print('samples %d' % total[0])


def getppid_loop(n):
    for _ in range(n):
        os.getppid()


def sleep_loop(n):
    for _ in range(n):
        time.sleep(0.001)


def syscalls(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        getppid_loop(20000)
        sleep_loop(20)


def compress_loop(data, n):
    for _ in range(n):
        zlib.compress(data, 6)


def compress(seconds):
    data = os.urandom(1 << 19) + bytes(1 << 19)
    end = time.process_time() + seconds
    while time.process_time() < end:
        compress_loop(data, 4)


def main():
    modes = {'cpu': cpu, 'selfcheck': selfcheck, 'syscalls': syscalls, 'zlib': compress}
    if len(sys.argv) != 3 or sys.argv[1] not in modes:
        sys.exit(__doc__)
    print('pid %d' % os.getpid(), flush=True)
    modes[sys.argv[1]](float(sys.argv[2]))


if __name__ == '__main__':
    main()
