def _create_pooling_model_cls(orig_cls):
    class ModelForPooling(orig_cls):
        is_pooling_model = True

    return ModelForPooling


def as_seq_cls_model(cls):
    if getattr(cls, "is_pooling_model", False):
        return cls

    class ModelForSequenceClassification(_create_pooling_model_cls(cls)):
        pass

    return ModelForSequenceClassification
