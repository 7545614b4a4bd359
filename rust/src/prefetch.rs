//! One storage request per row group when filters are evaluated in the scan.
//!
//! With row-level filters (`pushdown_filters`), the Parquet reader fetches a
//! row group in phases: the columns of each filter, evaluated one after the
//! other, then the rest of the projection for the rows that passed. Each
//! phase is its own `get_byte_ranges` call, so its own storage request, where
//! a scan without row filters asks once for every column it reads.
//!
//! [`PrefetchReader`] turns the phases back into one request. On the first
//! call for a row group it works out which rows the call's pages cover
//! (from the offset index) and fetches, together with what was asked, the
//! pages of every projected column that hold those rows (and their
//! dictionary pages): what a scan without row filters would have read for
//! the same rows. Later calls for that row group are answered from those
//! bytes. It holds one row group's bytes at a time, which the reader holds
//! anyway while it decodes them.
//!
//! A call that cannot be placed (no offset index and not whole column
//! chunks, ranges outside every column chunk such as the page index or
//! bloom filters, or a column the projection did not name) goes to storage
//! as it is: correct, only one request more. So does a later call for rows
//! the first did not cover: the scan turns the reader's predicate cache off
//! for that reason (it widens the rows of cached columns to whole batches).
//! The metadata comes from the footer cache, as DataFusion decodes with a
//! reader it does not ask for it.

use std::collections::HashSet;
use std::ops::Range;
use std::sync::Arc;

use arrow::datatypes::Schema;
use bytes::Bytes;
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::parquet::metadata::CachedParquetMetaData;
use datafusion::datasource::physical_plan::parquet::{
    ParquetFileReaderFactory, ParquetRowSelection,
};
use datafusion::execution::cache::cache_manager::FileMetadataCache;
use datafusion::physical_plan::metrics::ExecutionPlanMetricsSet;
use futures::future::BoxFuture;
use futures::FutureExt;
use object_store::path::Path;
use parquet::arrow::arrow_reader::{ArrowReaderOptions, RowSelection};
use parquet::arrow::async_reader::AsyncFileReader;
use parquet::errors::{ParquetError, Result as ParquetResult};
use parquet::file::metadata::{ParquetMetaData, RowGroupMetaData};
use parquet::file::page_index::offset_index::OffsetIndexMetaData;

use crate::fieldids::field_id;

/// The table columns a scan reads, to find their column chunks in a file:
/// by Iceberg field id where the file has ids, by name otherwise (as
/// [`crate::fieldids`] matches them).
#[derive(Debug, Default)]
pub struct Projected {
    ids: HashSet<i32>,
    names: HashSet<String>,
}

impl Projected {
    /// The columns of `schema` at `projection` (every column for `None`).
    pub fn of(schema: &Schema, projection: Option<&[usize]>) -> Self {
        let mut out = Self::default();
        let all: Vec<usize> = (0..schema.fields().len()).collect();
        for &i in projection.unwrap_or(&all) {
            let Some(field) = schema.fields().get(i) else {
                continue;
            };
            if let Some(id) = field_id(field) {
                out.ids.insert(id);
            }
            out.names.insert(field.name().clone());
        }
        out
    }

    /// Which leaf columns of `metadata`'s schema belong to these columns.
    fn leaves(&self, metadata: &ParquetMetaData) -> Vec<bool> {
        let schema = metadata.file_metadata().schema_descr();
        let roots: Vec<_> = (0..schema.num_columns())
            .map(|i| schema.get_column_root(i).get_basic_info())
            .collect();
        let file_has_ids = roots.iter().any(|r| r.has_id());
        roots
            .iter()
            .map(|r| {
                if file_has_ids && r.has_id() {
                    self.ids.contains(&r.id())
                } else {
                    self.names.contains(r.name())
                }
            })
            .collect()
    }
}

/// Wraps a reader factory so that its readers fetch each row group once
/// (see the module documentation).
#[derive(Debug)]
pub struct PrefetchReaderFactory {
    pub inner: Arc<dyn ParquetFileReaderFactory>,
    pub projected: Arc<Projected>,
    /// The footers the scan's reader factory caches: DataFusion decodes
    /// with a reader it never asks for the metadata.
    pub footers: Arc<FileMetadataCache>,
}

