"""Which functions, relations and settings of a PostgreSQL server astro lets a statement reach, and why.

Default deny, judged on what the server's catalog says a name resolves to
(`resolve.py`), with a first pass on the names alone (`guard.py`):

- **Volatile functions** (`pg_proc.provolatile = 'v'`) are refused: they are the
  ones that change state or reach outside the snapshot (sequences, advisory
  locks, `setseed`, backends, large objects, files, WAL, snapshot export,
  `pg_control_*`, SQL given as text). Allowed: the few below, harmless to run
  and useful to an analyst (`random()`, `clock_timestamp()`, `pg_sleep()` —
  the time limit stops it —, TABLESAMPLE's methods, relation sizes).
- **Stable or immutable functions that show the server rather than the data**
  are refused too: settings (`current_setting` except of an allowed setting
  named by a literal), file paths, network addresses, functions that read a
  table named in a string (`table_to_xml`), and those that burn a transaction id.
- **Functions defined in the database** by a role that is not a superuser are
  refused, whatever their volatility label (a label is a claim, not a proof):
  PL/pgSQL, PL/Python, C, or SQL with a string body, astro cannot see what they
  run. Two exceptions, whose insides the server records and astro judges like
  the statement's own calls: aggregates (their support functions) and SQL
  functions written with `BEGIN ATOMIC`. Functions a superuser owns (extensions,
  the DBA's own) are the deployment's and are judged like built-ins.
- **Relations** that hold secrets or the server's configuration are refused:
  password hashes, user-mapping options, settings and their files, large
  objects' data, subscriptions' connection strings, raw statistics.
- **Settings** may be read (`SHOW x`, `current_setting('x')`) only from the
  allowlist below: how the session reads and writes values, versions, locale,
  planner costs. Paths, files, libraries, addresses, commands and `SHOW ALL` are refused.

`version()` stays allowed: the server's version and platform tell the model
which SQL it can write, as DuckDB's version does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from astro_tui.data.errors import GuardError

VOLATILE_ALLOWED = frozenset(
    {
        "random",
        "random_normal",
        "clock_timestamp",
        "timeofday",
        "gen_random_uuid",
        "pg_sleep",
        "pg_sleep_for",
        "pg_sleep_until",
        "bernoulli",  # TABLESAMPLE BERNOULLI
        "system",  # TABLESAMPLE SYSTEM
        "pg_relation_size",
        "pg_table_size",
        "pg_indexes_size",
        "pg_total_relation_size",
        "pg_database_size",
        "pg_tablespace_size",
        "pg_partition_tree",
        "pg_partition_ancestors",
        "pg_is_in_recovery",
        "pg_jit_available",
    }
)
"""Built-in volatile functions that change nothing and show nothing of the server's files."""

SHOWS_THE_SERVER = frozenset(
    {
        "current_setting",  # allowed only as the statement's own call with an allowed literal
        "pg_show_all_settings",
        "pg_show_all_file_settings",
        "pg_hba_file_rules",
        "pg_ident_file_mappings",
        "pg_config",
        "pg_relation_filepath",
        "pg_tablespace_location",
        "pg_current_logfile",
        "inet_server_addr",
        "inet_server_port",
        "inet_client_addr",
        "inet_client_port",
        "table_to_xml",
        "table_to_xmlschema",
        "table_to_xml_and_xmlschema",
        "schema_to_xml",
        "schema_to_xmlschema",
        "schema_to_xml_and_xmlschema",
        "database_to_xml",
        "database_to_xmlschema",
        "database_to_xml_and_xmlschema",
        "txid_current",
        "pg_current_xact_id",
    }
)
"""Stable or immutable functions refused all the same: the server's configuration, paths and
addresses, a table read by a name in a string, a transaction id burnt."""

