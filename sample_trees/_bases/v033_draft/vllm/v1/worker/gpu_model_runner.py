from vllm.model_executor.models.interfaces import supports_eagle3


class GPUModelRunner:
    def _setup_eagle3_aux_hidden_state_outputs(self) -> None:
        if not supports_eagle3(self.get_model()):
            raise RuntimeError(
                "Model does not support EAGLE3 interface but "
                "aux_hidden_state_outputs was requested"
            )
        aux_layers = self._get_eagle3_aux_layers_from_config()
        if not aux_layers:
            aux_layers = self.model.get_eagle3_default_aux_hidden_state_layers()
        self.model.set_aux_hidden_state_layers(aux_layers)

    def _get_eagle3_aux_layers_from_config(self):
        # 0.22+: the top-level key, else eagle_config's (SpecForge's layout), used as-is.
        hf_config = self.speculative_config.draft_model_config.hf_config
        layer_ids = getattr(hf_config, "eagle_aux_hidden_state_layer_ids", None)
        if not layer_ids:
            eagle_config = getattr(hf_config, "eagle_config", None)
            if eagle_config and isinstance(eagle_config, dict):
                layer_ids = eagle_config.get("eagle_aux_hidden_state_layer_ids")
        if layer_ids and isinstance(layer_ids, (list, tuple)):
            return tuple(layer_ids)
        return None
