from sglang.srt.model_executor.cuda_graph_runner import CudaGraphRunner


class ModelRunner:
    def initialize(self):
        self.kernel_warmup()
        self.graph_runner = CudaGraphRunner(self)
        if self.eagle_use_aux_hidden_state:
            self.model.set_eagle3_layers_to_capture(self.eagle_aux_hidden_state_layer_ids)

    def kernel_warmup(self):
        self._dummy_run(1)

    def _dummy_run(self, batch_size):
        if self.eagle_use_aux_hidden_state:
            self.model.set_eagle3_layers_to_capture()
        self.model.forward(batch_size)
