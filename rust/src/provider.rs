//! The table provider: a Parquet scan of the data files C++ plans.
//!
//! DataFusion hands `scan` the projection, the filters and the limit; the
//! filters C++ can use for file pruning are sent to `plan_scan`, and the
//! files it answers are read with DataFusion's Parquet reader, which prunes
//! row groups and pages with the same filters.

use std::sync::Arc;

use arrow::array::{Array, BooleanArray, Int32Array, Int64Array, RecordBatch, StringArray};
use arrow::compute::SortOptions;
use arrow::datatypes::{DataType, Field, FieldRef, Schema as ArrowSchema, SchemaRef};
use async_trait::async_trait;
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::project_schema;
use datafusion::common::ScalarValue;
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::parquet::ParquetRowSelection;
use datafusion::datasource::physical_plan::parquet::{
    CachedParquetFileReaderFactory, ParquetFileReaderFactory,
};
use datafusion::datasource::physical_plan::{FileGroup, FileScanConfigBuilder, ParquetSource};
use datafusion::datasource::source::DataSourceExec;
use datafusion::datasource::table_schema::TableSchema;
use datafusion::error::{DataFusionError, Result as DFResult};
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown, TableType};
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_expr::{LexOrdering, PhysicalExpr, PhysicalSortExpr};
use datafusion::physical_plan::empty::EmptyExec;
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::sorts::sort::SortExec;
use datafusion::physical_plan::sorts::sort_preserving_merge::SortPreservingMergeExec;
use datafusion::physical_plan::union::UnionExec;
use datafusion::physical_plan::ExecutionPlan;
use parquet::arrow::arrow_reader::{RowSelection, RowSelector};
use serde_json::json;

use crate::callbacks::Callbacks;
use crate::dedup::DedupExec;
use crate::error::{TlError, TlResult};
use crate::fieldids::FieldIdAdapterFactory;
use crate::filters::translate_filters;
use crate::footers;
use crate::naming::NamingReaderFactory;
use crate::prefetch::{PrefetchReaderFactory, Projected};
use crate::runtime;
use crate::settings::TimelakeOptions;
use crate::store::Store;

/// Schema metadata keys C++ sets on a table's schema in `table_schema`
/// (taken off before DataFusion sees the schema): the time column, and
/// whether the table has rollups (`timelake.rollups`, not empty).
pub const TIME_COLUMN_KEY: &str = "timelake.time-column";
pub const ROLLUPS_KEY: &str = "timelake.rollups";
/// Schema metadata key of the table's `timelake.time-weighted-mean` setting.
pub const TWM_MODE_KEY: &str = "timelake.time_weighted_mean";

/// One table of the catalog, as resolved for one query: at its newest
/// version, or as of one of its snapshots (time travel, [`crate::timetravel`]).
#[derive(Debug)]
pub struct TimelakeTable {
    schema_name: String,
    table_name: String,
    schema: SchemaRef,
    callbacks: Arc<Callbacks>,
    store: Arc<Store>,
    /// The snapshot read instead of the current one.
    snapshot_id: Option<i64>,
    time_column: Option<String>,
    has_rollups: bool,
    /// The table's `time-weighted-mean` setting (`TWM_MODE_KEY`), when C++
    /// sent one (only a value other than the default).
    time_weighted_mean: Option<String>,
}

impl TimelakeTable {
    /// A table whose schema `table_schema` answered: the metadata keys above
    /// are read and removed.
    pub fn new(
        schema_name: String,
        table_name: String,
        schema: SchemaRef,
        callbacks: Arc<Callbacks>,
        store: Arc<Store>,
    ) -> Self {
        let mut metadata = schema.metadata().clone();
        let time_column = metadata.remove(TIME_COLUMN_KEY).filter(|t| !t.is_empty());
        let has_rollups = metadata
            .remove(ROLLUPS_KEY)
            .is_some_and(|r| !r.trim().is_empty());
        let time_weighted_mean = metadata.remove(TWM_MODE_KEY);
        let schema = if metadata.len() == schema.metadata().len() {
            schema
        } else {
            Arc::new(ArrowSchema::new_with_metadata(
                schema.fields().clone(),
                metadata,
            ))
        };
        Self {
            schema_name,
            table_name,
            schema,
            callbacks,
            store,
            snapshot_id: None,
            time_column,
            has_rollups,
            time_weighted_mean,
        }
    }

