"""vulture whitelist: names used in ways vulture cannot see (issue 15).

- report/schema.py: the report model's fields are read through ``dataclasses.fields`` (``dump``, the schema
  generator) and its ``DEF``/``DESCRIPTION`` class variables through ``__dict__``; ``DATA_FILE`` and
  ``schema_text`` are used by scripts/report_schema.py and the tests; ``build_report`` by the tests.
- cli.py: click commands are registered by their decorators.
- minieval.py: the ``_e_<Node>`` evaluators are dispatched by name.
- read outside the package only: by tests/ (catalog's required sections, the SGLang engine's registry/runner/
  setter facts and helpers, plugins.is_plugin_display_path, rules.by_id, the store's hit/miss counters), by
  scripts/sglang_sweep.py and bench/bench.py.

Regenerate the model's part with ``vulture --make-whitelist | grep report/schema.py``. Not executed: vulture only
reads the names.
"""
# ruff: noqa
trace  # unused function (eagle3_lint/cli.py:260)
trace  # unused function (eagle3_lint/cli.py:260)
rules_cmd  # unused function (eagle3_lint/cli.py:282)
explain  # unused function (eagle3_lint/cli.py:314)
_._e_Constant  # unused method (eagle3_lint/minieval.py:607)
_._e_Name  # unused method (eagle3_lint/minieval.py:610)
_._e_Attribute  # unused method (eagle3_lint/minieval.py:625)
_._e_Subscript  # unused method (eagle3_lint/minieval.py:677)
_._e_Slice  # unused method (eagle3_lint/minieval.py:691)
_._e_Tuple  # unused method (eagle3_lint/minieval.py:699)
_._e_List  # unused method (eagle3_lint/minieval.py:702)
_._e_Set  # unused method (eagle3_lint/minieval.py:705)
_._e_Dict  # unused method (eagle3_lint/minieval.py:724)
_._e_JoinedStr  # unused method (eagle3_lint/minieval.py:741)
_._e_FormattedValue  # unused method (eagle3_lint/minieval.py:754)
_._e_NamedExpr  # unused method (eagle3_lint/minieval.py:757)
_._e_IfExp  # unused method (eagle3_lint/minieval.py:762)
_._e_BoolOp  # unused method (eagle3_lint/minieval.py:769)
_._e_UnaryOp  # unused method (eagle3_lint/minieval.py:783)
_._e_BinOp  # unused method (eagle3_lint/minieval.py:801)
_._e_Compare  # unused method (eagle3_lint/minieval.py:848)
_._e_SetComp  # unused method (eagle3_lint/minieval.py:938)
_._e_DictComp  # unused method (eagle3_lint/minieval.py:942)
_._e_Call  # unused method (eagle3_lint/minieval.py:956)
build_report  # unused function (eagle3_lint/report/__init__.py:30)
DATA_FILE  # unused variable (eagle3_lint/report/schema.py:42)
engine  # unused variable (eagle3_lint/report/schema.py:104)
engine_version  # unused variable (eagle3_lint/report/schema.py:105)
DEF  # unused variable (eagle3_lint/report/schema.py:110)
DESCRIPTION  # unused variable (eagle3_lint/report/schema.py:122)
DEF  # unused variable (eagle3_lint/report/schema.py:142)
DEF  # unused variable (eagle3_lint/report/schema.py:162)
supported  # unused variable (eagle3_lint/report/schema.py:196)
unsupported  # unused variable (eagle3_lint/report/schema.py:197)
wrapper_gap  # unused variable (eagle3_lint/report/schema.py:198)
partial  # unused variable (eagle3_lint/report/schema.py:199)
warning  # unused variable (eagle3_lint/report/schema.py:206)
DEF  # unused variable (eagle3_lint/report/schema.py:219)
DESCRIPTION  # unused variable (eagle3_lint/report/schema.py:220)
DEF  # unused variable (eagle3_lint/report/schema.py:229)
class_  # unused variable (eagle3_lint/report/schema.py:232)
DEF  # unused variable (eagle3_lint/report/schema.py:244)
DESCRIPTION  # unused variable (eagle3_lint/report/schema.py:245)
DEF  # unused variable (eagle3_lint/report/schema.py:257)
DEF  # unused variable (eagle3_lint/report/schema.py:269)
column  # unused variable (eagle3_lint/report/schema.py:276)
end_column  # unused variable (eagle3_lint/report/schema.py:278)
DEF  # unused variable (eagle3_lint/report/schema.py:298)
DESCRIPTION  # unused variable (eagle3_lint/report/schema.py:299)
DEF  # unused variable (eagle3_lint/report/schema.py:314)
DEF  # unused variable (eagle3_lint/report/schema.py:326)
DESCRIPTION  # unused variable (eagle3_lint/report/schema.py:327)
DESCRIPTION  # unused variable (eagle3_lint/report/schema.py:340)
speculators_format  # unused variable (eagle3_lint/report/schema.py:347)
class_  # unused variable (eagle3_lint/report/schema.py:373)
DEF  # unused variable (eagle3_lint/report/schema.py:394)
DESCRIPTION  # unused variable (eagle3_lint/report/schema.py:395)
DEF  # unused variable (eagle3_lint/report/schema.py:405)
DESCRIPTION  # unused variable (eagle3_lint/report/schema.py:406)
engine  # unused variable (eagle3_lint/report/schema.py:409)
engine_version  # unused variable (eagle3_lint/report/schema.py:410)
stage  # unused variable (eagle3_lint/report/schema.py:413)
aux_layer_ids  # unused variable (eagle3_lint/report/schema.py:414)
aux_layer_ids_source  # unused variable (eagle3_lint/report/schema.py:415)
drafter_trained_ids  # unused variable (eagle3_lint/report/schema.py:416)
drafter_architecture  # unused variable (eagle3_lint/report/schema.py:417)
next_step  # unused variable (eagle3_lint/report/schema.py:419)
schema_version  # unused variable (eagle3_lint/report/schema.py:426)
serving  # unused variable (eagle3_lint/report/schema.py:443)
schema_text  # unused function (eagle3_lint/report/schema.py:599)
conditions  # report model field (eagle3_lint/report/schema.py:385, 404)
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
