//! The "timelake" catalog: DataFusion's catalog traits answered by the C++
//! callbacks of `TlCatalogCallbacks` (see [`crate::callbacks`]).
//!
//! Callbacks block (they may read Iceberg metadata from storage), so they
//! never run on a tokio worker thread as such: they run on the query's own
//! thread, or with the worker handed over (`block_in_place`; see
//! [`crate::runtime::call_blocking`]).

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::catalog::{CatalogProvider, SchemaProvider, TableProvider};
use datafusion::error::{DataFusionError, Result as DFResult};
use datafusion::logical_expr::TableType;

use crate::callbacks::Callbacks;
use crate::error::{TlError, TlResult};
use crate::provider::TimelakeTable;
use crate::runtime;
use crate::store::Store;

/// The name of the one catalog a session has (`timelake.<schema>.<table>`).
pub const CATALOG: &str = "timelake";

/// Logs a callback failure that a DataFusion trait method cannot return
/// (the listing methods are infallible) and continues with nothing.
fn or_empty(result: TlResult<Vec<String>>) -> Vec<String> {
    result.unwrap_or_else(|e| {
        eprintln!("timelake: {e}");
        Vec::new()
    })
}

/// The catalog "timelake".
#[derive(Debug)]
pub struct TimelakeCatalog {
    callbacks: Arc<Callbacks>,
    store: Arc<Store>,
}

impl TimelakeCatalog {
    pub fn new(callbacks: Arc<Callbacks>, store: Arc<Store>) -> Self {
        Self { callbacks, store }
    }
}

impl CatalogProvider for TimelakeCatalog {
    fn schema_names(&self) -> Vec<String> {
        or_empty(runtime::call_blocking_sync(|| {
            self.callbacks.list_schemas()
        }))
    }

    /// Every name resolves to a schema provider without asking C++: whether
    /// a table exists is settled by `table()`, and this saves a round trip
    /// (possibly to storage) for every table reference in every query.
    fn schema(&self, name: &str) -> Option<Arc<dyn SchemaProvider>> {
        Some(Arc::new(TimelakeSchema {
            name: name.to_string(),
            callbacks: Arc::clone(&self.callbacks),
            store: Arc::clone(&self.store),
        }))
    }
}

/// One namespace of the catalog.
#[derive(Debug)]
pub struct TimelakeSchema {
    name: String,
    callbacks: Arc<Callbacks>,
    store: Arc<Store>,
}

#[async_trait]
impl SchemaProvider for TimelakeSchema {
    fn table_names(&self) -> Vec<String> {
        or_empty(runtime::call_blocking_sync(|| {
            self.callbacks.list_tables(&self.name)
        }))
    }

    async fn table(&self, name: &str) -> DFResult<Option<Arc<dyn TableProvider>>, DataFusionError> {
        let arrow_schema = runtime::call_blocking(|| self.callbacks.table_schema(&self.name, name))
            .await
            .and_then(|r| r)
            .map_err(TlError::into_datafusion)?;
        Ok(arrow_schema.map(|arrow_schema| {
            Arc::new(TimelakeTable::new(
                self.name.clone(),
                name.to_string(),
                arrow_schema,
                Arc::clone(&self.callbacks),
                Arc::clone(&self.store),
            )) as Arc<dyn TableProvider>
        }))
    }

    /// Tables listed by C++ are Iceberg tables: base tables. Answering
    /// without a callback keeps `information_schema.tables` and `SHOW
    /// TABLES` from fetching every table's schema.
    async fn table_type(&self, _name: &str) -> DFResult<Option<TableType>> {
        Ok(Some(TableType::Base))
    }

    fn table_exist(&self, name: &str) -> bool {
        runtime::call_blocking_sync(|| self.callbacks.table_schema(&self.name, name))
            .map(|s| s.is_some())
            .unwrap_or_else(|e| {
                eprintln!("timelake: {e}");
                false
            })
    }
}
