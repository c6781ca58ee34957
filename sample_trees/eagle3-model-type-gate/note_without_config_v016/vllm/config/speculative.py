class SpeculativeConfig:
    def _verify_args(self):
        eagle3_target_supported = [
            "llama",
            "qwen",
            "minicpm",
            "gpt_oss",
        ]
        if (
            self.method == "eagle3"
            and self.target_model_config
            and not any(
                supported_model in self.target_model_config.hf_text_config.model_type
                for supported_model in eagle3_target_supported
            )
        ):
            raise ValueError(
                f"Eagle3 is only supported for {eagle3_target_supported} models. "
                f"Got {self.target_model_config.hf_text_config.model_type=}"
            )
        return self
