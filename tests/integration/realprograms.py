"""Big real programs from Debian's packages, as workloads for the tests and the benchmark:
PyTorch (CPU matrix products), a PostgreSQL server under pgbench, Chromium headless
loading a local page, ripgrep (Rust) over a tree, g++ compiling a file. Each runs 1-3 s of CPU.

Shared by tests/integration/test-realprograms.py and tests/bench/bench-realprograms.py: how to set
each program up, run it (under cppctl record, the daemon or perf record alike), read perf's
stacks for the same workload, and compare function profiles by name.

A workload's command is wrapped in `sh -c '"$@"; echo $? > STATUS'`, so that its own exit status
is known whatever runs it (perf record and the daemon do not pass it on)."""
import glob
import os
import pwd
import re
import shutil
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, 'data', 'realprograms')
PROGRAMS = ('torch', 'postgres', 'chromium', 'ripgrep', 'gxx')
# The newest PostgreSQL installed (15 on Debian 12).
PG_BIN = os.path.dirname((sorted(glob.glob('/usr/lib/postgresql/*/bin/postgres'),
                                 key=lambda p: int(re.search(r'/(\d+)/bin/', p).group(1)))
                          or ['/usr/lib/postgresql/15/bin/postgres'])[-1])

# The frames that start a process or a thread. Their shares say how many stacks are whole (a
# stack that holds none of them, nor main, is broken: classify() below), not where time goes, so
# the comparison of function shares leaves them out: perf 6.1's unwinder, for one, reaches
# _start in 70% of PyTorch's samples where cppd reaches it in 93%.
ROOTS = ('_start', '__libc_start_main', '__libc_start_main_impl', '__libc_start_main@@GLIBC_2.34',
         '__libc_start_call_main', 'start_thread', 'clone', 'clone3', '__clone3', '__clone',
         '_dl_start', '_dl_start_user', '_dl_start_final')


def run(argv, **kw):
    return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