impl ParquetFileReaderFactory for PrefetchReaderFactory {
    fn create_reader(
        &self,
        partition_index: usize,
        partitioned_file: PartitionedFile,
        metadata_size_hint: Option<usize>,
        metrics: &ExecutionPlanMetricsSet,
    ) -> datafusion::error::Result<Box<dyn AsyncFileReader + Send>> {
        let location = partitioned_file.object_meta.location.clone();
        let selected = partitioned_file
            .extensions
            .get::<ParquetRowSelection>()
            .map(|s| selected_rows(s.selection()));
        let inner = self.inner.create_reader(
            partition_index,
            partitioned_file,
            metadata_size_hint,
            metrics,
        )?;
        let mut reader = PrefetchReader::new(inner, Arc::clone(&self.projected));
        reader.footer = Some((Arc::clone(&self.footers), location));
        reader.selected = selected;
        Ok(Box::new(reader))
    }
}

/// A reader that fetches a row group's projected pages with its first call
/// for that row group.
pub struct PrefetchReader {
    inner: Box<dyn AsyncFileReader + Send>,
    projected: Arc<Projected>,
    metadata: Option<Arc<ParquetMetaData>>,
    /// Where to look the metadata up when nobody asks this reader for it.
    footer: Option<(Arc<FileMetadataCache>, Path)>,
    /// The rows of the file the scan reads (`None`: all), which the
    /// reader asks pages for; the pages of columns whose page boundaries
    /// differ are found for these rows only.
    selected: Option<Vec<Range<u64>>>,
    /// Per leaf column of `metadata`: whether the scan reads it.
    leaves: Vec<bool>,
    /// The row group `held` belongs to.
    held_row_group: Option<usize>,
    /// Fetched byte ranges of that row group, with their bytes.
    held: Vec<(Range<u64>, Bytes)>,
}

impl PrefetchReader {
    pub fn new(inner: Box<dyn AsyncFileReader + Send>, projected: Arc<Projected>) -> Self {
        Self {
            inner,
            projected,
            metadata: None,
            footer: None,
            selected: None,
            leaves: Vec::new(),
            held_row_group: None,
            held: Vec::new(),
        }
    }

    /// Takes the file's metadata from the footer cache, if it is not held
    /// yet. A memory lookup: a footer not cached leaves the reader without
    /// prefetching, never costs a request.
    fn find_metadata(&mut self) {
        if self.metadata.is_some() {
            return;
        }
        let Some((cache, location)) = &self.footer else {
            return;
        };
        let Some(entry) = cache.get(location) else {
            return;
        };
        if let Some(cached) = entry
            .file_metadata
            .as_any()
            .downcast_ref::<CachedParquetMetaData>()
        {
            self.hold_metadata(Arc::clone(cached.parquet_metadata()));
        }
    }

    /// Keeps `metadata` unless the one held already has page indexes.
    fn hold_metadata(&mut self, metadata: Arc<ParquetMetaData>) {
        let better = match &self.metadata {
            None => true,
            Some(held) => held.offset_index().is_none() && metadata.offset_index().is_some(),
        };
        if better {
            self.leaves = self.projected.leaves(&metadata);
            self.metadata = Some(metadata);
        }
    }

    /// `ranges` cut from the held bytes, if they hold every one.
    fn serve(&self, ranges: &[Range<u64>]) -> Option<Vec<Bytes>> {
        ranges
            .iter()
            .map(|r| {
                self.held
                    .iter()
                    .find(|(h, _)| h.start <= r.start && r.end <= h.end)
                    .map(|(h, bytes)| {
                        bytes.slice((r.start - h.start) as usize..(r.end - h.start) as usize)
                    })
            })
            .collect()
    }

