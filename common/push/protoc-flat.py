#!/usr/bin/env python3
"""Runs protoc-c on PROTOS under ROOT and writes each .pb-c.c and .pb-c.h straight into OUTDIR,
with the includes between them made flat: meson's custom targets cannot output into the
subdirectories that protoc-c mirrors from the package path (opentelemetry/proto/...), and the
file names are unique without them.

Usage: protoc-flat.py PROTOC_C ROOT OUTDIR PROTO..."""
import os
import re
import subprocess
import sys
import tempfile


def main():
    protoc_c, root, outdir, protos = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([protoc_c, '--proto_path=' + root, '--c_out=' + tmp] + protos, check=True)
        for dirpath, _, files in os.walk(tmp):
            for name in files:
                text = open(os.path.join(dirpath, name)).read()
                text = re.sub(r'#include "(?:[^"/]+/)+([^"/]+\.pb-c\.h)"', r'#include "\1"', text)
                with open(os.path.join(outdir, name), 'w') as f:
                    f.write(text)


if __name__ == '__main__':
    main()
