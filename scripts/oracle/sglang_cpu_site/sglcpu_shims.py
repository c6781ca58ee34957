"""Stand-ins for the sgl-kernel CPU ops SGLang 0.5.23's EAGLE path calls, none of them part of what is observed.

Each is the release's own Triton kernel for the same step (the branch SGLang takes on CUDA), run by Triton's
interpreter (``TRITON_INTERPRET=1``, numpy on CPU), except the pointer-table KV copy, a ``memmove`` per row that
does what ``copy_all_layer_kv_cache_tiled`` does (``sglang/kernels/ops/kvcache/cache_move.py``). The ops and
their call sites: KV copy (``cache_move.py:191``), ``assign_req_to_token_pool_cpu`` (``srt/mem_cache/
allocation.py:746``), ``assign_extend_cache_locs_cpu`` and ``assign_draft_cache_locs_contiguous_cpu``
(``kernels/ops/speculative/cache_locs.py:99``, ``:740``), ``fill_bonus_tokens_cpu``/``fill_accept_out_cache_loc_cpu``
(``kernels/ops/speculative/eagle.py:40``, ``:80``), tree build and greedy verify (``spec_tree.py:412``, ``:510``).
The target's forward, its setter, the aux capture, the drafter and its fc are SGLang's own code."""
import ctypes


def _np2(n):
    return 1 << max(0, int(n) - 1).bit_length()

def copy_all_layer_kv_cache_cpu(data_ptrs, strides, tgt_loc, src_loc):
    # cache_move.copy_all_layer_kv_cache_tiled: per layer buffer, copy row src -> tgt (stride bytes); loads first
    for p, s in zip(data_ptrs.tolist(), strides.tolist(), strict=False):
        rows = [ctypes.string_at(p + int(src) * s, s) for src in src_loc.tolist()]
        for tgt, buf in zip(tgt_loc.tolist(), rows, strict=False):
            ctypes.memmove(p + int(tgt) * s, buf, s)

def assign_req_to_token_pool_cpu(req_pool_indices, req_to_token, start_offset, end_offset, out_cache_loc, pool_len):
    from sglang.srt.mem_cache.allocation import assign_req_to_token_pool
    bs = req_pool_indices.shape[0]
    assign_req_to_token_pool[(bs,)](req_pool_indices, req_to_token, start_offset, end_offset, out_cache_loc,
                                    pool_len, _np2(bs))

def assign_extend_cache_locs_cpu(req_pool_indices, req_to_token, start_offset, end_offset, out_cache_loc, pool_len):
    from sglang.kernels.ops.speculative.cache_locs import assign_extend_cache_locs
    bs = req_pool_indices.shape[0]
    assign_extend_cache_locs[(bs,)](req_pool_indices, req_to_token, start_offset, end_offset, out_cache_loc,
                                    pool_len, _np2(bs))

def assign_draft_cache_locs_contiguous_cpu(req_pool_indices, req_to_token, seq_lens, out_cache_loc, pool_len, topk,
                                           num_cols):
    from sglang.kernels.ops.speculative.cache_locs import assign_draft_cache_locs_contiguous
    bs = seq_lens.shape[0]
    assign_draft_cache_locs_contiguous[(bs,)](req_pool_indices, req_to_token, seq_lens, out_cache_loc, pool_len,
                                              topk, num_cols, BS=bs)

def fill_bonus_tokens_cpu(accept_tokens, accept_lens, bonus_tokens, accept_stride):
    from sglang.kernels.ops.speculative.eagle import fill_bonus_tokens
    fill_bonus_tokens[(accept_lens.shape[0],)](accept_tokens, accept_lens, bonus_tokens, accept_stride)

def fill_accept_out_cache_loc_cpu(accept_index, out_cache_loc, accept_out_cache_loc):
    from sglang.kernels.ops.speculative.eagle import fill_accept_out_cache_loc
    size = accept_index.numel()
    fill_accept_out_cache_loc[(size,)](accept_index, out_cache_loc, accept_out_cache_loc, _np2(size))

def build_tree_kernel_efficient_cpu(parent_list, top_scores_index, seq_lens, tree_mask, positions, retrieve_index,
                                    retrieve_next_token, retrieve_next_sibling, topk, spec_steps, num_verify_tokens,
                                    tree_mask_mode):
    from sglang.kernels.ops.speculative.spec_tree import TreeMaskMode, sgl_build_tree_kernel_triton
    sgl_build_tree_kernel_triton(parent_list, top_scores_index, seq_lens, tree_mask, positions, retrieve_index,
                                 retrieve_next_token, retrieve_next_sibling, topk, spec_steps, num_verify_tokens,
                                 TreeMaskMode(int(tree_mask_mode)))

def verify_tree_greedy_cpu(predicts, accept_index, accept_token_num, candidates, retrive_index, retrive_next_token,
                           retrive_next_sibling, target_predict):
    from sglang.kernels.ops.speculative.spec_tree import verify_tree_greedy_triton
    verify_tree_greedy_triton(predicts, accept_index, accept_token_num, candidates, retrive_index,
                              retrive_next_token, retrive_next_sibling, target_predict)