class Workload:
    """One program, set up in TMP: argv (wrapped, see above), a check of what it did."""

    def __init__(self, name, tmp):
        self.name, self.tmp = name, tmp
        self.status_file = os.path.join(tmp, name + '.status')
        self.out_file = os.path.join(tmp, name + '.out')
        self.argv = None
        self.why_not = None
        # What the program is written in: 'c++' and 'rust' programs must show demangled names.
        self.language = {'torch': 'c++', 'chromium': 'c++', 'gxx': 'c++', 'ripgrep': 'rust'}.get(name, 'c')
        getattr(self, 'setup_' + name)()

    def wrap(self, argv, user=None):
        """ARGV, its output to the .out file and its exit status to the .status file; as USER
        (setpriv) if given."""
        inner = ['sh', '-c', '"$@" > %s 2>&1; echo $? > %s' % (self.out_file, self.status_file), 'sh'] + argv
        if user:
            pw = pwd.getpwnam(user)
            inner = ['setpriv', '--reuid=%d' % pw.pw_uid, '--regid=%d' % pw.pw_gid, '--init-groups'] + inner
        return inner

    def before(self):
        """Call before each run: forgets the last run's status."""
        for f in (self.status_file, self.out_file):
            if os.path.exists(f):
                os.unlink(f)

    def result(self):
        """(exit status or None, output) of the last run."""
        status = None
        if os.path.exists(self.status_file):
            status = int(open(self.status_file).read().strip() or -1)
        out = open(self.out_file, errors='replace').read() if os.path.exists(self.out_file) else ''
        return status, out

    def check(self):
        """'' if the last run did its work, else why not."""
        status, out = self.result()
        if status != 0:
            return 'exit status %s: %s' % (status, out[-1500:])
        want = {'torch': r'products \d+', 'postgres': r'tps = \d', 'chromium': r'<title>done \d+',
                'ripgrep': r':\d+', 'gxx': r''}[self.name]
        if not re.search(want, out):
            return 'no /%s/ in its output: %s' % (want, out[-1500:])
        return ''

    # PyTorch from Debian (python3-torch 1.13): 250 products of 256x256 matrices, one thread.
    def setup_torch(self):
        if run(['/usr/bin/python3', '-c', 'import importlib.util, sys; '
                'sys.exit(importlib.util.find_spec("torch") is None)']).returncode != 0:
            self.why_not = 'python3-torch is not installed (packaging/install-deps)'
            return
        self.argv = self.wrap(['/usr/bin/python3', os.path.join(DATA, 'matmul.py'), '250'])

    # PostgreSQL (15 on Debian 12): initdb and pgbench -i here (not recorded); the recording
    # starts the server as the postgres user on a unix socket in TMP, runs pgbench for 2 s with 2
    # clients, stops it.
    def setup_postgres(self):
        if not os.path.exists(os.path.join(PG_BIN, 'postgres')):
            self.why_not = 'PostgreSQL is not installed (packaging/install-deps)'
            return
        if os.geteuid() != 0:
            self.why_not = 'the PostgreSQL server runs as the postgres user: needs root'
            return
        user = 'postgres'
        try:
            pw = pwd.getpwnam(user)
        except KeyError:
            user, pw = 'nobody', pwd.getpwnam('nobody')
        os.chmod(self.tmp, 0o755)
        pg = os.path.join(self.tmp, 'pg')
        os.mkdir(pg, 0o700)
        os.chown(pg, pw.pw_uid, pw.pw_gid)
        self.pg, self.user = pg, user
        # Its output and status where the server's user may write them.
        self.status_file, self.out_file = os.path.join(pg, 'status'), os.path.join(pg, 'out')
        as_user = ['setpriv', '--reuid=%d' % pw.pw_uid, '--regid=%d' % pw.pw_gid, '--init-groups']
        p = run(as_user + [os.path.join(PG_BIN, 'initdb'), '-D', os.path.join(pg, 'data'), '-A', 'trust',
                           '-U', 'postgres', '--no-sync'], cwd=pg)
        if p.returncode != 0:
            self.why_not = 'initdb failed: %s' % (p.stdout + p.stderr)[-500:]
            return
        script = os.path.join(DATA, 'pgbench.sh')
        p = run(as_user + ['sh', script, PG_BIN, pg, 'init'], cwd=pg)
        if p.returncode != 0:
            self.why_not = 'pgbench -i failed: %s' % (p.stdout + p.stderr)[-800:]
            return
        self.argv = self.wrap(['sh', script, PG_BIN, pg, 'run', '2'], user=user)

    # Chromium headless, no sandbox (it refuses to run as root with one), a local page whose
    # script builds and measures a table for 1 s.
    def setup_chromium(self):
        chromium = shutil.which('chromium')
        if not chromium:
            self.why_not = 'chromium is not installed (packaging/install-deps)'
            return
        self.argv = self.wrap([chromium, '--headless', '--no-sandbox', '--disable-gpu', '--no-first-run',
                               '--disable-dev-shm-usage', '--user-data-dir=%s' % os.path.join(self.tmp, 'chromium'),
                               '--dump-dom', 'file://' + os.path.join(DATA, 'page.html')])

    # ripgrep (Rust), two threads, a Unicode pattern over headers, docs and Python's library.
    def setup_ripgrep(self):
        rg = shutil.which('rg')
        if not rg:
            self.why_not = 'ripgrep is not installed (packaging/install-deps)'
            return
        trees = [d for d in ('/usr/include', '/usr/share/doc', '/usr/lib/python3') if os.path.isdir(d)]
        self.argv = self.wrap([rg, '-c', '-j2', '--no-ignore', '-i', r'\p{L}{6,}\s+\p{L}{6,}\s+\d'] + trees)
        # Once beforehand, so that the files are in the page cache for every recording: reading
        # them from disk doubled the first run's CPU time (in the kernel) on a busy machine.
        run(self.argv[4:])

    # g++ 12 compiling a file of standard containers, algorithms and regex (cc1plus, as).
    def setup_gxx(self):
        gxx = shutil.which('g++')
        if not gxx:
            self.why_not = 'g++ is not installed (packaging/install-deps)'
            return
        self.argv = self.wrap([gxx, '-O0', '-std=c++17', '-c', os.path.join(DATA, 'compile.cc'),
                               '-o', os.path.join(self.tmp, 'compile.o')])


def working_perf(tmp):
    """'' if perf record and perf script work here, else why not."""
    if not shutil.which('perf'):
        return 'perf is not installed'
    data = os.path.join(tmp, 'probe.data')
    for argv in (['perf', 'record', '-q', '-o', data, '-e', 'cpu-clock', '-g', 'true'],
                 ['perf', 'script', '-i', data]):
        p = run(argv)
        if p.returncode != 0:
            return '%s fails here: %s' % (' '.join(argv[:2]), (p.stderr.strip().splitlines() or [''])[-1][-200:])
    return ''


