"""The `memory_limit` setting in bytes, for every engine that holds a statement to it (the
parsing lives beside the settings, which check the spelling when it is given)."""

from astro_tui.sizes import memory_bytes

__all__ = ["memory_bytes"]
