//! SQL sessions: a DataFusion `SessionContext` whose default catalog is the
//! C++-backed "timelake" catalog and whose object store is the store's
//! client.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use arrow::array::{Array, StringArray};
use arrow::compute::cast;
use arrow::datatypes::DataType;
use arrow::ffi_stream::FFI_ArrowArrayStream;
use datafusion::execution::cache::cache_manager::CacheManagerConfig;
use datafusion::execution::context::SQLOptions;
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::logical_expr::ScalarUDF;
use datafusion::physical_plan::{collect, execute_stream};
use datafusion::prelude::{SessionConfig, SessionContext};
use datafusion::sql::parser::DFParser;
use datafusion::sql::resolve::resolve_table_references;

use crate::callbacks::Callbacks;
use crate::catalog::{TimelakeCatalog, CATALOG};
use crate::datetrunc::UtcDateTrunc;
use crate::error::{from_datafusion, Phase, TlError, TlResult};
use crate::lastvalue::LastValueRewrite;
use crate::m4::M4;
use crate::rollup;
use crate::routing::RollupRouting;
use crate::runavg::RunAvg;
use crate::runtime;
use crate::settings::TimelakeOptions;
use crate::store::redact;
use crate::store::Store;
use crate::stream;
use crate::timetravel::{AsOf, Snapshots};
use crate::twm::TimeWeighted;

pub const DEFAULT_SCHEMA: &str = "default";

/// `time_bucket(interval, ts [, origin])`: DataFusion's `date_bin` under
/// the name time-series users know (same results, origin 1970-01-01 UTC by
/// default).
fn time_bucket() -> ScalarUDF {
    let date_bin = datafusion::functions::datetime::date_bin();
    ScalarUDF::new_from_shared_impl(Arc::clone(date_bin.inner())).with_aliases(["time_bucket"])
}

/// What SQL may do in a session: queries and SET, but no DDL (CREATE/DROP
/// TABLE, CREATE EXTERNAL TABLE over arbitrary files) and no DML (INSERT,
/// COPY … TO a file): tables change only through the engine's commits.
fn query_options() -> SQLOptions {
    SQLOptions::new()
        .with_allow_ddl(false)
        .with_allow_dml(false)
        .with_allow_statements(true)
}

/// The tables of the Timelake catalog that `sql` (one statement) reads, as
/// "namespace.table", found by parsing it only: no session, no callback.
/// A statement that does not parse, or is not one statement, names none
/// (planning it reports why). Names are normalized as planning does
/// (unquoted identifiers lower case) and a bare name is in the default
/// namespace. `information_schema` and CTE names are not tables here.
pub fn statement_tables(sql: &str) -> Vec<String> {
    let Ok(mut statements) = DFParser::parse_sql(sql) else {
        return Vec::new();
    };
    let (Some(statement), true) = (statements.pop_front(), statements.is_empty()) else {
        return Vec::new();
    };
    let Ok((tables, _ctes)) = resolve_table_references(&statement, true) else {
        return Vec::new();
    };
    let mut names: Vec<String> = tables
        .into_iter()
        .map(|t| t.resolve(CATALOG, DEFAULT_SCHEMA))
        .filter(|t| t.catalog.as_ref() == CATALOG && t.schema.as_ref() != "information_schema")
        .map(|t| format!("{}.{}", t.schema, t.table))
        .collect();
    names.sort();
    names.dedup();
    names
}

pub struct Session {
    ctx: SessionContext,
    store: Arc<Store>,
    /// Credentials to scrub from every message (query errors may quote
    /// storage requests).
    secrets: Arc<Vec<String>>,
    /// Set by [`Session::interrupt`] (from any thread, or a signal handler);
    /// cleared when the next statement starts. Shared with the result
    /// streams, whose reads it stops too.
    interrupted: Arc<AtomicBool>,
}

