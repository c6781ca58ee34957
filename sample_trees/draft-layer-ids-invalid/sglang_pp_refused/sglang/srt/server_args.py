class ServerArgs:
    def check_watermark(self):
        # Not a refusal of EAGLE-3: nested under another option's test (SGLang 0.5.22 validation_hook.py:95
        # has the watermark's own PP test).
        if self.enable_watermark:
            if self.pp_size > 1:
                assert self.speculative_algorithm is None, "watermark"

    def check_server_args(self):
        # SGLang 0.5.15 server_args.py:6572-6575, 0.5.19 arg_groups/validation_hook.py:51-54.
        if self.pp_size > 1:
            assert (
                self.disable_overlap_schedule and self.speculative_algorithm is None
            ), "Pipeline parallelism is not compatible with overlap schedule, speculative decoding"
