//! The table provider: a Parquet scan of the data files C++ plans.
//!
//! DataFusion hands `scan` the projection, the filters and the limit; the
//! filters C++ can use for file pruning are sent to `plan_scan`, and the
//! files it answers are read with DataFusion's Parquet reader, which prunes
//! row groups and pages with the same filters.

use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use async_trait::async_trait;
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::project_schema;
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::parquet::CachedParquetFileReaderFactory;
use datafusion::datasource::physical_plan::{FileGroup, FileScanConfigBuilder, ParquetSource};
use datafusion::datasource::source::DataSourceExec;
use datafusion::error::Result as DFResult;
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown, TableType};
use datafusion::physical_plan::empty::EmptyExec;
use datafusion::physical_plan::ExecutionPlan;
use serde_json::{json, Value};

use crate::catalog::Callbacks;
use crate::error::{TlError, TlResult};
use crate::filters::translate_filters;
use crate::runtime;
use crate::store::Store;

/// One table of the catalog, as resolved for one query.
#[derive(Debug)]
pub struct TimelakeTable {
    schema_name: String,
    table_name: String,
    schema: SchemaRef,
    callbacks: Arc<Callbacks>,
    store: Arc<Store>,
}

impl TimelakeTable {
    pub fn new(
        schema_name: String,
        table_name: String,
        schema: SchemaRef,
        callbacks: Arc<Callbacks>,
        store: Arc<Store>,
    ) -> Self {
        Self {
            schema_name,
            table_name,
            schema,
            callbacks,
            store,
        }
    }

    /// The `plan_scan` request (format documented in the header).
    fn scan_request(
        &self,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> String {
        let projection = projection.map(|indices| {
            indices
                .iter()
                .map(|&i| self.schema.field(i).name().clone())
                .collect::<Vec<_>>()
        });
        json!({
            "filters": translate_filters(filters, &self.schema),
            "projection": projection,
            "limit": limit,
        })
        .to_string()
    }

    /// Parses the `plan_scan` answer into files to read.
    fn parse_files(&self, answer: &str) -> TlResult<Vec<PartitionedFile>> {
        let what = format!("plan_scan({}.{})", self.schema_name, self.table_name);
        let invalid = |why: &str| TlError::internal(format!("{what} returned {why}: {answer}"));
        let value: Value = serde_json::from_str(answer).map_err(|e| invalid(&e.to_string()))?;
        let files = value
            .get("files")
            .and_then(Value::as_array)
            .ok_or_else(|| invalid("no \"files\" array"))?;
        files
            .iter()
            .map(|file| {
                let path = file
                    .get("path")
                    .and_then(Value::as_str)
                    .ok_or_else(|| invalid("a file without \"path\""))?;
                let size = file
                    .get("size")
                    .and_then(Value::as_u64)
                    .ok_or_else(|| invalid("a file without \"size\""))?;
                // The key joined with the warehouse prefix, exactly as
                // tl_store_put wrote it (no re-encoding).
                let location = self.store.location(path)?;
                let mut partitioned = PartitionedFile::new(String::new(), size);
                partitioned.object_meta.location = location;
                Ok(partitioned)
            })
            .collect()
    }
}

#[async_trait]
impl TableProvider for TimelakeTable {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    /// Filters are used to skip files, row groups and pages, never to
    /// decide rows, so DataFusion keeps applying them.
    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> DFResult<Vec<TableProviderFilterPushDown>> {
        Ok(vec![TableProviderFilterPushDown::Inexact; filters.len()])
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> DFResult<Arc<dyn ExecutionPlan>> {
        let request = self.scan_request(projection, filters, limit);
        let callbacks = Arc::clone(&self.callbacks);
        let (schema_name, table_name) = (self.schema_name.clone(), self.table_name.clone());
        let answer = runtime::call_blocking(move || {
            callbacks.plan_scan(&schema_name, &table_name, &request)
        })
        .await
        .and_then(|r| r)
        .map_err(TlError::into_datafusion)?;
        let files = self
            .parse_files(&answer)
            .map_err(TlError::into_datafusion)?;

        if files.is_empty() {
            let projected = project_schema(&self.schema, projection)?;
            return Ok(Arc::new(EmptyExec::new(projected)));
        }

        let object_store_url = ObjectStoreUrl::parse(self.store.base_url().as_str())?;
        let runtime_env = state.runtime_env();
        let client = runtime_env.object_store(&object_store_url)?;
        // Parquet footers are cached per session, like DataFusion's own
        // Parquet tables do; data files are immutable in Iceberg.
        let reader_factory = CachedParquetFileReaderFactory::new(
            client,
            runtime_env.cache_manager.get_file_metadata_cache(),
        );

        let options = state.default_table_options().parquet;
        let metadata_size_hint = options.global.metadata_size_hint;
        let mut source = ParquetSource::new(Arc::clone(&self.schema))
            .with_table_parquet_options(options)
            .with_enable_page_index(true)
            .with_parquet_file_reader_factory(Arc::new(reader_factory));
        if let Some(hint) = metadata_size_hint {
            source = source.with_metadata_size_hint(hint);
        }
        // No `with_predicate` here on purpose: the filters stay in a
        // FilterExec above this scan (they are Inexact), and DataFusion's
        // physical FilterPushdown rule, which always runs, pushes them into
        // this ParquetSource as its pruning predicate (row groups, page
        // index, bloom filters; row-level too with
        // `datafusion.execution.parquet.pushdown_filters`). Setting it here
        // as well would make the source evaluate every filter twice.

        let file_groups =
            FileGroup::new(files).split_files(state.config().target_partitions().max(1));
        let config = FileScanConfigBuilder::new(object_store_url, Arc::new(source))
            .with_file_groups(file_groups)
            .with_projection_indices(projection.cloned())?
            .with_limit(limit)
            .build();
        Ok(DataSourceExec::from_data_source(config))
    }
}