    /// The row group `ranges` read and what to fetch for it: `ranges` and
    /// the projected pages of the rows they cover, merged. `None` when the
    /// call cannot be placed or nothing would be added.
    fn plan(&self, ranges: &[Range<u64>]) -> Option<(usize, Vec<Range<u64>>)> {
        let metadata = self.metadata.as_deref()?;
        let first = ranges.first()?;
        let rg_index = metadata.row_groups().iter().position(|rg| {
            rg.columns()
                .iter()
                .any(|c| contains(&chunk_range(c.byte_range()), first))
        })?;
        let rg = metadata.row_group(rg_index);
        let offsets = metadata
            .offset_index()
            .and_then(|o| o.get(rg_index))
            .filter(|o| o.len() == rg.num_columns());
        let mut rows = covered_rows(rg, offsets, ranges)?;
        if let Some(selected) = &self.selected {
            let first: u64 = metadata.row_groups()[..rg_index]
                .iter()
                .map(|rg| rg.num_rows() as u64)
                .sum();
            let end = first + rg.num_rows() as u64;
            let here: Vec<Range<u64>> = selected
                .iter()
                .filter(|r| r.start < end && first < r.end)
                .map(|r| r.start.max(first) - first..r.end.min(end) - first)
                .collect();
            rows = intersection(&rows, &here);
        }
        if rows.is_empty() {
            return None;
        }
        let num_rows = rg.num_rows() as u64;
        let mut fetch = ranges.to_vec();
        for (i, column) in rg.columns().iter().enumerate() {
            if !self.leaves.get(i).copied().unwrap_or(false) {
                continue;
            }
            let chunk = chunk_range(column.byte_range());
            match offsets {
                Some(offsets) => fetch.extend(pages_of_rows(&chunk, &offsets[i], num_rows, &rows)),
                None => fetch.push(chunk),
            }
        }
        let fetch = merged(fetch);
        let asked: u64 = merged(ranges.to_vec())
            .iter()
            .map(|r| r.end - r.start)
            .sum();
        let total: u64 = fetch.iter().map(|r| r.end - r.start).sum();
        (total > asked).then_some((rg_index, fetch))
    }
}

fn chunk_range((start, len): (u64, u64)) -> Range<u64> {
    start..start + len
}

fn contains(outer: &Range<u64>, inner: &Range<u64>) -> bool {
    outer.start <= inner.start && inner.end <= outer.end && inner.start < inner.end
}

fn overlaps(a: &Range<u64>, b: &Range<u64>) -> bool {
    a.start < b.end && b.start < a.end
}

/// Sorted, overlapping and touching ranges joined.
fn merged(mut ranges: Vec<Range<u64>>) -> Vec<Range<u64>> {
    ranges.retain(|r| r.start < r.end);
    ranges.sort_by_key(|r| r.start);
    let mut out: Vec<Range<u64>> = Vec::with_capacity(ranges.len());
    for r in ranges {
        match out.last_mut() {
            Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
            _ => out.push(r),
        }
    }
    out
}

/// Rows of each page of a column chunk, with the page's bytes.
fn pages(
    offsets: &OffsetIndexMetaData,
    num_rows: u64,
) -> impl Iterator<Item = (Range<u64>, Range<u64>)> + '_ {
    let locations = offsets.page_locations();
    locations.iter().enumerate().map(move |(i, page)| {
        let first = page.first_row_index as u64;
        let end = locations
            .get(i + 1)
            .map_or(num_rows, |next| next.first_row_index as u64);
        let start = page.offset as u64;
        (first..end, start..start + page.compressed_page_size as u64)
    })
}

/// The rows every column `ranges` touch has pages for in `ranges`: row
/// ranges, sorted and disjoint. `None` when a range lies outside the row
/// group's column chunks, or (without an offset index) a column is not
/// read whole.
fn covered_rows(
    rg: &RowGroupMetaData,
    offsets: Option<&Vec<OffsetIndexMetaData>>,
    ranges: &[Range<u64>],
) -> Option<Vec<Range<u64>>> {
    let num_rows = rg.num_rows() as u64;
    let chunks: Vec<Range<u64>> = rg
        .columns()
        .iter()
        .map(|c| chunk_range(c.byte_range()))
        .collect();
    if !ranges
        .iter()
        .all(|r| chunks.iter().any(|chunk| contains(chunk, r)))
    {
        return None;
    }
    let mut rows = vec![0..num_rows];
    for (i, chunk) in chunks.iter().enumerate() {
        let touching: Vec<&Range<u64>> = ranges.iter().filter(|r| overlaps(r, chunk)).collect();
        if touching.is_empty() {
            continue;
        }
        let column_rows = match offsets {
            Some(offsets) => merged(
                pages(&offsets[i], num_rows)
                    .filter(|(_, bytes)| touching.iter().any(|r| overlaps(r, bytes)))
                    .map(|(rows, _)| rows)
                    .collect(),
            ),
            None => {
                let read: u64 = merged(touching.into_iter().cloned().collect())
                    .iter()
                    .map(|r| r.end - r.start)
                    .sum();
                if read < chunk.end - chunk.start {
                    return None;
                }
                vec![0..num_rows]
            }
        };
        rows = intersection(&rows, &column_rows);
    }
    Some(rows)
}

