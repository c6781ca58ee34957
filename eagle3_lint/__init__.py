"""eagle3-lint: a static EAGLE-3 compatibility analyzer for vLLM model classes.

It reads a vLLM source tree (a folder, a wheel, or a release fetched by version), derives the
``SupportsEagle3`` contract, the model registry and the GPU runner's aux-layer path from that tree,
and says for every registered architecture whether vLLM's runtime ``supports_eagle3`` check would
accept it, without importing or executing any of the analyzed code.
"""

__version__ = "0.1.0"
# The facts format (facts.py re-exports it). Kept here so the cache key (store.fingerprint) is known
# without importing facts.py: a replayed check (reportcache.py) never extracts or loads a fact.
FACTS_VERSION = 10