    /// The table's `timelake.time-weighted-mean`, if C++ sent one.
    pub fn time_weighted_mean(&self) -> Option<String> {
        self.time_weighted_mean.clone()
    }

    pub fn schema_name(&self) -> &str {
        &self.schema_name
    }

    pub fn table_name(&self) -> &str {
        &self.table_name
    }

    /// The table's time column (none: not a time-series table).
    pub fn time_column(&self) -> Option<String> {
        self.time_column.clone()
    }

    /// Whether the table lists rollups (`timelake.rollups`).
    pub fn has_rollups(&self) -> bool {
        self.has_rollups
    }

    /// Another table of the same catalog (a rollup of this one), or `None`
    /// when it does not exist.
    pub(crate) fn sibling(&self, schema_name: &str, table_name: &str) -> TlResult<Option<Self>> {
        let schema =
            runtime::call_blocking_sync(|| self.callbacks.table_schema(schema_name, table_name))?;
        Ok(schema.map(|schema| {
            Self::new(
                schema_name.to_string(),
                table_name.to_string(),
                schema,
                Arc::clone(&self.callbacks),
                Arc::clone(&self.store),
            )
        }))
    }

    /// What C++ knows of this table's rollups for routing (the `rollups`
    /// request of `plan_scan`, JSON documented in timelake_platform.h).
    pub(crate) fn rollups(
        &self,
        settings: &std::collections::BTreeMap<String, String>,
    ) -> TlResult<String> {
        let request = json!({"rollups": {}, "settings": settings}).to_string();
        let answer = runtime::call_blocking_sync(|| {
            self.callbacks
                .plan_scan(&self.schema_name, &self.table_name, &request)
        })?;
        Ok(answer.text)
    }

    /// The same table read as of `snapshot_id` (its schema is the one the
    /// table had at that snapshot).
    pub fn at_snapshot(mut self, snapshot_id: i64) -> Self {
        self.snapshot_id = Some(snapshot_id);
        // A past snapshot is read as it was: never routed to a rollup,
        // which reflects the newest raw data.
        self.has_rollups = false;
        self
    }

    /// Adds the snapshot read (if any) to a `plan_scan` request.
    fn pinned(&self, mut request: serde_json::Value) -> String {
        if let Some(id) = self.snapshot_id {
            request["snapshot_id"] = json!(id);
        }
        request.to_string()
    }

