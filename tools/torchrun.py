#!/usr/bin/env python3
"""torchrun, for every PyTorch lmzoo runs on: the same launcher and flags (`python3 tools/torchrun.py
--nproc_per_node 2 --no_python lmzoo train ...`), its rendezvous store served without libuv.

PyTorch 2.4+ asks TCPStore for the libuv server by default, and torchrun's rendezvous offers no switch
for it (USE_LIBUV=0 reaches init_process_group, not torchrun's own store), so on a build without libuv
(Debian 13's python3-torch 2.6) plain torchrun fails with "use_libuv was requested but PyTorch was build
without libuv support". Here TCPStore is given use_libuv=False before the launcher is imported; on
PyTorch 1.x, whose TCPStore has no such argument, nothing changes.
"""
import sys

import torch.distributed as dist


def serve_stores_without_libuv():
    """Makes every TCPStore the launcher creates use the classic server."""
    store = dist.TCPStore
    if "use_libuv" not in (store.__init__.__doc__ or ""):
        return  # PyTorch 1.x: the classic server is the only one

    class ClassicTCPStore(store):
        def __init__(self, *args, **kwargs):
            kwargs["use_libuv"] = False
            super().__init__(*args, **kwargs)

    dist.TCPStore = ClassicTCPStore


if __name__ == "__main__":
    serve_stores_without_libuv()
    from torch.distributed.run import main

    sys.argv[0] = "torchrun"
    sys.exit(main())
