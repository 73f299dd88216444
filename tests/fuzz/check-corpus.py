#!/usr/bin/env python3
"""The tree-index corpus is at the index files' version (common/tree/tree-index.c, VERSION): a
seed of an older version stops at the version check, and the fuzzer's mutations never reach what
lies behind it. The corpus stayed at version 3 through versions 4 and 5 so, and a root whose size
ran past the index's end went unfound. The seeds are the index files of the views' fixtures
(tests/README.md, "Fuzzing"). TAP output.

Usage: check-corpus.py SOURCE_DIR"""
import glob
import os
import re
import struct
import sys

src = sys.argv[1]
text = open(os.path.join(src, 'common', 'tree', 'tree-index.c')).read()
version = int(re.search(r'#define VERSION\s*\\?\s*(\d+)', text).group(1))
seeds = sorted(glob.glob(os.path.join(src, 'tests', 'fuzz', 'corpus', 'tree-index', '*.down')) +
               glob.glob(os.path.join(src, 'tests', 'fuzz', 'corpus', 'tree-index', '*.up')))
print('1..%d' % (len(seeds) + 1))
print('%sok 1 - the tree-index corpus has seeds (%d)' % ('' if seeds else 'not ', len(seeds)))
failed = not seeds
for i, path in enumerate(seeds, 2):
    with open(path, 'rb') as f:
        head = f.read(12)
    ok = len(head) == 12 and head[:7] == b'CPPDTIX' and struct.unpack_from('<I', head, 8)[0] == version
    failed |= not ok
    print('%sok %d - %s is an index file of version %d' % ('' if ok else 'not ', i, os.path.basename(path), version))
sys.exit(1 if failed else 0)