    /// The `plan_scan` request (format documented in the header).
    fn scan_request(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> String {
        let settings = state
            .config_options()
            .extensions
            .get::<TimelakeOptions>()
            .map(|o| o.values().clone())
            .unwrap_or_default();
        let projection = projection.map(|indices| {
            indices
                .iter()
                .map(|&i| self.schema.field(i).name().clone())
                .collect::<Vec<_>>()
        });
        self.pinned(json!({
            "filters": translate_filters(filters, &self.schema),
            "projection": projection,
            "limit": limit,
            "settings": settings,
        }))
    }

    /// Reads the `plan_scan` answer (a batch laid out as the header says)
    /// into files to read and dedup groups.
    fn parse_plan(&self, answer: Option<RecordBatch>) -> TlResult<ScanPlan> {
        let what = format!("plan_scan({}.{})", self.schema_name, self.table_name);
        let invalid = |why: &str| TlError::internal(format!("{what} returned {why}"));
        let batch = answer.ok_or_else(|| invalid("no files batch"))?;
        fn column<'a, T: 'static>(
            batch: &'a RecordBatch,
            name: &str,
            invalid: &dyn Fn(&str) -> TlError,
        ) -> TlResult<&'a T> {
            batch
                .column_by_name(name)
                .and_then(|c| c.as_any().downcast_ref::<T>())
                .ok_or_else(|| invalid(&format!("a files batch without a valid {name:?} column")))
        }
        let paths = column::<StringArray>(&batch, "path", &invalid)?;
        let sizes = column::<Int64Array>(&batch, "size", &invalid)?;
        let seqs = column::<Int64Array>(&batch, "seq", &invalid)?;
        let sorted = column::<BooleanArray>(&batch, "sorted", &invalid)?;
        let groups = column::<Int32Array>(&batch, "group", &invalid)?;
        // Optional: plans without row counts are read file by file.
        let rows = batch
            .column_by_name("rows")
            .map(|c| {
                c.as_any()
                    .downcast_ref::<Int64Array>()
                    .ok_or_else(|| invalid("a \"rows\" column that is not int64"))
            })
            .transpose()?;
        let nulls = paths.null_count() + sizes.null_count() + seqs.null_count();
        if nulls + sorted.null_count() > 0 {
            return Err(invalid("a file with a null path, size, seq or sorted"));
        }
        let mut files = Vec::with_capacity(batch.num_rows());
        let mut members: Vec<Vec<usize>> = Vec::new();
        for i in 0..batch.num_rows() {
            let size = u64::try_from(sizes.value(i)).map_err(|_| invalid("a negative size"))?;
            // The key joined with the warehouse prefix, exactly as
            // tl_store_put wrote it (no re-encoding).
            let location = self.store.location(paths.value(i))?;
            files.push(PlannedFile {
                file: footers::planned_file(location, size),
                seq: seqs.value(i),
                sorted: sorted.value(i),
                rows: rows
                    .filter(|r| r.is_valid(i))
                    .and_then(|r| u64::try_from(r.value(i)).ok()),
            });
            if groups.is_valid(i) {
                let g = usize::try_from(groups.value(i))
                    .ok()
                    .filter(|&g| g < batch.num_rows())
                    .ok_or_else(|| invalid("a bad group number"))?;
                if members.len() <= g {
                    members.resize_with(g + 1, Vec::new);
                }
                members[g].push(i);
            }
        }
        let metadata = batch.schema_ref().metadata();
        // The table's sort order: columns unknown to this schema end it.
        let sort = (0..)
            .map_while(|i| metadata.get(&format!("sort.{i}")))
            .map_while(|name| self.schema.index_of(name).ok())
            .collect();
        let page_rows = metadata
            .get("page.rows")
            .and_then(|v| v.parse::<u64>().ok())
            .filter(|&r| r > 0);
        let row_filters = match metadata.get("filter.pushdown").map(String::as_str) {
            Some("true") => Some(true),
            Some("false") => Some(false),
            _ => None,
        };
        let mut plan = ScanPlan {
            files,
            dedup: None,
            sort,
            page_rows,
            row_filters,
        };
        members.retain(|m| !m.is_empty());
        if members.is_empty() {
            return Ok(plan);
        }
        let names = |prefix: &str| -> TlResult<Vec<usize>> {
            (0..)
                .map_while(|i| metadata.get(&format!("dedup.{prefix}.{i}")))
                .map(|name| {
                    self.schema
                        .index_of(name)
                        .map_err(|_| invalid(&format!("unknown dedup column {name:?}")))
                })
                .collect()
        };
        let keys = names("key")?;
        if keys.is_empty() {
            return Err(invalid("merge groups without \"dedup.key.0\""));
        }
        // "all" merges without dropping rows (compaction of a table without
        // dedup); "last" keeps the last row per key.
        let keep_all = match metadata.get("dedup.keep").map(String::as_str) {
            Some("all") => true,
            Some("last") | None => false,
            Some(other) => return Err(invalid(&format!("dedup.keep {other:?}"))),
        };
        plan.dedup = Some(DedupPlan {
            keys,
            order: names("order")?,
            groups: members,
            keep_all,
        });
        Ok(plan)
    }

    /// The current snapshot's last-value index, when it answers "newest row
    /// per `partition_by` ordered by `order_by` descending" for this table
    /// (C++ checks the series key and the time column). C++ hands over the
    /// rows it holds decoded (Arrow C data, no copy); it keeps the one cache
    /// of them, so nothing here is cached.
    pub(crate) fn last_value_index(
        &self,
        partition_by: &[String],
        order_by: &str,
    ) -> TlResult<Option<RecordBatch>> {
        let request = self.pinned(json!({
            "filters": [],
            "last_values": {"partition_by": partition_by, "order_by": order_by},
        }));
        let answer = runtime::call_blocking_sync(|| {
            self.callbacks
                .plan_scan(&self.schema_name, &self.table_name, &request)
        })?;
        let Some(rows) = answer.rows else {
            return Ok(None);
        };
        // In the table's schema as DataFusion resolved it (the same types;
        // field metadata and nullability from the catalog).
        RecordBatch::try_new(Arc::clone(&self.schema), rows.columns().to_vec())
            .map(Some)
            .map_err(|e| {
                TlError::internal(format!(
                    "plan_scan({}.{}) sent last values that do not fit the table schema: {e}",
                    self.schema_name, self.table_name
                ))
            })
    }