_SIDE_EFFECT_NAMES = frozenset(
    {
        "nextval",
        "setval",
        "set_config",
        "setseed",
        "pg_notify",
        "pg_cancel_backend",
        "pg_terminate_backend",
        "pg_reload_conf",
        "pg_rotate_logfile",
        "pg_switch_wal",
        "pg_promote",
        "pg_export_snapshot",
        "pg_log_backend_memory_contexts",
        "pg_import_system_collations",
        "pg_nextoid",
        "pg_read_file",
        "pg_read_binary_file",
        "pg_stat_file",
        "pg_prewarm",
        "brin_summarize_new_values",
        "brin_summarize_range",
        "brin_desummarize_range",
        "gin_clean_pending_list",
        "loread",
        "lowrite",
        "ts_stat",
        "query_to_xml",
        "query_to_xmlschema",
        "query_to_xml_and_xmlschema",
        "cursor_to_xml",
        "cursor_to_xmlschema",
        "http",
        "crosstab",  # tablefunc (a trusted extension: any role with CREATE may install it): runs SQL text
        "crosstab2",
        "crosstab3",
        "crosstab4",
        "connectby",  # tablefunc: builds SQL from the relation and column names it is given
        "xpath_table",  # xml2: the same, from a relation name and a WHERE clause in strings
    }
)
_SIDE_EFFECT_PREFIXES = (
    "lo_",
    "pg_advisory",
    "pg_try_advisory",
    "pg_control_",
    "pg_ls_",
    "pg_file_",
    "dblink",
    "pg_stat_reset",
    "pg_backup_",
    "pg_start_backup",
    "pg_stop_backup",
    "pg_wal_replay_",
    "pg_create_",
    "pg_drop_",
    "pg_copy_",
    "pg_replication_",
    "pg_logical_",
    "binary_upgrade_",
    "pg_stat_statements_reset",
    "pg_logdir_ls",
    "pg_background",  # extension: runs SQL text in a background worker, in its own transaction
    "http_",  # extensions pgsql-http and pg_net (net.http_get): requests from the server
)
"""Names refused on sight, before the catalog is asked: a clear message, and a layer that holds
even for an extension's function of that name."""

DENIED_RELATIONS = {
    ("pg_catalog", "pg_authid"): "holds password hashes",
    ("pg_catalog", "pg_shadow"): "holds password hashes",
    ("pg_catalog", "pg_user_mapping"): "holds the options (passwords) of user mappings",
    ("pg_catalog", "pg_user_mappings"): "holds the options (passwords) of user mappings",
    ("information_schema", "user_mapping_options"): "holds the options (passwords) of user mappings",
    ("information_schema", "_pg_user_mappings"): "holds the options (passwords) of user mappings",
    ("pg_catalog", "pg_subscription"): "holds connection strings",
    ("pg_catalog", "pg_settings"): "shows the server's configuration (paths, files, libraries)",
    ("pg_catalog", "pg_file_settings"): "shows the server's configuration files",
    ("pg_catalog", "pg_hba_file_rules"): "shows the server's authentication file",
    ("pg_catalog", "pg_ident_file_mappings"): "shows the server's authentication file",
    ("pg_catalog", "pg_config"): "shows how and where the server was built and installed",
    ("pg_catalog", "pg_db_role_setting"): "shows settings of other roles and databases",
    ("pg_catalog", "pg_roles"): "shows other roles' settings (rolconfig); information_schema lists roles",
    ("pg_catalog", "pg_user"): "shows other roles' settings (useconfig); information_schema lists roles",
    ("pg_catalog", "pg_largeobject"): "holds large objects' data, which astro does not read",
    ("pg_catalog", "pg_statistic"): "holds raw samples of every column, past column privileges",
    ("pg_catalog", "pg_statistic_ext_data"): "holds raw samples of every column, past column privileges",
}

SETTINGS_ALLOWED = frozenset(
    {
        "application_name",
        "array_nulls",
        "backslash_quote",
        "block_size",
        "bytea_output",
        "client_encoding",
        "client_min_messages",
        "constraint_exclusion",
        "cpu_index_tuple_cost",
        "cpu_operator_cost",
        "cpu_tuple_cost",
        "cursor_tuple_fraction",
        "data_checksums",
        "datestyle",
        "default_statistics_target",
        "default_table_access_method",
        "default_text_search_config",
        "default_transaction_deferrable",
        "default_transaction_isolation",
        "default_transaction_read_only",
        "effective_cache_size",
        "effective_io_concurrency",
        "escape_string_warning",
        "extra_float_digits",
        "from_collapse_limit",
        "geqo",
        "geqo_threshold",
        "idle_in_transaction_session_timeout",
        "in_hot_standby",
        "integer_datetimes",
        "intervalstyle",
        "is_superuser",
        "jit",
        "join_collapse_limit",
        "lc_collate",
        "lc_ctype",
        "lc_messages",
        "lc_monetary",
        "lc_numeric",
        "lc_time",
        "lock_timeout",
        "maintenance_work_mem",
        "max_connections",
        "max_function_args",
        "max_identifier_length",
        "max_index_keys",
        "max_parallel_workers",
        "max_parallel_workers_per_gather",
        "max_worker_processes",
        "parallel_setup_cost",
        "parallel_tuple_cost",
        "quote_all_identifiers",
        "random_page_cost",
        "role",
        "row_security",
        "search_path",
        "segment_size",
        "seq_page_cost",
        "server_encoding",
        "server_version",
        "server_version_num",
        "session_authorization",
        "shared_buffers",
        "standard_conforming_strings",
        "statement_timeout",
        "synchronize_seqscans",
        "temp_buffers",
        "timezone",
        "timezone_abbreviations",
        "transaction_deferrable",
        "transaction_isolation",
        "transaction_read_only",
        "transform_null_equals",
        "wal_block_size",
        "work_mem",
        "xmlbinary",
        "xmloption",
    }
)
_SETTING_PREFIXES_ALLOWED = ("enable_",)  # the planner's switches


