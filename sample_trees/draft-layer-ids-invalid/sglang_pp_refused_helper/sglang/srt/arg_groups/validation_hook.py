# The shape of SGLang 0.5.21-0.5.23 arg_groups/validation_hook.py (0.5.23: lines 119-170 and 196-197).


def check_pipeline_parallel_compat(cfg):
    assert cfg.disable_overlap_schedule, "Pipeline parallelism is not compatible with overlap schedule"
    if cfg.speculative_algorithm == "DSPARK":
        assert cfg.disaggregation_mode == "prefill", "Pipeline parallel DSPARK requires disaggregation-mode=prefill"
    elif cfg.speculative_algorithm is not None:
        assert (
            cfg.speculative_algorithm.upper() == "EAGLE"
            and not cfg.enable_multi_layer_eagle
        ), "Pipeline parallelism currently only supports EAGLE (non-multi-layer) speculative decoding"


def check_watermark(cfg):
    if cfg.pp_size > 1 and cfg.speculative_algorithm is not None:
        raise ValueError("--enable-watermark is not supported with pipeline-parallel speculative decoding")


def check_dflash(cfg):
    if cfg.pp_size != 1:
        raise ValueError("Currently DFLASH speculative decoding only supports pp_size == 1.")


def check_server_args(cfg):
    if cfg.pp_size > 1:
        check_pipeline_parallel_compat(cfg)