    /// A Parquet scan of `files` (one file group per entry of `groups`).
    /// `row_filters` evaluates the filters DataFusion pushes into it row by
    /// row inside the scan (see [`row_filters_pay`]), each row group still
    /// read with one request ([`crate::prefetch`]).
    pub(crate) fn parquet_scan(
        &self,
        state: &dyn Session,
        groups: Vec<FileGroup>,
        partition_cols: Vec<FieldRef>,
        projection: Option<Vec<usize>>,
        ordering: Option<LexOrdering>,
        limit: Option<usize>,
        row_filters: bool,
    ) -> DFResult<Arc<dyn ExecutionPlan>> {
        let object_store_url = ObjectStoreUrl::parse(self.store.base_url().as_str())?;
        let runtime_env = state.runtime_env();
        let client = runtime_env.object_store(&object_store_url)?;
        // Parquet footers are cached per store, shared by the lake's
        // sessions and filled from the head's inlined footers too
        // (crate::footers); data files are immutable in Iceberg.
        let cache = runtime_env.cache_manager.get_file_metadata_cache();
        let indexed = groups
            .iter()
            .flat_map(|g| g.iter())
            .map(|f| &f.object_meta.location)
            .filter(|location| footers::footer_only(cache.as_ref(), location))
            .cloned()
            .collect();
        let reader_factory = footers::PageIndexedFactory {
            inner: Arc::new(CachedParquetFileReaderFactory::new(
                Arc::clone(&client),
                cache,
            )),
            indexed,
        };

        let mut options = state.default_table_options().parquet;
        let reader_factory: Arc<dyn ParquetFileReaderFactory> = if row_filters {
            options.global.pushdown_filters = true;
            // The reader's predicate cache keeps the decoded values of
            // columns both filtered and output, and so asks for their pages
            // for rows widened to whole batches: past the pages the
            // prefetch found for the filter's rows, a request more per row
            // group, and more bytes. Decoding those columns twice is cheaper
            // (measured on TSBS; docs/architecture.md).
            options.global.max_predicate_cache_size = Some(0);
            Arc::new(PrefetchReaderFactory {
                inner: Arc::new(reader_factory),
                projected: Arc::new(Projected::of(&self.schema, projection.as_deref())),
                footers: runtime_env.cache_manager.get_file_metadata_cache(),
            })
        } else {
            Arc::new(reader_factory)
        };
        let metadata_size_hint = options.global.metadata_size_hint;
        let table_schema = TableSchema::builder(Arc::clone(&self.schema))
            .with_table_partition_cols(partition_cols)
            .build();
        let mut source = ParquetSource::new(table_schema)
            .with_table_parquet_options(options)
            .with_enable_page_index(true)
            .with_parquet_file_reader_factory(Arc::new(NamingReaderFactory {
                inner: reader_factory,
                store: client,
            }));
        if let Some(hint) = metadata_size_hint {
            source = source.with_metadata_size_hint(hint);
        }
        // No `with_predicate` here on purpose: the filters stay in a
        // FilterExec above this scan (they are Inexact), and DataFusion's
        // physical FilterPushdown rule, which always runs, pushes them into
        // this ParquetSource as its pruning predicate (row groups, page
        // index, bloom filters; row-level too with `row_filters` or the
        // session's `datafusion.execution.parquet.pushdown_filters`, which
        // then removes the FilterExec). Setting it here
        // as well would make the source evaluate every filter twice.
        // Columns are found in each file by Iceberg field id, so that files
        // written before a rename or a widening read right.
        let mut builder = FileScanConfigBuilder::new(object_store_url, Arc::new(source))
            .with_expr_adapter(Some(Arc::new(FieldIdAdapterFactory)))
            .with_file_groups(groups)
            .with_projection_indices(projection)?
            .with_limit(limit);
        if let Some(ordering) = ordering {
            builder = builder.with_output_ordering(vec![ordering]);
        }
        Ok(DataSourceExec::from_data_source(builder.build()))
    }

