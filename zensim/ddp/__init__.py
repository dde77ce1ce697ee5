"""zensim's schemes inside real training: a DDP communication hook built on the scheme kernel.

    from zensim.ddp import zensim_hook
    ddp_model.register_comm_hook(None, zensim_hook(scheme="zen"))

See zensim.ddp.hook and docs/ddp.md.
"""

from zensim.ddp.hook import HookStats, ZensimHook, zensim_hook

__all__ = ["HookStats", "ZensimHook", "zensim_hook"]
