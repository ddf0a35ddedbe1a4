"""Settings every Python test shares, read before any test module imports torch.

`npm test` runs pytest beside vitest's two workers on a two-core machine, so the cores are
always busy: OpenMP gets one thread per process, and that thread waits passively. Two threads
that spin while other processes hold the cores made the CPU tests several times slower
(behaviour cloning on the real model: 57 s on two threads, 15 s on one). A test that wants more
threads still sets them itself; the environment's own settings win.
"""

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
