class ModelRunner:
    def __init__(self, server_args, draft_model_config):
        self.eagle_use_aux_hidden_state = True
        try:
            # get the aux layer from draft model config (SGLang 0.5.10's model_runner.py:366-379)
            eagle_config = getattr(draft_model_config.hf_config, "eagle_config", None)
            self.eagle_use_aux_hidden_state = eagle_config.get("use_aux_hidden_state", True)
            self.eagle_aux_hidden_state_layer_ids = eagle_config["eagle_aux_hidden_state_layer_ids"]
        except:  # noqa: E722 - as in SGLang
            self.eagle_aux_hidden_state_layer_ids = None

    def initialize(self):
        if self.eagle_use_aux_hidden_state:
            self.model.set_eagle3_layers_to_capture(self.eagle_aux_hidden_state_layer_ids)
