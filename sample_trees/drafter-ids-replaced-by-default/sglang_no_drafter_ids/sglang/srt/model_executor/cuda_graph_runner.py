class CudaGraphRunner:
    def __init__(self, model_runner):
        self.model_runner = model_runner
        if model_runner.spec_algorithm.is_eagle3():
            self.model_runner.model.set_eagle3_layers_to_capture()  # expect: EGL010
        self.capture()

    def capture(self):
        pass
