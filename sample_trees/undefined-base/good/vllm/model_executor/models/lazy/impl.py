class LazyBase:
    pass
