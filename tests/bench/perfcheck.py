"""Whether perf works here: the benchmarks compare with it where it does and say why not where
it does not (not installed, no permission, or perf 6.1 aborting on this kernel's kallsyms once
an ftrace trampoline is listed)."""
import os
import shutil
import subprocess
import tempfile


def working_perf():
    """perf's path if perf record and perf report run here, else None (the reason printed)."""
    perf = shutil.which('perf')
    if not perf:
        print('perf is not installed: no comparison')
        return None
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, 'probe.data')
        for argv in ([perf, 'record', '-q', '-o', data, '-e', 'cpu-clock', '-g', 'true'],
                     [perf, 'report', '-i', data, '--stdio']):
            p = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            if p.returncode != 0:
                print('%s fails here (%d): %s; no comparison' % (' '.join(argv[:2]), p.returncode,
                                                                   (p.stderr.strip().splitlines() or [''])[-1][-200:]))
                return None
    return perf
