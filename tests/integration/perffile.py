"""perf.data as the tests read it: the MMAP2 records, with their header's misc bits."""
import struct

RECORD_MMAP2 = 10
MISC_MMAP_BUILD_ID = 1 << 14


def mmap2_records(path):
    """The MMAP2 records in perf.data PATH, as (misc, file name) pairs."""
    data = open(path, 'rb').read()
    if data[:8] != b'PERFILE2':
        raise ValueError('%s is not a perf.data file' % path)
    start, size = struct.unpack_from('<QQ', data, 40)
    records, pos = [], start
    while pos + 8 <= min(start + size, len(data)):
        kind, misc, length = struct.unpack_from('<IHH', data, pos)
        if length < 8:
            break
        if kind == RECORD_MMAP2:
            # header, pid/tid, addr/len/pgoff, device and inode (or a build id), prot/flags, name
            records.append((misc, data[pos + 72:pos + length].split(b'\0')[0].decode(errors='replace')))
        pos += length
    return records


def flagged(path):
    """How many MMAP2 records of PATH carry PERF_RECORD_MISC_MMAP_BUILD_ID, and how many there are."""
    records = mmap2_records(path)
    return sum(1 for misc, _ in records if misc & MISC_MMAP_BUILD_ID), len(records)
