//! Parquet read errors that name the file: DataFusion reports a truncated or
//! unreadable data file without its path, which leaves the user guessing.

use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::parquet::ParquetFileReaderFactory;
use datafusion::physical_plan::metrics::ExecutionPlanMetricsSet;
use futures::future::BoxFuture;
use futures::FutureExt;
use parquet::arrow::arrow_reader::ArrowReaderOptions;
use parquet::arrow::async_reader::AsyncFileReader;
use parquet::errors::{ParquetError, Result as ParquetResult};
use parquet::file::metadata::ParquetMetaData;

/// Wraps a reader factory so that every read error says which file.
#[derive(Debug)]
pub struct NamingReaderFactory {
    pub inner: Arc<dyn ParquetFileReaderFactory>,
}

impl ParquetFileReaderFactory for NamingReaderFactory {
    fn create_reader(
        &self,
        partition_index: usize,
        partitioned_file: PartitionedFile,
        metadata_size_hint: Option<usize>,
        metrics: &ExecutionPlanMetricsSet,
    ) -> datafusion::error::Result<Box<dyn AsyncFileReader + Send>> {
        let path = partitioned_file.object_meta.location.to_string();
        let inner = self.inner.create_reader(
            partition_index,
            partitioned_file,
            metadata_size_hint,
            metrics,
        )?;
        Ok(Box::new(NamingReader { inner, path }))
    }
}

struct NamingReader {
    inner: Box<dyn AsyncFileReader + Send>,
    path: String,
}

fn named(path: &str, e: ParquetError) -> ParquetError {
    let text = e.to_string();
    let text = text.strip_prefix("Parquet error: ").unwrap_or(&text);
    ParquetError::General(format!("data file {path} is corrupt or truncated: {text}"))
}

impl AsyncFileReader for NamingReader {
    fn get_bytes(&mut self, range: Range<u64>) -> BoxFuture<'_, ParquetResult<Bytes>> {
        let path = self.path.clone();
        self.inner
            .get_bytes(range)
            .map(move |r| r.map_err(|e| named(&path, e)))
            .boxed()
    }

    fn get_byte_ranges(
        &mut self,
        ranges: Vec<Range<u64>>,
    ) -> BoxFuture<'_, ParquetResult<Vec<Bytes>>> {
        let path = self.path.clone();
        self.inner
            .get_byte_ranges(ranges)
            .map(move |r| r.map_err(|e| named(&path, e)))
            .boxed()
    }

    fn get_metadata<'a>(
        &'a mut self,
        options: Option<&'a ArrowReaderOptions>,
    ) -> BoxFuture<'a, ParquetResult<Arc<ParquetMetaData>>> {
        let path = self.path.clone();
        self.inner
            .get_metadata(options)
            .map(move |r| r.map_err(|e| named(&path, e)))
            .boxed()
    }
}