    /// Files that may share keys, merged by the tie rule: a sorted scan of
    /// every file (its commit sequence as an extra column), merged, then
    /// the last row of each key kept, then `projection`.
    ///
    /// Filters stay in DataFusion's FilterExec above the whole table scan,
    /// i.e. after dedup. Only those on key columns pass [`DedupExec`] into
    /// the Parquet scan as pruning predicates, so no row group is skipped
    /// for a value an older version of a row had.
    fn dedup_scan(
        &self,
        state: &dyn Session,
        files: Vec<PlannedFile>,
        dedup: &DedupPlan,
        projection: Option<&Vec<usize>>,
    ) -> DFResult<Arc<dyn ExecutionPlan>> {
        let n = self.schema.fields().len();
        // Scan every column the output, the keys or the order need, plus
        // the sequence number column at index n.
        let mut needed: Vec<usize> = match projection {
            Some(p) => p.clone(),
            None => (0..n).collect(),
        };
        for &i in dedup.keys.iter().chain(dedup.order.iter()) {
            if !needed.contains(&i) {
                needed.push(i);
            }
        }
        let mut scanned = needed.clone();
        scanned.sort_unstable();
        scanned.push(n);
        let position = |table_index: usize| scanned.iter().position(|&c| c == table_index);

        let seq_field: FieldRef = Arc::new(Field::new(SEQ_COLUMN, DataType::Int64, false));
        let scan_schema = {
            let mut fields: Vec<FieldRef> = scanned[..scanned.len() - 1]
                .iter()
                .map(|&i| Arc::new(self.schema.field(i).clone()))
                .collect();
            fields.push(Arc::clone(&seq_field));
            Arc::new(ArrowSchema::new(fields))
        };
        let sort_exprs = dedup
            .keys
            .iter()
            .chain(dedup.order.iter())
            .map(|&i| {
                let at = position(i).expect("scanned holds every key");
                PhysicalSortExpr::new(
                    Arc::new(Column::new(self.schema.field(i).name(), at)),
                    SortOptions::new(false, true),
                )
            })
            .chain(std::iter::once(PhysicalSortExpr::new(
                Arc::new(Column::new(SEQ_COLUMN, scanned.len() - 1)),
                SortOptions::new(false, true),
            )));
        let ordering = LexOrdering::new(sort_exprs)
            .ok_or_else(|| DataFusionError::Internal("empty dedup ordering".into()))?;
        // The same ordering in table-schema indices, for the file scan.
        let table_ordering = LexOrdering::new(
            dedup
                .keys
                .iter()
                .chain(dedup.order.iter())
                .map(|&i| {
                    PhysicalSortExpr::new(
                        Arc::new(Column::new(self.schema.field(i).name(), i)),
                        SortOptions::new(false, true),
                    )
                })
                .chain(std::iter::once(PhysicalSortExpr::new(
                    Arc::new(Column::new(SEQ_COLUMN, n)),
                    SortOptions::new(false, true),
                ))),
        );
        let all_sorted = files.iter().all(|f| f.sorted);
        let groups = files
            .into_iter()
            .map(|f| {
                let mut file = f.file;
                file.partition_values = vec![ScalarValue::Int64(Some(f.seq))];
                FileGroup::new(vec![file])
            })
            .collect();
        let mut input = self.parquet_scan(
            state,
            groups,
            vec![seq_field],
            Some(scanned.clone()),
            if all_sorted { table_ordering } else { None },
            None,
            false,
        )?;
        if !all_sorted {
            input =
                Arc::new(SortExec::new(ordering.clone(), input).with_preserve_partitioning(true));
        }
        debug_assert_eq!(input.schema().fields().len(), scan_schema.fields().len());
        let merged: Arc<dyn ExecutionPlan> =
            Arc::new(SortPreservingMergeExec::new(ordering.clone(), input));
        let keys = dedup
            .keys
            .iter()
            .map(|&i| position(i).expect("scanned holds every key"))
            .collect();
        let deduped: Arc<dyn ExecutionPlan> = if dedup.keep_all {
            merged
        } else {
            Arc::new(DedupExec::new(merged, keys, ordering))
        };
        let output = needed
            .iter()
            .take(match projection {
                Some(p) => p.len(),
                None => n,
            })
            .map(|&i| {
                let at = position(i).expect("scanned holds every output column");
                let name = self.schema.field(i).name().clone();
                (
                    Arc::new(Column::new(&name, at)) as Arc<dyn PhysicalExpr>,
                    name,
                )
            })
            .collect::<Vec<_>>();
        Ok(Arc::new(ProjectionExec::try_new(output, deduped)?))
    }
}

