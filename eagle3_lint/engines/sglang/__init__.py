"""SGLang as an EAGLE-3 target engine: release fetching and the contract derived from the tree.

Everything SGLang-specific (``sglang/srt/...`` paths, ``EntryClass``, ``set_eagle3_layers_to_capture``)
is named here and nowhere else; the class graph and the per-file facts it uses are the core's.
"""
