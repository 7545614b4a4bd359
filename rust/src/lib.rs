//! Timelake's platform layer: one object_store client and Apache DataFusion
//! behind the C ABI of `include/timelake_platform.h`.
//!
//! - [`store`]: warehouse storage (`tl_store_*`), with [`trace`] for
//!   `TIMELAKE_TRACE=storage` and [`cache`], the block cache of immutable
//!   objects; [`prefetch`] reads a row group with one request when filters
//!   are evaluated in the scan.
//! - [`session`]: SQL sessions (`tl_session_*`) whose catalog ([`catalog`])
//!   and tables ([`provider`], [`filters`]) are answered by C++ callbacks
//!   ([`callbacks`], a leaf: it uses no other module but [`error`]).
//! - [`ffi`]: the `extern "C"` functions themselves; [`stream`] exports
//!   query results as Arrow C streams.
//! - [`runtime`]: the crate's tokio runtime and the sync/async bridges.
//! - [`m4`], [`twm`] (with [`tsargs`]): the time-series aggregates
//!   `m4`, `time_weighted_mean` and `time_weighted_state`.
//! - [`rollup`], [`routing`]: materialized rollups' definitions as SQL
//!   reads them, and the routing of `GROUP BY time_bucket` queries to them.
//! - [`planner`]: gap filling ([`gapfill`], [`gapfill_exec`]), ASOF JOIN
//!   ([`asof`], [`asof_exec`], reading sorted scans with [`sorted_scan`])
//!   and the plans of time-weighted means ([`twmplan`]).
//! - [`timetravel`]: the table functions `as_of` and `snapshots`;
//!   [`fieldids`]: data file columns found by Iceberg field id.
//! - [`datetrunc`], [`runavg`]: `date_trunc` and `avg` with the built-ins'
//!   results, faster on the shapes Timelake tables give them.

pub mod asof;
pub mod asof_exec;
pub mod cache;
pub mod callbacks;
pub mod catalog;
pub mod datetrunc;
pub mod dedup;
pub mod error;
pub mod ffi;
pub mod fieldids;
pub mod filters;
pub mod footers;
pub mod gapfill;
pub mod gapfill_exec;
pub mod lastvalue;
pub mod m4;
pub mod naming;
pub mod planner;
pub mod prefetch;
pub mod provider;
pub mod rollup;
pub mod routing;
pub mod runavg;
pub mod runtime;
pub mod session;
pub mod settings;
pub mod sorted_scan;
pub mod store;
pub mod stream;
pub mod timetravel;
pub mod trace;
pub mod tsargs;
pub mod twm;
pub mod twmplan;

pub use datafusion;
pub use object_store;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod ts_sql_tests;
#[cfg(test)]
mod tsagg_tests;
