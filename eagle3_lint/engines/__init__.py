"""Engine-specific knowledge, one sub-package per serving engine.

The boundary this package is growing into (issue 14): everything that names an engine's modules,
paths, registry, runner call sites, config-time gates, pipeline-parallel split, drafter-config
reading, id convention, fix idioms and release fetching lives in ``engines/<engine>/``; the
semantic model (facts, class graph, MRO, delegation, collection), the rules, fixes and reports
stay engine-neutral and take their facts from an engine.

Today only ``engines/sglang/`` exists (release fetching and SGLang's contract, derived from the
tree); the vLLM names still live in the core modules and move to ``engines/vllm/`` when the
boundary is drawn.
"""
