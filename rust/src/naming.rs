//! Parquet read errors that name the file: DataFusion reports a truncated or
//! unreadable data file without its path, which leaves the user guessing.
//! They also tell a file storage cannot deliver (gone, or an outage: the
//! object_store error is kept as the cause, so the query fails with its
//! code) from a file that does not decode (TL_CORRUPT).

use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::parquet::ParquetFileReaderFactory;
use datafusion::physical_plan::metrics::ExecutionPlanMetricsSet;
use futures::future::BoxFuture;
use futures::FutureExt;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use parquet::arrow::arrow_reader::ArrowReaderOptions;
use parquet::arrow::async_reader::AsyncFileReader;
use parquet::errors::{ParquetError, Result as ParquetResult};
use parquet::file::metadata::ParquetMetaData;

/// Wraps a reader factory so that every read error says which file.
#[derive(Debug)]
pub struct NamingReaderFactory {
    pub inner: Arc<dyn ParquetFileReaderFactory>,
    /// The client the files are read with (to tell a missing or unreachable
    /// file from a corrupt one).
    pub store: Arc<dyn ObjectStore>,
}

impl ParquetFileReaderFactory for NamingReaderFactory {
    fn create_reader(
        &self,
        partition_index: usize,
        partitioned_file: PartitionedFile,
        metadata_size_hint: Option<usize>,
        metrics: &ExecutionPlanMetricsSet,
    ) -> datafusion::error::Result<Box<dyn AsyncFileReader + Send>> {
        let location = partitioned_file.object_meta.location.clone();
        let inner = self.inner.create_reader(
            partition_index,
            partitioned_file,
            metadata_size_hint,
            metrics,
        )?;
        Ok(Box::new(NamingReader {
            inner,
            location,
            store: Arc::clone(&self.store),
        }))
    }
}

struct NamingReader {
    inner: Box<dyn AsyncFileReader + Send>,
    location: Path,
    store: Arc<dyn ObjectStore>,
}

/// A read error naming its file. A storage failure (object_store's error,
/// e.g. the file is gone or the endpoint is down) keeps its cause, so that
/// its kind survives ([`crate::error::from_datafusion`]); anything else is
/// a file that does not decode. Readers below may flatten a storage error
/// into text (DataFusion's metadata fetch does): then a HEAD of the file
/// tells, and its failure is the cause.
async fn named(store: Arc<dyn ObjectStore>, location: Path, e: ParquetError) -> ParquetError {
    let path = location.to_string();
    if has_storage_cause(&e) {
        return ParquetError::External(Box::new(Unreadable { path, cause: e }));
    }
    if let Err(head) = store.head(&location).await {
        let cause = ParquetError::External(Box::new(head));
        return ParquetError::External(Box::new(Unreadable { path, cause }));
    }
    let text = e.to_string();
    let text = text.strip_prefix("Parquet error: ").unwrap_or(&text);
    ParquetError::General(format!("data file {path} is corrupt or truncated: {text}"))
}

fn has_storage_cause(e: &ParquetError) -> bool {
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(e) = current {
        if e.is::<object_store::Error>() {
            return true;
        }
        current = e.source();
    }
    false
}

/// A data file that storage could not deliver.
#[derive(Debug)]
struct Unreadable {
    path: String,
    cause: ParquetError,
}

impl std::fmt::Display for Unreadable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let text = self.cause.to_string();
        let text = text.strip_prefix("External: ").unwrap_or(&text);
        write!(f, "data file {} could not be read: {text}", self.path)
    }
}

impl std::error::Error for Unreadable {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.cause)
    }
}

/// `read` with its error named (see [`named`]).
fn naming<'a, T: Send + 'a>(
    store: Arc<dyn ObjectStore>,
    location: Path,
    read: BoxFuture<'a, ParquetResult<T>>,
) -> BoxFuture<'a, ParquetResult<T>> {
    async move {
        match read.await {
            Ok(value) => Ok(value),
            Err(e) => Err(named(store, location, e).await),
        }
    }
    .boxed()
}

impl AsyncFileReader for NamingReader {
    fn get_bytes(&mut self, range: Range<u64>) -> BoxFuture<'_, ParquetResult<Bytes>> {
        let (store, location) = (Arc::clone(&self.store), self.location.clone());
        let read = self.inner.get_bytes(range);
        naming(store, location, read)
    }

    fn get_byte_ranges(
        &mut self,
        ranges: Vec<Range<u64>>,
    ) -> BoxFuture<'_, ParquetResult<Vec<Bytes>>> {
        let (store, location) = (Arc::clone(&self.store), self.location.clone());
        let read = self.inner.get_byte_ranges(ranges);
        naming(store, location, read)
    }

    fn get_metadata<'a>(
        &'a mut self,
        options: Option<&'a ArrowReaderOptions>,
    ) -> BoxFuture<'a, ParquetResult<Arc<ParquetMetaData>>> {
        let (store, location) = (Arc::clone(&self.store), self.location.clone());
        let read = self.inner.get_metadata(options);
        naming(store, location, read)
    }
}