/// Deals `files` (newest first) out to `n` groups of about the same number
/// of rows, so that every core has about the same work whatever the files'
/// sizes: a file of more rows than a group's share is read as row ranges
/// (Parquet row selections, at multiples of `page_rows`, so that no page is
/// decoded twice) by several groups. Each piece goes to the group with the
/// fewest rows so far, so groups still start with new data. Without row
/// counts for every file, or with a limit (which wants few rows, from the
/// newest files), it deals whole files in turn (`round_robin`). Only files
/// written in the table's sort order are split: Timelake's own, whose
/// manifest row counts are exact (a wrong count would fail the read).
fn balanced_groups(
    files: Vec<PlannedFile>,
    n: usize,
    page_rows: Option<u64>,
    limit: Option<usize>,
) -> Vec<FileGroup> {
    let n = n.max(1);
    let all_known = files.iter().all(|f| f.rows.is_some());
    if n == 1 || limit.is_some() || !all_known || files.is_empty() {
        return round_robin(files.into_iter().map(|f| f.file).collect(), n);
    }
    let total: u64 = files.iter().filter_map(|f| f.rows).sum();
    let share = total.div_ceil(n as u64).max(1);
    let page = page_rows.unwrap_or(1).max(1);
    let mut groups: Vec<(u64, Vec<PartitionedFile>)> = (0..n).map(|_| (0, Vec::new())).collect();
    for f in files {
        let rows = f.rows.unwrap_or(0);
        // Split only what would unbalance the groups: a file well over a
        // share, of at least two pages.
        let pieces = if f.sorted && rows > share + share / 4 && rows >= 2 * page {
            rows.div_ceil(share).min(n as u64)
        } else {
            1
        };
        let mut start = 0;
        for p in 1..=pieces {
            let end = if p == pieces {
                rows
            } else {
                ((rows * p / pieces).div_ceil(page) * page).min(rows)
            };
            if end <= start {
                continue;
            }
            let mut file = f.file.clone();
            if pieces > 1 {
                let mut selectors = Vec::new();
                if start > 0 {
                    selectors.push(RowSelector::skip(start as usize));
                }
                selectors.push(RowSelector::select((end - start) as usize));
                if end < rows {
                    selectors.push(RowSelector::skip((rows - end) as usize));
                }
                file.extensions
                    .insert(ParquetRowSelection::new(RowSelection::from(selectors)));
            }
            let least = groups
                .iter_mut()
                .min_by_key(|g| g.0)
                .expect("n >= 1 groups");
            least.0 += end - start;
            least.1.push(file);
            start = end;
        }
    }
    groups
        .into_iter()
        .filter(|g| !g.1.is_empty())
        .map(|g| FileGroup::new(g.1))
        .collect()
}

/// Deals `files` out to `n` groups in turn. C++ lists them newest first, so
/// every partition starts with new data (top-k queries on time fill early).
fn round_robin(files: Vec<PartitionedFile>, n: usize) -> Vec<FileGroup> {
    let n = n.min(files.len()).max(1);
    let mut groups: Vec<Vec<PartitionedFile>> = (0..n).map(|_| Vec::new()).collect();
    for (i, file) in files.into_iter().enumerate() {
        groups[i % n].push(file);
    }
    groups.into_iter().map(FileGroup::new).collect()
}

/// The name of the commit-sequence column a dedup scan adds.
const SEQ_COLUMN: &str = "__timelake_seq";

struct PlannedFile {
    file: PartitionedFile,
    seq: i64,
    sorted: bool,
    /// The file's row count, when the plan gave it.
    rows: Option<u64>,
}

struct DedupPlan {
    keys: Vec<usize>,
    order: Vec<usize>,
    groups: Vec<Vec<usize>>,
    keep_all: bool,
}

struct ScanPlan {
    files: Vec<PlannedFile>,
    dedup: Option<DedupPlan>,
    /// Rows of the table's data pages (the plan's "page.rows").
    page_rows: Option<u64>,
    /// The table's sort order (table schema indices), which files flagged
    /// `sorted` hold.
    sort: Vec<usize>,
    /// Row filters in the scan: the `filter-pushdown` setting when it says
    /// (`None`: auto, [`row_filters_pay`] decides).
    row_filters: Option<bool>,
}