def perf_record_argv(data, stack_size=16384, period_ms=1):
    """perf record at cppctl record's defaults: CPU time every 1 ms, DWARF with 16 KiB of stack.
    -m 8M: perf's default 512 KiB buffer drops bursts of 16 KiB samples, which skews shares."""
    return ['perf', 'record', '-q', '-m', '8M', '-o', data, '-e', 'cpu-clock', '-c', str(period_ms * 1000000),
            '--call-graph', 'dwarf,%d' % stack_size, '--']


def perf_stacks(data):
    """perf's user-space stacks (perf script, its own DWARF unwinding), outermost frame first, as
    lists of names; an unsymbolized frame ("[unknown]", or an address: UNSYMBOLIZED) is None.
    Kernel frames are left out, as cppd leaves them out without --kernel; the sample still counts.
    --no-inline: perf 6.1 asks addr2line for every address otherwise (15 s for PyTorch's 2,000
    samples); these binaries have no DWARF inline information anyway, except libc's, whose inlined
    frames would differ from cppd's names."""
    p = subprocess.run(['perf', 'script', '--no-inline', '-F', 'comm,tid,ip,sym,dso', '-i', data],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    stacks, cur = [], None
    for line in p.stdout.decode(errors='replace').splitlines():
        if not line.strip():
            if cur is not None:
                stacks.append(cur[::-1])
            cur = None
        elif not line[0].isspace():
            cur = []
        elif cur is not None:
            m = re.match(r'\s*[0-9a-f]+ (.*) \((.*)\)$', line)
            if not m or m.group(2) == '[kernel.kallsyms]' or m.group(2).startswith('[kernel'):
                continue
            name = m.group(1)
            cur.append(None if UNSYMBOLIZED.search(name) else name)
    if cur is not None:
        stacks.append(cur[::-1])
    return stacks


def cppd_stacks(cppctl, db, filters=()):
    """cppd's stacks from the store (cppctl export --format folded), outermost frame first, with
    their hits: [(names, hits)]; an unsymbolized frame ("module+0xOFFSET") is None."""
    p = run([cppctl, 'export', '--db', db, '-r', 'cpu-time', '-t', '0', '--format', 'folded'] + list(filters))
    if p.returncode != 0:
        raise RuntimeError('cppctl export failed: %s' % p.stderr)
    out = []
    for line in p.stdout.splitlines():
        stack, _, hits = line.rpartition(' ')
        if not stack:
            continue
        names = [None if UNSYMBOLIZED.search(f) else f for f in stack.split(';')]
        out.append((names, int(hits)))
    return out


UNSYMBOLIZED = re.compile(r'\+0x[0-9a-f]+$|^\[unknown\]$|^0x[0-9a-f]+$')


def demangle_all(names):
    """{name: demangled} for the mangled names among NAMES (c++filt, binutils, knows the Itanium
    ABI and both Rust schemes); only to compare names with perf, which demangles."""
    mangled = sorted(n for n in names if n and (n.startswith('_Z') or n.startswith('_R')))
    if not mangled or not shutil.which('c++filt'):
        return {}
    p = subprocess.run(['c++filt'], input='\n'.join(mangled) + '\n', stdout=subprocess.PIPE, text=True)
    return dict(zip(mangled, p.stdout.splitlines()))


def key(name, demangled=None):
    """The name both profilers' outputs agree on: demangled, without a parameter list, a
    ' [clone .cold]' suffix, a symbol version or a Rust hash (perf 6.1 prints C++ names without
    parameters, the other demanglers with)."""
    if demangled and name in demangled:
        name = demangled[name]
    name = re.sub(r' \[clone [^]]*\]', '', name)
    name = re.sub(r'@@?[A-Z][A-Z0-9_.]*$', '', name)
    name = re.sub(r'::h[0-9a-f]{16}$', '', name)
    # A trailing balanced "(...)" and qualifiers, the parameters: but not "(anonymous namespace)".
    m = re.search(r'(\((?:[^()]|\([^()]*\))*\))(?: const| volatile| &&| &)*$', name)
    if m and m.start() > 0 and not name.endswith('operator()'):
        name = name[:m.start()]
    return name


def shares(stacks):
    """{name: fraction of samples whose stack contains it} (each sample counted once per name,
    as perf report --children and cppctl functions count), and the number of samples. STACKS:
    [(names, hits)]; None names (unsymbolized) are left out."""
    count, total = {}, 0
    for names, hits in stacks:
        total += hits
        for n in set(n for n in names if n is not None):
            count[n] = count.get(n, 0) + hits
    return {n: c / total for n, c in count.items()} if total else {}, total


_aliases = None


def glibc_aliases():
    """{name: canonical name} for the functions of glibc (libc.so.6, ld.so) that have several
    names at one address: cppd and perf pick different ones (`read`, `__libc_read`,
    `__GI___libc_read`), from the library's symbols and, where libc6-dbg is installed, its
    debug file's."""
    global _aliases
    if _aliases is not None:
        return _aliases
    _aliases = {}
    for lib in ('/lib/x86_64-linux-gnu/libc.so.6', '/lib64/ld-linux-x86-64.so.2'):
        if not os.path.exists(lib) or not shutil.which('readelf'):
            continue
        files = [lib]
        m = re.search(r'Build ID: ([0-9a-f]{2})([0-9a-f]+)', run(['readelf', '-n', lib]).stdout)
        if m:
            debug = '/usr/lib/debug/.build-id/%s/%s.debug' % (m.group(1), m.group(2))
            if os.path.exists(debug):
                files.append(debug)
        groups = {}
        for f in files:
            for line in run(['readelf', '-sW', f]).stdout.splitlines():
                fields = line.split()
                if len(fields) >= 8 and fields[3] in ('FUNC', 'IFUNC') and int(fields[1], 16):
                    groups.setdefault(int(fields[1], 16), set()).add(re.sub(r'@.*', '', fields[7]))
        for names in groups.values():
            canonical = min(names, key=lambda n: (len(n.lstrip('_')), n))
            for n in names:
                _aliases.setdefault(n, canonical)
    return _aliases


def keyed(share_map):
    """SHARE_MAP by key() and glibc's aliases: names that become one key (a symbol and its
    aliases) take the largest share."""
    dm = demangle_all(share_map)
    aliases = glibc_aliases()
    out = {}
    for n, s in share_map.items():
        k = key(n, dm)
        k = aliases.get(k, k)
        out[k] = max(out.get(k, 0.0), s)
    return out


def compare(ours, theirs, top=10):
    """The top TOP functions of each profile by share, roots left out (see ROOTS), with both
    shares: [(name, ours, theirs)], largest difference first."""
    a, b = keyed(ours), keyed(theirs)
    roots = set(glibc_aliases().get(key(r), key(r)) for r in ROOTS)
    pick = lambda m: [n for n, _ in sorted(m.items(), key=lambda kv: -kv[1]) if n not in roots][:top]
    names = set(pick(a)) | set(pick(b))
    rows = [(n, a.get(n, 0.0), b.get(n, 0.0)) for n in names]
    return sorted(rows, key=lambda r: -abs(r[1] - r[2]))


def classify(stacks):
    """Counts of stacks by how whole they are: 'main' (reach main), 'start' (whole without main:
    they hold a frame that starts a process or thread, ROOTS — before main in ld.so or exec, a
    thread, exit handlers; a stripped program's own _start and main have no name, so the frames
    of glibc that call them are what shows), 'unknown' (broken: the outermost frame is
    unsymbolized) and 'truncated' (broken: the outermost frame is a named function that starts
    nothing, the unwinding stopped). STACKS: [(names, hits)] outermost first."""
    c = {'main': 0, 'start': 0, 'unknown': 0, 'truncated': 0}
    aliases = glibc_aliases()
    roots = set(aliases.get(key(r), key(r)) for r in ROOTS)
    for names, hits in stacks:
        if 'main' in names:
            c['main'] += hits
        elif any(n is not None and aliases.get(key(n), key(n)) in roots for n in names):
            c['start'] += hits
        elif not names or names[0] is None:
            c['unknown'] += hits
        else:
            c['truncated'] += hits
    return c


def mangled_names(names):
    """Names that are still mangled (Itanium C++ _Z..., Rust v0 _R...)."""
    return sorted(n for n in names if n and re.match(r'_Z[NLZ0-9]|_R[NCMSXYsv0-9]', n))


def demangled_names(names):
    return sorted(n for n in names if n and '::' in n)


def unsymbolized_fraction(stacks):
    """The fraction of the frames of STACKS ([(names, hits)]) that are unsymbolized (None), each
    sample's frames counted once per hit: cppd's header counts "frames unsymbolized" so."""
    frames = sum(len(names) * hits for names, hits in stacks)
    return sum(names.count(None) * hits for names, hits in stacks) / frames if frames else 0.0


def plt_samples(stacks):
    """How many of the samples of STACKS ([(names, hits)]) hold a PLT frame (NAME@plt)."""
    return sum(hits for names, hits in stacks if any(n is not None and n.endswith('@plt') for n in names))
