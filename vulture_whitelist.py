"""vulture whitelist: names used in ways vulture cannot see (issue 15).

- report/schema.py: the report model's fields are read through ``dataclasses.fields`` (``dump``, the schema
  generator) and its ``DEF``/``DESCRIPTION`` class variables through ``__dict__``; ``DATA_FILE`` and
  ``schema_text`` are used by scripts/report_schema.py and the tests; ``build_report`` by the tests.
- cli.py: click commands are registered by their decorators.
- minieval.py: the ``_e_<Node>`` evaluators are dispatched by name.
- read outside the package only: by tests/ (catalog's required sections, the SGLang engine's registry/runner/
  setter facts and helpers, plugins.is_plugin_display_path, rules.by_id, the store's hit/miss counters,
  analysis.each_for, fixes.apply_edits: one finding's fix applied alone, what its SARIF replacements must give),
  by
  scripts/sglang_sweep.py and bench/bench.py.

Regenerate the model's part with ``vulture --make-whitelist | grep report/schema.py``. Not executed: vulture only
reads the names.
"""
# ruff: noqa
rules_cmd  # unused function (eagle3_lint/cli.py)
each_for  # unused function (eagle3_lint/analysis.py)
apply_edits  # unused function (eagle3_lint/fixes.py)
dir_source  # unused function (eagle3_lint/engines/__init__.py): a folder opened as its engine's tree, by tests, scripts and bench
explain  # unused function (eagle3_lint/cli.py)
_._e_Constant  # unused method (eagle3_lint/minieval.py)
_._e_Name  # unused method (eagle3_lint/minieval.py)
_._e_Attribute  # unused method (eagle3_lint/minieval.py)
_._e_Subscript  # unused method (eagle3_lint/minieval.py)
_._e_Slice  # unused method (eagle3_lint/minieval.py)
_._e_Tuple  # unused method (eagle3_lint/minieval.py)
_._e_List  # unused method (eagle3_lint/minieval.py)
_._e_Set  # unused method (eagle3_lint/minieval.py)
_._e_Dict  # unused method (eagle3_lint/minieval.py)
_._e_JoinedStr  # unused method (eagle3_lint/minieval.py)
_._e_FormattedValue  # unused method (eagle3_lint/minieval.py)
_._e_NamedExpr  # unused method (eagle3_lint/minieval.py)
_._e_IfExp  # unused method (eagle3_lint/minieval.py)
_._e_BoolOp  # unused method (eagle3_lint/minieval.py)
_._e_UnaryOp  # unused method (eagle3_lint/minieval.py)
_._e_BinOp  # unused method (eagle3_lint/minieval.py)
_._e_Compare  # unused method (eagle3_lint/minieval.py)
_._e_SetComp  # unused method (eagle3_lint/minieval.py)
_._e_DictComp  # unused method (eagle3_lint/minieval.py)
_._e_Call  # unused method (eagle3_lint/minieval.py)
build_report  # unused function (eagle3_lint/report/__init__.py)
DATA_FILE  # unused variable (eagle3_lint/report/schema.py)
DEF  # unused variable (eagle3_lint/report/schema.py)
DESCRIPTION  # unused variable (eagle3_lint/report/schema.py)
DEF  # unused variable (eagle3_lint/report/schema.py)
DEF  # unused variable (eagle3_lint/report/schema.py)
supported  # unused variable (eagle3_lint/report/schema.py)
unsupported  # unused variable (eagle3_lint/report/schema.py)
wrapper_gap  # unused variable (eagle3_lint/report/schema.py)
partial  # unused variable (eagle3_lint/report/schema.py)
warning  # unused variable (eagle3_lint/report/schema.py)
DEF  # unused variable (eagle3_lint/report/schema.py)
DESCRIPTION  # unused variable (eagle3_lint/report/schema.py)
DEF  # unused variable (eagle3_lint/report/schema.py)
class_  # unused variable (eagle3_lint/report/schema.py)
DEF  # unused variable (eagle3_lint/report/schema.py)
DESCRIPTION  # unused variable (eagle3_lint/report/schema.py)
DEF  # unused variable (eagle3_lint/report/schema.py)
DEF  # unused variable (eagle3_lint/report/schema.py)
column  # unused variable (eagle3_lint/report/schema.py)
end_column  # unused variable (eagle3_lint/report/schema.py)
DEF  # unused variable (eagle3_lint/report/schema.py)
DESCRIPTION  # unused variable (eagle3_lint/report/schema.py)
DEF  # unused variable (eagle3_lint/report/schema.py)
DEF  # unused variable (eagle3_lint/report/schema.py)
DESCRIPTION  # unused variable (eagle3_lint/report/schema.py)
DESCRIPTION  # unused variable (eagle3_lint/report/schema.py)
speculators_format  # unused variable (eagle3_lint/report/schema.py)
class_  # unused variable (eagle3_lint/report/schema.py)
DEF  # unused variable (eagle3_lint/report/schema.py)
DESCRIPTION  # unused variable (eagle3_lint/report/schema.py)
DEF  # unused variable (eagle3_lint/report/schema.py)
DESCRIPTION  # unused variable (eagle3_lint/report/schema.py)
schema_version  # unused variable (eagle3_lint/report/schema.py)
schema_text  # unused function (eagle3_lint/report/schema.py)
conditions  # report model field (eagle3_lint/report/schema.py)
REQUIRED_SECTIONS  # tests/test_ci_catalog.py
parse_spec  # tests/sglang/test_fetch.py
without_entry  # tests/sglang/test_contract_shapes.py
duplicates  # tests/sglang/test_contract.py, test_sweep.py, test_contract_shapes.py
bare_except  # tests/sglang/test_contract.py, scripts/sglang_sweep.py
delegation_guarded  # tests/sglang/test_contract.py
pp_last_rank_only  # tests/sglang/test_contract.py, scripts/sglang_sweep.py
capture_indices  # tests/sglang/test_contract.py
default_indices  # tests/sglang/test_contract.py
looks_like_sglang  # tests/sglang/test_fetch.py
is_plugin_display_path  # tests/test_plugins.py
by_id  # tests/test_real_rules_pp_gate.py
misses  # tests/test_cache.py, bench/bench.py
derived_hits  # tests/test_cache.py
reused  # Queries counters: tests/test_cache.py, bench/bench.py --phases
computed  # Queries counters: bench/bench.py --phases
cutoff  # Queries counter: tests/test_queries.py, bench/bench.py --phases
fast  # pickle.Pickler.fast, set by queries._flat
_.SGLANG  # enum member (eagle3_lint/engines/__init__.py): engines are iterated (all_engines) and looked up by value
# userconfig.py: msgspec Struct fields are the schema, read by msgspec.convert, never by name in our code.
num_hidden_layers  # userconfig.HFConfig
hidden_size  # userconfig.HFConfig
vocab_size  # userconfig.HFConfig
draft_vocab_size  # userconfig.HFConfig
target_hidden_size  # userconfig.HFConfig
generator  # userconfig.HFConfig (a text sub-config key)
llm_config  # userconfig.HFConfig
language_config  # userconfig.HFConfig
thinker_config  # userconfig.HFConfig
use_aux_hidden_state  # userconfig.EagleConfig
eagle_config  # userconfig.DrafterConfig
transformer_layer_config  # userconfig.DrafterConfig
num_speculative_tokens  # userconfig.SpeculativeConfig
hf_overrides  # userconfig.SpeculativeConfig
complete  # unused variable (eagle3_lint/report/schema.py)
findings_left_out  # unused variable (eagle3_lint/report/schema.py)
architectures_left_out  # unused variable (eagle3_lint/report/schema.py)
# engines/drafter_keys.py: the drafter-key table is written by scripts/drafter_keys.py, outside the package.
examine  # scripts/drafter_keys.py, tests/test_drafter_keys.py
DRAFTER_MODULE_GLOBS  # engines/{vllm,sglang}/drafter.py, read by scripts/drafter_keys.py