/// The order a data file's rows are sorted in (table schema columns),
/// carried in its `PartitionedFile::extensions` (the Parquet reader reads
/// only its own access plans there).
///
/// A plain scan does not declare it as its output ordering: DataFusion
/// would then drop sorts and pick ordered plans for every query reading a
/// partition of one file. [`crate::sorted_scan`] declares it, one file per
/// partition, only where an operator asks for that order (ASOF JOIN,
/// time-weighted means).
#[derive(Debug)]
pub struct SortedFile(pub LexOrdering);

/// The files, each marked [`SortedFile`] when every one of them holds the
/// table's sort order (`sort`; none marked otherwise).
fn mark_sorted(
    schema: &SchemaRef,
    sort: &[usize],
    mut files: Vec<PlannedFile>,
) -> Vec<PlannedFile> {
    let ordering = if files.iter().all(|f| f.sorted) {
        LexOrdering::new(sort.iter().map(|&i| {
            PhysicalSortExpr::new(
                Arc::new(Column::new(schema.field(i).name(), i)),
                SortOptions::new(false, true),
            )
        }))
    } else {
        None
    };
    if let Some(mark) = ordering.map(|o| Arc::new(SortedFile(o))) {
        for f in &mut files {
            f.file.extensions.insert_arc(Arc::clone(&mark));
        }
    }
    files
}

/// Whether evaluating the filters row by row inside the Parquet scan pays
/// by default: when every file is sorted by the table's sort order. The
/// scan then decodes the other columns only for the rows that pass, where
/// page pruning keeps whole pages: a page holds up to 20,000 rows
/// (`data-page-rows`) of several series at all their times. Files we
/// write cut every column's pages at those row counts (unless a page
/// reaches Parquet's 1 MiB page size first), so the prefetch reads what a
/// scan without row filters reads; files of other writers may cut pages
/// elsewhere, and would be read with more bytes.
fn row_filters_pay(files: &[PlannedFile]) -> bool {
    files.iter().all(|f| f.sorted)
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
        let request = self.scan_request(state, projection, filters, limit);
        let answer = runtime::call_blocking(|| {
            self.callbacks
                .plan_scan(&self.schema_name, &self.table_name, &request)
        })
        .await
        .and_then(|r| r)
        .map_err(TlError::into_datafusion)?;
        let ScanPlan {
            files,
            dedup,
            sort,
            page_rows,
            row_filters,
        } = self
            .parse_plan(answer.rows)
            .map_err(TlError::into_datafusion)?;

        if files.is_empty() {
            let projected = project_schema(&self.schema, projection)?;
            return Ok(Arc::new(EmptyExec::new(projected)));
        }

        let target = state.config().target_partitions().max(1);
        let row_filters =
            !filters.is_empty() && row_filters.unwrap_or_else(|| row_filters_pay(&files));
        let Some(dedup) = dedup else {
            let plain = mark_sorted(&self.schema, &sort, files);
            let groups = balanced_groups(plain, target, page_rows, limit);
            return self.parquet_scan(
                state,
                groups,
                vec![],
                projection.cloned(),
                None,
                limit,
                row_filters,
            );
        };

        // Files of a dedup group are merged; the others are read as they are.
        let mut in_group = vec![None; files.len()];
        for (g, members) in dedup.groups.iter().enumerate() {
            for &i in members {
                in_group[i] = Some(g);
            }
        }
        let mut grouped: Vec<Vec<PlannedFile>> = dedup.groups.iter().map(|_| Vec::new()).collect();
        let mut plain = Vec::new();
        for (file, group) in files.into_iter().zip(in_group) {
            match group {
                Some(g) => grouped[g].push(file),
                None => plain.push(file),
            }
        }
        let mut inputs: Vec<Arc<dyn ExecutionPlan>> = Vec::new();
        if !plain.is_empty() {
            let groups = balanced_groups(
                mark_sorted(&self.schema, &sort, plain),
                target,
                page_rows,
                None,
            );
            inputs.push(self.parquet_scan(
                state,
                groups,
                vec![],
                projection.cloned(),
                None,
                None,
                row_filters,
            )?);
        }
        for mut group in grouped.into_iter().filter(|g| !g.is_empty()) {
            // Older commits first: on fully equal sort keys the merge keeps
            // input order, so the newer commit's row comes last and wins.
            group.sort_by_key(|f| f.seq);
            inputs.push(self.dedup_scan(state, group, &dedup, projection)?);
        }
        if inputs.len() == 1 {
            return Ok(inputs.pop().expect("one input"));
        }
        Ok(UnionExec::try_new(inputs)?)
    }
}