impl Session {
    /// Creates a session whose catalog asks `callbacks`.
    pub fn new(store: Arc<Store>, callbacks: Callbacks, target_partitions: u32) -> TlResult<Self> {
        // The runtime's threads start now if they have not: the first
        // statement's tables load beside this (C++ Session::EnsureStarted)
        // and their requests need them at once.
        runtime::handle();
        let callbacks = Arc::new(callbacks);
        let mut config = SessionConfig::new()
            .with_information_schema(true)
            // Our catalog replaces DataFusion's in-memory default.
            .with_create_default_catalog_and_schema(false)
            .with_default_catalog_and_schema(CATALOG, DEFAULT_SCHEMA);
        if target_partitions > 0 {
            config = config.with_target_partitions(target_partitions as usize);
        }
        config = config.with_option_extension(TimelakeOptions::new(Arc::clone(&callbacks))?);
        // Footers are cached per store, not per session: a lake's sessions
        // (and the footers its head carries, crate::footers) share them.
        let runtime = RuntimeEnvBuilder::new()
            .with_cache_manager(
                CacheManagerConfig::default()
                    .with_file_metadata_cache(Some(Arc::clone(store.footers()))),
            )
            .build_arc()
            .map_err(|e| from_datafusion(&e, Phase::Planning))?;
        // Gap filling and ASOF JOIN: rules and operators (crate::planner).
        let state = crate::planner::install(
            SessionStateBuilder::new()
                .with_config(config)
                .with_runtime_env(runtime)
                .with_default_features(),
        )
        .build();
        let ctx = SessionContext::new_with_state(state);
        crate::planner::register_functions(&ctx);
        ctx.register_udf(time_bucket());
        // Replaces the built-in date_trunc: the same results, fast for the
        // UTC time columns of Timelake tables (crate::datetrunc).
        ctx.register_udf(UtcDateTrunc::udf());
        // The same `avg`, a run of one group's rows at a time (crate::runavg).
        ctx.register_udaf(RunAvg::udaf());
        // The time-series aggregates (SPEC §6, docs/sql.md).
        ctx.register_udaf(M4::udaf());
        ctx.register_udaf(TimeWeighted::mean_udaf());
        ctx.register_udaf(TimeWeighted::state_udaf());
        // The newest row per series reads the last-value index: rewritten
        // before the optimizer runs where the form is plain, after it for
        // the rest (crate::lastvalue).
        ctx.add_analyzer_rule(Arc::new(LastValueRewrite));
        ctx.add_optimizer_rule(Arc::new(LastValueRewrite));
        // GROUP BY time_bucket(…) queries read covering rollups (crate::routing).
        ctx.add_analyzer_rule(Arc::new(RollupRouting));
        // The same client for scans as for the C API: one connection pool,
        // one retry policy, one trace.
        ctx.register_object_store(store.base_url(), Arc::clone(store.client()));
        let secrets = store.secrets();
        // Time travel: as_of(table, snapshot | time), snapshots(table).
        ctx.register_udtf(
            "as_of",
            Arc::new(AsOf::new(Arc::clone(&callbacks), Arc::clone(&store))),
        );
        ctx.register_udtf(
            "snapshots",
            Arc::new(Snapshots::new(Arc::clone(&callbacks))),
        );
        ctx.register_catalog(
            CATALOG,
            Arc::new(TimelakeCatalog::new(callbacks, Arc::clone(&store))),
        );
        Ok(Self {
            ctx,
            store,
            secrets,
            interrupted: Arc::new(AtomicBool::new(false)),
        })
    }

    /// Scans read around the store's block cache from now on
    /// (`tl_session_bypass_cache`).
    pub fn bypass_cache(&self) {
        self.ctx.register_object_store(
            self.store.base_url(),
            Arc::clone(self.store.uncached_client()),
        );
    }

    fn scrub(&self, mut error: TlError) -> TlError {
        error.message = redact(&error.message, &self.secrets);
        error
    }

    /// Sets a configuration option, exactly as `SET key = 'value'` would
    /// (which also covers `datafusion.runtime.*` options).
    pub fn set_option(&self, key: &str, value: &str) -> TlResult<()> {
        let valid_key = !key.is_empty()
            && key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
        if !valid_key {
            return Err(TlError::invalid(format!("invalid option name {key:?}")));
        }
        let statement = format!("SET {key} = '{}'", value.replace('\'', "''"));
        let ctx = self.ctx.clone();
        runtime::run(async move {
            ctx.sql(&statement)
                .await
                .map(|_| ())
                .map_err(|e| from_datafusion(&e, Phase::Planning))
        })?
        .map_err(|e| self.scrub(e))
    }

    /// Makes the statement running (its planning, or a read of its result
    /// stream) fail with TL_CANCELLED at once. Only an atomic store: safe in
    /// a signal handler.
    pub fn interrupt(&self) {
        self.interrupted.store(true, Ordering::SeqCst);
    }

