"""Stacks sorted by how whole they are, for comparing an unwinder with perf's on one workload.

A stack is a list of function names, outermost first. Its class:
  whole        it reaches main, or a thread's start (clone3, start_thread)
  before-main  the dynamic loader (ld.so, _dl_start...), an exec, or the C runtime before main;
               also a stack of no user frame at all (cppd's "[unknown]" alone, perf's kernel
               frames of execve): the thread was in the kernel between two programs
  after-main   exit handlers once main has returned (exit, __run_exit_handlers, _dl_fini)
  broken       anything else: an unknown frame at the root, or a chain cut short
"""
import subprocess

LOADER = ('_dl_start', '_dl_start_user', '_dl_start_final', '_dl_sysdep_start', 'dl_main', '_dl_init',
          '_dl_relocate_object', '_dl_map_object', '_dl_catch_exception', '_dl_catch_error')
EXEC = ('execve', '__execve', 'syscall:execve', 'execvp', 'execv', '__x64_sys_execve', 'bprm_execve')
# A sample with no user frame: cppd stores "[unknown]" alone. Seen inside execve once the old
# program is gone (load_elf_binary), which a VM whose page faults cost 13 µs makes long enough to
# be sampled a few times a run: no unwinder has anything to read there.
NO_USER = ['[unknown]']
EXIT = ('exit', '__run_exit_handlers', '_dl_fini', '_IO_cleanup', '_exit', '__libc_atexit')
THREAD = ('clone3', 'clone', '__clone', '__clone3', 'start_thread')
RUNTIME = ('_start', '__libc_start_main', '__libc_start_main_impl', '__libc_start_call_main')
CLASSES = ('whole', 'before-main', 'after-main', 'broken')


def classify(frames):
    if 'main' in frames or (frames and frames[0] in THREAD):
        return 'whole'
    if not frames:
        return 'broken'
    if frames == NO_USER:
        return 'before-main'
    if any(f in EXIT for f in frames):
        return 'after-main'
    root = frames[0]
    if root.startswith('ld-linux') or any(f in LOADER for f in frames) or any(f in EXEC for f in frames):
        return 'before-main'
    if root in RUNTIME:
        # In the C runtime without main: __libc_start_call_main has called exit (after), or
        # the constructors run (before).
        return 'after-main' if '__libc_start_call_main' in frames else 'before-main'
    return 'broken'


def tally(stacks):
    """{class: hits, ...} and {stack text: hits} of the broken ones, for (frames, hits) pairs."""
    counts = dict.fromkeys(CLASSES, 0)
    broken = {}
    for frames, hits in stacks:
        c = classify(frames)
        counts[c] += hits
        if c == 'broken':
            key = ';'.join(frames)[:160]
            broken[key] = broken.get(key, 0) + hits
    return counts, broken


def folded(text):
    """(frames, hits) pairs of folded-stacks TEXT."""
    out = []
    for line in text.splitlines():
        stack, _, hits = line.rpartition(' ')
        if stack:
            out.append((stack.split(';'), int(hits)))
    return out


def perf_script(data, comm=None):
    """(frames, 1) pairs of perf.data DATA's samples, outermost first, of command COMM if given."""
    out = subprocess.run(['perf', 'script', '-i', data, '-F', 'comm,ip,sym'], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True).stdout
    stacks, cur, cur_comm = [], None, None

    def end():
        if cur is not None and (comm is None or cur_comm == comm):
            stacks.append((list(reversed(cur)), 1))

    for line in out.splitlines():
        if not line.strip():
            end()
            cur = None
        elif not line[0].isspace():
            end()
            cur, cur_comm = [], line.split()[0]
        elif cur is not None:
            parts = line.split(None, 1)
            if len(parts) == 2:
                cur.append(parts[1].replace(' (inlined)', '').strip())
    end()
    return stacks


def describe(counts, broken):
    total = sum(counts.values())
    text = ', '.join('%s %d' % (c, counts[c]) for c in CLASSES) + ' of %d' % total
    if broken:
        text += '; broken: ' + '; '.join('%d x %s' % (n, s) for s, n in sorted(broken.items(), key=lambda x: -x[1])[:5])
    return text
