from sglang.srt.model_executor.cuda_graph_runner import CudaGraphRunner


class ModelRunner:
    def initialize(self):
        if self.eagle_use_aux_hidden_state:
            self.model.set_eagle3_layers_to_capture(self.eagle_aux_hidden_state_layer_ids)
        self.graph_runner = CudaGraphRunner(self)