    /// Plans `sql` and starts it; the result streams through the returned
    /// Arrow C stream. An interrupt before this call is forgotten.
    pub fn sql(&self, sql: &str) -> TlResult<FFI_ArrowArrayStream> {
        self.interrupted.store(false, Ordering::SeqCst);
        let ctx = self.ctx.clone();
        let sql = sql.to_string();
        let planned = runtime::run_interruptible(
            async move {
                let plan_err = |e| from_datafusion(&e, Phase::Planning);
                let (plan, task_ctx) = crate::planner::plan(&ctx, &sql, query_options())
                    .await
                    .map_err(plan_err)?;
                execute_stream(plan, task_ctx).map_err(|e| from_datafusion(&e, Phase::Execution))
            },
            &self.interrupted,
        );
        let batches = planned?.map_err(|e| self.scrub(e))?;
        Ok(stream::export(
            batches,
            Arc::clone(&self.secrets),
            Arc::clone(&self.interrupted),
        ))
    }

    /// The shape of a rollup's defining `SELECT` as JSON (crate::rollup::describe).
    pub fn describe_rollup(&self, select: &str) -> TlResult<String> {
        self.interrupted.store(false, Ordering::SeqCst);
        let ctx = self.ctx.clone();
        let select = select.to_string();
        let described = runtime::run_interruptible(
            async move { rollup::describe(&ctx, &select).await },
            &self.interrupted,
        );
        described?.map_err(|e| self.scrub(e))
    }

    /// Runs `EXPLAIN ANALYZE <sql>` and returns the annotated plan.
    pub fn explain_analyze(&self, sql: &str) -> TlResult<String> {
        self.interrupted.store(false, Ordering::SeqCst);
        let ctx = self.ctx.clone();
        let statement = format!("EXPLAIN ANALYZE {sql}");
        let ran = runtime::run_interruptible(
            async move {
                let plan_err = |e| from_datafusion(&e, Phase::Planning);
                let (plan, task_ctx) = crate::planner::plan(&ctx, &statement, query_options())
                    .await
                    .map_err(plan_err)?;
                collect(plan, task_ctx)
                    .await
                    .map_err(|e| from_datafusion(&e, Phase::Execution))
            },
            &self.interrupted,
        );
        let batches = ran?.map_err(|e| self.scrub(e))?;

        let mut lines = Vec::new();
        for batch in &batches {
            let column = batch
                .column_by_name("plan")
                .ok_or_else(|| TlError::internal("EXPLAIN ANALYZE returned no plan column"))?;
            let text = cast(column, &DataType::Utf8)
                .map_err(|e| TlError::internal(format!("EXPLAIN ANALYZE output: {e}")))?;
            let text = text
                .as_any()
                .downcast_ref::<StringArray>()
                .ok_or_else(|| TlError::internal("EXPLAIN ANALYZE output is not text"))?;
            lines.extend(text.iter().flatten().map(str::to_string));
        }
        Ok(lines.join("\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::statement_tables;

    #[test]
    fn statement_tables_names_the_catalog_tables_a_statement_reads() {
        let cases: &[(&str, &[&str])] = &[
            (
                "SELECT * FROM bench.cpu WHERE hostname = 'a'",
                &["bench.cpu"],
            ),
            // A bare name is in the default namespace; unquoted names are
            // lower case, quoted ones keep their case.
            ("select * from CPU", &["default.cpu"]),
            (r#"SELECT * FROM "Bench"."Cpu""#, &["Bench.Cpu"]),
            ("SELECT * FROM timelake.bench.cpu", &["bench.cpu"]),
            // Joins, subqueries and repeats: each table once, sorted.
            (
                "SELECT * FROM b.x JOIN a.y ON x.k = y.k \
                 WHERE x.v IN (SELECT v FROM a.y) AND EXISTS (SELECT 1 FROM c.z)",
                &["a.y", "b.x", "c.z"],
            ),
            // A CTE is not a table; the table it reads is.
            (
                "WITH recent AS (SELECT * FROM bench.cpu) SELECT * FROM recent",
                &["bench.cpu"],
            ),
            // Other catalogs and information_schema are not the lake's.
            ("SELECT * FROM other.bench.cpu", &[]),
            ("SELECT * FROM information_schema.tables", &[]),
            ("SELECT 1", &[]),
            ("SET datafusion.execution.batch_size = 100", &[]),
            // What does not parse, or is not one statement, names nothing:
            // planning reports the error.
            ("SELEC * FROM bench.cpu", &[]),
            ("SELECT * FROM a.b; SELECT * FROM c.d", &[]),
        ];
        for (sql, want) in cases {
            assert_eq!(statement_tables(sql), *want, "{sql}");
        }
    }
}
