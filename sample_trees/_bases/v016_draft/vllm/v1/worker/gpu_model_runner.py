from vllm.model_executor.models.interfaces import supports_eagle3


class GPUModelRunner:
    def load_model(self) -> None:
        if self.use_aux_hidden_state_outputs:
            if not supports_eagle3(self.get_model()):
                raise RuntimeError(
                    "Model does not support EAGLE3 interface but "
                    "aux_hidden_state_outputs was requested"
                )
            aux_layers = self._get_eagle3_aux_layers_from_config()
            if not aux_layers:
                aux_layers = self.model.get_eagle3_aux_hidden_state_layers()
            self.model.set_aux_hidden_state_layers(aux_layers)

    def _get_eagle3_aux_layers_from_config(self):
        hf_config = self.speculative_config.draft_model_config.hf_config
        if not hasattr(hf_config, "eagle_aux_hidden_state_layer_ids"):
            return None
        return tuple(hf_config.eagle_aux_hidden_state_layer_ids)