def check_setting(name: str, *, how: str) -> None:
    """`SHOW name` or `current_setting('name')`: only settings on the allowlist."""
    lowered = name.lower()
    if lowered in SETTINGS_ALLOWED or lowered.startswith(_SETTING_PREFIXES_ALLOWED):
        return
    if lowered == "all":
        raise GuardError("refused: SHOW ALL lists the server's paths and files; SHOW one setting instead")
    raise GuardError(
        f"refused: {how} {name} is not on astro's list of settings a query may read "
        "(the server's paths, files, libraries, addresses and commands stay hidden)"
    )


def check_function_name(name: str, args: list[Any] | None, *, field_notation: bool = False) -> None:
    """Refusals the name alone decides; the catalog judges the rest (`judge_function`)."""
    lowered = name.lower()
    if field_notation:  # a column may share a name with a function: the catalog says which exists
        if lowered == "current_setting":
            raise GuardError("refused: field notation .current_setting calls current_setting() unseen")
        return
    how = f"{name}()"
    if lowered in _SIDE_EFFECT_NAMES or lowered.startswith(_SIDE_EFFECT_PREFIXES):
        raise GuardError(
            f"refused: {how} has side effects, reaches the server's files or runs SQL unseen; "
            "not a read-only query"
        )
    if lowered in SHOWS_THE_SERVER - {"current_setting"}:
        raise GuardError(f"refused: {how} shows the server, not the data")
    if lowered == "current_setting":
        first = (args or [None])[0]
        if isinstance(first, dict) and _text_cast(first.get("TypeCast")):  # current_setting('x'::text)
            first = first["TypeCast"].get("arg")
        literal = first.get("A_Const", {}).get("sval", {}).get("sval") if isinstance(first, dict) else None
        if not isinstance(literal, str):
            raise GuardError(
                "refused: current_setting() may read only a setting named by a literal, "
                "e.g. current_setting('TimeZone')"
            )
        check_setting(literal, how="current_setting")


def _text_cast(cast: Any) -> bool:
    """A cast of a literal to text or varchar, which leaves the setting's name as written."""
    names = cast.get("typeName", {}).get("names", []) if isinstance(cast, dict) else []
    last = names[-1].get("String", {}).get("sval") if names and isinstance(names[-1], dict) else None
    return last in ("text", "varchar")


@dataclass(frozen=True, slots=True)
class Function:
    """One pg_proc row a name resolved to, with what decides whether astro lets it run."""

    schema: str
    name: str
    volatility: str
    kind: str
    language: str
    built_in: bool
    superuser_owned: bool
    atomic_body: bool
    direct: bool
    """Named by the statement's own text (not reached through a view, policy, domain or body)."""

    @property
    def qualified(self) -> str:
        return f"{self.schema}.{self.name}"


def judge_function(fn: Function) -> str | None:
    """Why this function may not run, or None when it may."""
    where = "" if fn.direct else " (called by a view, policy, domain check or function it uses)"
    if not fn.built_in and not fn.superuser_owned:
        judged_inside = fn.kind == "a" or (fn.language == "sql" and fn.atomic_body)
        if not judged_inside:
            return (
                f"{fn.qualified}(){where} is defined in this database by a role that is not a "
                f"superuser, in {fn.language}: astro cannot see what it runs"
            )
    name = fn.name.lower()
    if name in SHOWS_THE_SERVER and not (name == "current_setting" and fn.direct and fn.built_in):
        return f"{fn.qualified}(){where} shows the server, not the data"
    if fn.volatility == "v" and not (fn.built_in and name in VOLATILE_ALLOWED):
        return (
            f"{fn.qualified}(){where} is volatile: it may change state that outlives the statement "
            "or reach outside the database"
        )
    if name in _SIDE_EFFECT_NAMES or name.startswith(_SIDE_EFFECT_PREFIXES):
        return f"{fn.qualified}(){where} has side effects or reaches the server's files"
    return None


def judge_relation(schema: str, name: str, built_in: bool, kind: str | None = None) -> str | None:
    """Why reading this relation is refused, or None."""
    if kind == "f":
        return (
            f"{schema}.{name} is a foreign table: reading it runs a query (or a program) elsewhere, "
            "in a session astro cannot judge or reset"
        )
    reason = DENIED_RELATIONS.get((schema, name)) if built_in else None
    return f"{schema}.{name} {reason}" if reason else None