/// The rows `selection` selects, as sorted disjoint ranges.
fn selected_rows(selection: &RowSelection) -> Vec<Range<u64>> {
    let mut at = 0u64;
    let mut out = Vec::new();
    for selector in selection.iter() {
        let end = at + selector.row_count as u64;
        if !selector.skip && at < end {
            out.push(at..end);
        }
        at = end;
    }
    out
}

/// Rows in both `a` and `b` (each sorted and disjoint).
fn intersection(a: &[Range<u64>], b: &[Range<u64>]) -> Vec<Range<u64>> {
    let (mut i, mut j) = (0, 0);
    let mut out = Vec::new();
    while i < a.len() && j < b.len() {
        let start = a[i].start.max(b[j].start);
        let end = a[i].end.min(b[j].end);
        if start < end {
            out.push(start..end);
        }
        if a[i].end < b[j].end {
            i += 1;
        } else {
            j += 1;
        }
    }
    out
}

/// The bytes of a column chunk's pages holding any of `rows`, and its
/// dictionary page when one is read (as the Parquet reader asks for them).
fn pages_of_rows(
    chunk: &Range<u64>,
    offsets: &OffsetIndexMetaData,
    num_rows: u64,
    rows: &[Range<u64>],
) -> Vec<Range<u64>> {
    let mut out: Vec<Range<u64>> = pages(offsets, num_rows)
        .filter(|(page_rows, _)| rows.iter().any(|r| overlaps(r, page_rows)))
        .map(|(_, bytes)| bytes)
        .collect();
    if let Some(first) = offsets.page_locations().first() {
        let first = first.offset as u64;
        if !out.is_empty() && first > chunk.start {
            out.push(chunk.start..first);
        }
    }
    out
}

