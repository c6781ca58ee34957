from sglang.srt.model_executor.cuda_graph_runner import CudaGraphRunner


class ModelRunner:
    def initialize(self):
        self.graph_runner = CudaGraphRunner(self)
        if self.spec_algorithm.is_eagle3() and not self.is_draft_worker:
            self.model.set_eagle3_layers_to_capture()
