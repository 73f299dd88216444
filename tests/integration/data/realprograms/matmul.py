"""PyTorch's CPU matrix product: a 256x256 by 256x256 single-precision product COUNT (argv[1])
times on one thread, after the import (about 1 s of its own). A count, not a duration, so that
the share of the products does not depend on how long the import took under each profiler."""
import sys

import torch

torch.set_num_threads(1)
torch.manual_seed(0)
a = torch.randn(256, 256)
b = torch.randn(256, 256)
for n in range(int(sys.argv[1])):
    c = a @ b
print('products %d, sum %.3f' % (n + 1, float(c.sum())))