impl AsyncFileReader for PrefetchReader {
    fn get_bytes(&mut self, range: Range<u64>) -> BoxFuture<'_, ParquetResult<Bytes>> {
        if let Some(mut bytes) = self.serve(std::slice::from_ref(&range)) {
            return futures::future::ready(Ok(bytes.remove(0))).boxed();
        }
        self.inner.get_bytes(range)
    }

    fn get_byte_ranges(
        &mut self,
        ranges: Vec<Range<u64>>,
    ) -> BoxFuture<'_, ParquetResult<Vec<Bytes>>> {
        if let Some(bytes) = self.serve(&ranges) {
            return futures::future::ready(Ok(bytes)).boxed();
        }
        self.find_metadata();
        let Some((row_group, fetch)) = self.plan(&ranges) else {
            return self.inner.get_byte_ranges(ranges);
        };
        async move {
            let data = self.inner.get_byte_ranges(fetch.clone()).await?;
            if self.held_row_group != Some(row_group) {
                self.held.clear();
                self.held_row_group = Some(row_group);
            }
            self.held.extend(fetch.into_iter().zip(data));
            self.serve(&ranges).ok_or_else(|| {
                ParquetError::General("prefetched bytes do not hold the asked ranges".into())
            })
        }
        .boxed()
    }

    fn get_metadata<'a>(
        &'a mut self,
        options: Option<&'a ArrowReaderOptions>,
    ) -> BoxFuture<'a, ParquetResult<Arc<ParquetMetaData>>> {
        async move {
            let metadata = self.inner.get_metadata(options).await?;
            self.hold_metadata(Arc::clone(&metadata));
            Ok(metadata)
        }
        .boxed()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::Mutex;

    use arrow::array::{ArrayRef, BooleanArray, Float64Array, Int64Array, RecordBatch};
    use arrow::datatypes::{DataType, Field};
    use futures::TryStreamExt;
    use parquet::arrow::arrow_reader::{ArrowPredicateFn, RowFilter, RowSelector};
    use parquet::arrow::{ArrowWriter, ParquetRecordBatchStreamBuilder, ProjectionMask};
    use parquet::file::metadata::{PageIndexPolicy, ParquetMetaDataReader};
    use parquet::file::properties::WriterProperties;

    use super::*;
    use crate::fieldids::FIELD_ID_KEY;

    /// A file in memory that records each `get_byte_ranges` call.
    struct Recording {
        data: Bytes,
        calls: Arc<Mutex<Vec<Vec<Range<u64>>>>>,
    }

    impl AsyncFileReader for Recording {
        fn get_bytes(&mut self, range: Range<u64>) -> BoxFuture<'_, ParquetResult<Bytes>> {
            let ranges = vec![range.clone()];
            self.calls.lock().unwrap().push(ranges);
            let bytes = self.data.slice(range.start as usize..range.end as usize);
            futures::future::ready(Ok(bytes)).boxed()
        }

        fn get_byte_ranges(
            &mut self,
            ranges: Vec<Range<u64>>,
        ) -> BoxFuture<'_, ParquetResult<Vec<Bytes>>> {
            let bytes = ranges
                .iter()
                .map(|r| self.data.slice(r.start as usize..r.end as usize))
                .collect();
            self.calls.lock().unwrap().push(ranges);
            futures::future::ready(Ok(bytes)).boxed()
        }

        fn get_metadata<'a>(
            &'a mut self,
            _options: Option<&'a ArrowReaderOptions>,
        ) -> BoxFuture<'a, ParquetResult<Arc<ParquetMetaData>>> {
            let metadata = ParquetMetaDataReader::new()
                .with_page_index_policy(PageIndexPolicy::Required)
                .parse_and_finish(&self.data)
                .map(Arc::new);
            futures::future::ready(metadata).boxed()
        }
    }

    fn with_id(name: &str, data_type: DataType, id: i32) -> Field {
        Field::new(name, data_type, false)
            .with_metadata(HashMap::from([(FIELD_ID_KEY.to_string(), id.to_string())]))
    }

    /// 4,000 rows in two row groups of pages of 250 rows: a series column
    /// `s`, time `t` and two measurements.
    fn file() -> Bytes {
        let schema = Arc::new(Schema::new(vec![
            with_id("s", DataType::Int64, 1),
            with_id("t", DataType::Int64, 2),
            with_id("v1", DataType::Float64, 3),
            with_id("v2", DataType::Float64, 4),
        ]));
        let rows = 4000i64;
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from_iter_values((0..rows).map(|i| i / 1000))),
            Arc::new(Int64Array::from_iter_values((0..rows).map(|i| i % 1000))),
            Arc::new(Float64Array::from_iter_values((0..rows).map(|i| i as f64))),
            Arc::new(Float64Array::from_iter_values(
                (0..rows).map(|i| (i * 7 % 13) as f64),
            )),
        ];
        let batch = RecordBatch::try_new(Arc::clone(&schema), columns).unwrap();
        let props = WriterProperties::builder()
            .set_max_row_group_row_count(Some(2000))
            .set_data_page_row_count_limit(250)
            .set_write_batch_size(250)
            .build();
        let mut out = Vec::new();
        let mut writer = ArrowWriter::try_new(&mut out, schema, Some(props)).unwrap();
        writer.write(&batch).unwrap();
        writer.close().unwrap();
        Bytes::from(out)
    }

    /// Reads `t` and `v1` of rows 600..3400 (when `filter`: where `v2 > 9`
    /// and `t >= 0`, in that order), through `prefetch`. Returns the `v1`
    /// values and the calls.
    fn read(prefetch: bool, filter: bool) -> (Vec<f64>, Vec<Vec<Range<u64>>>) {
        let calls = Arc::new(Mutex::new(Vec::new()));
        let recording = Recording {
            data: file(),
            calls: Arc::clone(&calls),
        };
        // The table renamed `v2` to `w` (same field id): found by id.
        let table = Schema::new(vec![
            with_id("s", DataType::Int64, 1),
            with_id("t", DataType::Int64, 2),
            with_id("v1", DataType::Float64, 3),
            with_id("w", DataType::Float64, 4),
        ]);
        let input: Box<dyn AsyncFileReader> = if prefetch {
            let projected = Arc::new(Projected::of(&table, Some(&[1, 2])));
            Box::new(PrefetchReader::new(Box::new(recording), projected))
        } else {
            Box::new(recording)
        };
        let options = ArrowReaderOptions::new().with_page_index_policy(PageIndexPolicy::Required);
        let values = futures::executor::block_on(async move {
            let builder = ParquetRecordBatchStreamBuilder::new_with_options(input, options)
                .await
                .unwrap();
            let parquet_schema = builder.parquet_schema().clone();
            let selection = RowSelection::from(vec![
                RowSelector::skip(600),
                RowSelector::select(2800),
                RowSelector::skip(600),
            ]);
            let mut builder = builder
                .with_projection(ProjectionMask::leaves(&parquet_schema, [1, 2]))
                .with_row_selection(selection)
                .with_batch_size(400)
                // As our scans read (crate::provider): no predicate cache.
                .with_max_predicate_cache_size(0);
            if filter {
                let w = ArrowPredicateFn::new(
                    ProjectionMask::leaves(&parquet_schema, [3]),
                    |batch: RecordBatch| {
                        let w = batch.column(0).as_any().downcast_ref::<Float64Array>();
                        Ok(BooleanArray::from_iter(
                            w.unwrap().iter().map(|v| v.map(|v| v > 9.0)),
                        ))
                    },
                );
                let t = ArrowPredicateFn::new(
                    ProjectionMask::leaves(&parquet_schema, [1]),
                    |batch: RecordBatch| {
                        let t = batch.column(0).as_any().downcast_ref::<Int64Array>();
                        Ok(BooleanArray::from_iter(
                            t.unwrap().iter().map(|v| v.map(|v| v >= 0)),
                        ))
                    },
                );
                builder = builder.with_row_filter(RowFilter::new(vec![Box::new(w), Box::new(t)]));
            }
            let batches: Vec<RecordBatch> = builder.build().unwrap().try_collect().await.unwrap();
            batches
                .iter()
                .flat_map(|b| {
                    let v1 = b.column(1).as_any().downcast_ref::<Float64Array>().unwrap();
                    v1.values().to_vec()
                })
                .collect::<Vec<f64>>()
        });
        let calls = calls.lock().unwrap().clone();
        (values, calls)
    }

    /// The calls that read row group data (not the page index).
    fn data_calls(calls: &[Vec<Range<u64>>]) -> Vec<Vec<Range<u64>>> {
        let metadata = ParquetMetaDataReader::new()
            .parse_and_finish(&file())
            .unwrap();
        let data_end = metadata
            .row_groups()
            .iter()
            .flat_map(|rg| rg.columns())
            .map(|c| chunk_range(c.byte_range()).end)
            .max()
            .unwrap();
        calls
            .iter()
            .filter(|c| c.iter().all(|r| r.end <= data_end))
            .cloned()
            .collect()
    }

    fn bytes(calls: &[Vec<Range<u64>>]) -> u64 {
        calls.iter().flatten().map(|r| r.end - r.start).sum()
    }

    #[test]
    fn row_filters_read_each_row_group_with_one_request() {
        let expected: Vec<f64> = (600..3400i64)
            .filter(|i| (i * 7 % 13) > 9)
            .map(|i| i as f64)
            .collect();

        // Without prefetch, each filter's column and the rest of the
        // projection are requests of their own.
        let (values, calls) = read(false, true);
        assert_eq!(values, expected);
        assert_eq!(data_calls(&calls).len(), 6, "{calls:?}");

        let (values, calls) = read(true, true);
        assert_eq!(values, expected);
        let prefetched = data_calls(&calls);
        assert_eq!(prefetched.len(), 2, "{calls:?}");

        // What a scan without row filters reads is all in those requests,
        // and besides only the pages of `w`, which that scan does not read.
        let (all, calls) = read(false, false);
        assert_eq!(all.len(), 2800);
        let plain = data_calls(&calls);
        assert_eq!(plain.len(), 2, "{calls:?}");
        let fetched: Vec<Range<u64>> = merged(prefetched.concat());
        for r in plain.concat() {
            assert!(
                fetched.iter().any(|f| contains(f, &r)),
                "{r:?} not in {fetched:?}"
            );
        }
        let metadata = ParquetMetaDataReader::new()
            .parse_and_finish(&file())
            .unwrap();
        let chunk_bytes = |leaf: usize| -> u64 {
            metadata
                .row_groups()
                .iter()
                .map(|rg| rg.column(leaf).byte_range().1)
                .sum()
        };
        let limit = bytes(&plain) + chunk_bytes(3);
        assert!(bytes(&[fetched]) <= limit);
    }

    #[test]
    fn rows_are_intersected_and_pages_found() {
        assert_eq!(
            intersection(&[0..10, 20..30], &[5..25]),
            vec![5..10, 20..25]
        );
        assert_eq!(intersection(&[0..10], &[10..20]), Vec::<Range<u64>>::new());
        assert_eq!(merged(vec![5..7, 0..5, 9..9, 8..10]), vec![0..7, 8..10]);
    }
}
