"""eagle3-lint: a static EAGLE-3 compatibility analyzer for the model classes of LLM inference engines.

It reads an engine's source tree (a folder, a wheel, or a release fetched by version), derives the
engine's EAGLE-3 contract, the model registry and the runner's aux-layer path from that tree
(``engines/<engine>/``), and says for every registered architecture whether the engine's own EAGLE-3
check would accept it and whether the hidden states the drafter needs are collected, without
importing or executing any of the analyzed code.
"""

__version__ = "0.1.0"
# The facts format (facts.py re-exports it). Kept here so the cache key (store.fingerprint) is known
# without importing facts.py: a replayed check (reportcache.py) never extracts or loads a fact.
FACTS_VERSION = 22  # 13: layer loops read once in the facts pass; 14: platform branches; 15: method-local
# imports, a forward's keyword hand-offs, the index uses of range loops; 16: def spans (Member.first_line);
# 17-20: the positions and shapes fixes need (a class's first statement, a method's header and last statement,
# a layer loop's body, module imports); 21: RunnerPath.target_calls (SGLang's get_embed_and_head); 22: every class
# ``def``'s ``Body`` (ModuleFacts.bodies), what the semantic model's collection walks read
