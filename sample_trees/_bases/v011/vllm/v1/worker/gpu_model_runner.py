from vllm.model_executor.models.interfaces import supports_eagle3


class GPUModelRunner:
    def load_model(self) -> None:
        if self.use_aux_hidden_state_outputs:
            if supports_eagle3(self.model):
                self.model.set_aux_hidden_state_layers(
                    self.model.get_eagle3_aux_hidden_state_layers())