#[cfg(test)]
mod tests {
    use datafusion::datasource::physical_plan::parquet::ParquetRowSelection;
    use object_store::path::Path;

    use super::{balanced_groups, PlannedFile};
    use crate::footers;

    fn file(name: &str, rows: u64, sorted: bool) -> PlannedFile {
        PlannedFile {
            file: footers::planned_file(Path::from(name), rows * 10),
            seq: 1,
            sorted,
            rows: Some(rows),
        }
    }

    /// (file, first row, rows) of each piece of each group.
    fn pieces(
        groups: &[datafusion::datasource::physical_plan::FileGroup],
    ) -> Vec<Vec<(String, u64, u64)>> {
        groups
            .iter()
            .map(|g| {
                g.files()
                    .iter()
                    .map(|f| {
                        let name = f.object_meta.location.to_string();
                        match f.extensions.get::<ParquetRowSelection>() {
                            None => (name, 0, f.object_meta.size / 10),
                            Some(s) => {
                                let mut at = 0;
                                let mut picked = None;
                                for sel in s.selection().iter() {
                                    if !sel.skip {
                                        picked = Some((at as u64, sel.row_count as u64));
                                    }
                                    at += sel.row_count;
                                }
                                let (start, len) = picked.expect("one selected range");
                                assert_eq!(at as u64, f.object_meta.size / 10, "covers the file");
                                (name, start, len)
                            }
                        }
                    })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn groups_get_about_the_same_rows_and_every_row_once() {
        // One big compacted file and two small ones, newest first.
        let files = vec![
            file("new", 32_000, true),
            file("big", 400_000, true),
            file("mid", 100_000, true),
        ];
        let groups = balanced_groups(files, 2, Some(20_000), None);
        let got = pieces(&groups);
        assert_eq!(got.len(), 2);
        let totals: Vec<u64> = got.iter().map(|g| g.iter().map(|p| p.2).sum()).collect();
        assert_eq!(totals.iter().sum::<u64>(), 532_000);
        let (hi, lo) = (*totals.iter().max().unwrap(), *totals.iter().min().unwrap());
        assert!(
            hi - lo <= 140_000,
            "{totals:?}: far better than 432,000 against 100,000"
        );
        // The big file's ranges: disjoint, at page multiples, covering it.
        let mut ranges: Vec<(u64, u64)> = got
            .iter()
            .flatten()
            .filter(|p| p.0 == "big")
            .map(|p| (p.1, p.2))
            .collect();
        ranges.sort();
        assert_eq!(ranges.len(), 2);
        assert_eq!(ranges[0].0, 0);
        assert_eq!(ranges[0].0 + ranges[0].1, ranges[1].0);
        assert_eq!(ranges[1].0 % 20_000, 0);
        assert_eq!(ranges[1].0 + ranges[1].1, 400_000);
        // Each group starts with the newest data it has.
        assert_eq!(got[0][0].0, "new");
    }

    #[test]
    fn unsorted_files_limits_and_unknown_counts_are_not_split() {
        let files = vec![file("a", 400_000, false), file("b", 10_000, true)];
        let got = pieces(&balanced_groups(files, 2, Some(20_000), None));
        assert!(got.iter().flatten().all(|p| p.1 == 0), "{got:?}");
        let files = vec![file("a", 400_000, true), file("b", 10_000, true)];
        let got = pieces(&balanced_groups(files, 2, Some(20_000), Some(5)));
        assert_eq!(got.iter().flatten().count(), 2, "a limit reads whole files");
        let mut unknown = file("a", 400_000, true);
        unknown.rows = None;
        let got = pieces(&balanced_groups(
            vec![unknown, file("b", 10, true)],
            2,
            None,
            None,
        ));
        assert_eq!(got.iter().flatten().count(), 2);
    }
}
