"""toyserve: a made-up serving engine, the shape of a third engine eagle3-lint was not written for."""

__version__ = "0.3.1"
