import os
from typing import Tuple


def get_pp_indices(num_hidden_layers: int, pp_rank: int, pp_size: int) -> Tuple[int, int]:
    # SGLang's split (sglang/srt/distributed/utils.py): the remainder goes to the last ranks.
    partition_list_str = os.getenv("SGLANG_PP_LAYER_PARTITION", None)
    if partition_list_str is not None:
        partitions = [int(layer) for layer in partition_list_str.split(",")]
        start_layer = sum(partitions[:pp_rank])
        end_layer = start_layer + partitions[pp_rank]
    else:
        base_layers = num_hidden_layers // pp_size
        remainder = num_hidden_layers % pp_size
        if pp_rank >= pp_size - remainder:
            partitions_without_extra_layer = pp_size - remainder
            start_layer = pp_rank * (base_layers + 1) - partitions_without_extra_layer
            end_layer = start_layer + (base_layers + 1)
        else:
            start_layer = pp_rank * base_layers
            end_layer = start_layer + base_layers
    return (start_layer, end_layer)
