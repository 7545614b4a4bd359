//! Data file columns matched to table columns by Iceberg field id.
//!
//! Iceberg readers must find a table column in a data file by its field id
//! (`PARQUET:field_id` in the Arrow field metadata of both the table schema
//! C++ hands over and the file schema the Parquet reader produces), not by
//! its name: a renamed column keeps its id, so files written before the
//! rename still hold its values under the old name; and a column added under
//! a name an older column once had must not read that column's values.
//! DataFusion's default adapter matches by name; [`FieldIdAdapterFactory`]
//! renames first, then lets the default adapter do the rest (casts of
//! widened types, nulls for columns a file does not have).
//!
//! Files without field ids (written by an engine that does not record them)
//! are matched by name, as before. Only top-level columns are matched by id;
//! fields inside structs are matched by name (schema evolution of nested
//! fields is not supported).

use std::collections::HashMap;
use std::sync::Arc;

use arrow::datatypes::{Field, Schema, SchemaRef};
use datafusion::common::tree_node::{Transformed, TransformedResult, TreeNode};
use datafusion::error::Result as DFResult;
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr_adapter::{
    DefaultPhysicalExprAdapterFactory, PhysicalExprAdapter, PhysicalExprAdapterFactory,
};

/// The Arrow field metadata key of a Parquet field id.
pub(crate) const FIELD_ID_KEY: &str = "PARQUET:field_id";

/// Prefix of the names given to table columns that a file does not have
/// although it has a column of the same name (another field id): no file
/// column has such a name, so they read as nulls.
const ABSENT_PREFIX: &str = "__timelake_absent_";

/// The field id of an Arrow field, if its metadata carries one.
pub(crate) fn field_id(field: &Field) -> Option<i32> {
    field.metadata().get(FIELD_ID_KEY)?.parse().ok()
}

/// Table column name -> the name it has to be looked up under in a file of
/// `physical` schema. Empty when nothing is renamed (names and ids agree,
/// or the file has no field ids).
fn renames(logical: &Schema, physical: &Schema) -> HashMap<String, String> {
    let by_id: HashMap<i32, &str> = physical
        .fields()
        .iter()
        .filter_map(|f| field_id(f).map(|id| (id, f.name().as_str())))
        .collect();
    let mut out = HashMap::new();
    if by_id.is_empty() {
        return out;
    }
    for field in logical.fields() {
        let Some(id) = field_id(field) else {
            continue;
        };
        match by_id.get(&id) {
            Some(&name) if name != field.name() => {
                out.insert(field.name().clone(), name.to_string());
            }
            Some(_) => {}
            None if physical.index_of(field.name()).is_ok() => {
                out.insert(field.name().clone(), format!("{ABSENT_PREFIX}{id}"));
            }
            None => {}
        }
    }
    out
}

/// Creates [`FieldIdAdapter`]s: set on every Parquet scan of a table
/// (`FileScanConfigBuilder::with_expr_adapter`).
#[derive(Debug, Default)]
pub struct FieldIdAdapterFactory;

impl PhysicalExprAdapterFactory for FieldIdAdapterFactory {
    fn create(
        &self,
        logical_file_schema: SchemaRef,
        physical_file_schema: SchemaRef,
    ) -> DFResult<Arc<dyn PhysicalExprAdapter>> {
        let renames = renames(&logical_file_schema, &physical_file_schema);
        // The default adapter sees the table schema under the files' names.
        let logical = if renames.is_empty() {
            logical_file_schema
        } else {
            let fields = logical_file_schema
                .fields()
                .iter()
                .map(|f| match renames.get(f.name()) {
                    Some(name) => Arc::new(f.as_ref().clone().with_name(name)),
                    None => Arc::clone(f),
                })
                .collect::<Vec<_>>();
            Arc::new(Schema::new_with_metadata(
                fields,
                logical_file_schema.metadata().clone(),
            ))
        };
        let inner = DefaultPhysicalExprAdapterFactory.create(logical, physical_file_schema)?;
        Ok(Arc::new(FieldIdAdapter { renames, inner }))
    }
}

/// Renames the table columns an expression reads to the file's names (by
/// field id), then adapts it as DataFusion's default adapter does.
#[derive(Debug)]
pub struct FieldIdAdapter {
    renames: HashMap<String, String>,
    inner: Arc<dyn PhysicalExprAdapter>,
}

impl PhysicalExprAdapter for FieldIdAdapter {
    fn rewrite(&self, expr: Arc<dyn PhysicalExpr>) -> DFResult<Arc<dyn PhysicalExpr>> {
        let expr = if self.renames.is_empty() {
            expr
        } else {
            expr.transform(|e| {
                if let Some(column) = e.downcast_ref::<Column>() {
                    if let Some(name) = self.renames.get(column.name()) {
                        return Ok(Transformed::yes(
                            Arc::new(Column::new(name, column.index())) as Arc<dyn PhysicalExpr>,
                        ));
                    }
                }
                Ok(Transformed::no(e))
            })
            .data()?
        };
        self.inner.rewrite(expr)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use arrow::array::{Int32Array, Int64Array, RecordBatch, StringArray};
    use arrow::datatypes::DataType;
    use datafusion::logical_expr::ColumnarValue;

    fn with_id(name: &str, data_type: DataType, id: i32) -> Field {
        Field::new(name, data_type, true)
            .with_metadata(HashMap::from([(FIELD_ID_KEY.to_string(), id.to_string())]))
    }

    /// Evaluates the adapted reads of every table column over `file`.
    fn read(table: &Schema, file: &RecordBatch) -> Vec<ColumnarValue> {
        let adapter = FieldIdAdapterFactory
            .create(Arc::new(table.clone()), file.schema())
            .unwrap();
        table
            .fields()
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let column: Arc<dyn PhysicalExpr> = Arc::new(Column::new(f.name(), i));
                adapter.rewrite(column).unwrap().evaluate(file).unwrap()
            })
            .collect()
    }

    fn values(v: &ColumnarValue) -> String {
        match v {
            ColumnarValue::Array(a) => format!("{:?}", a.to_data()),
            ColumnarValue::Scalar(s) => format!("scalar {s:?}"),
        }
    }

    // A file written before `v` (id 2) was renamed `reading` and widened
    // from int to long, and before `v` (id 3) was added under the old name:
    // `reading` reads the file's `v`, the new `v` reads nulls, `host` is
    // found although the file has it at another position.
    #[test]
    fn columns_are_found_by_field_id() {
        let file = RecordBatch::try_new(
            Arc::new(Schema::new(vec![
                with_id("v", DataType::Int32, 2),
                with_id("host", DataType::Utf8, 1),
            ])),
            vec![
                Arc::new(Int32Array::from(vec![7, 8])),
                Arc::new(StringArray::from(vec!["a", "b"])),
            ],
        )
        .unwrap();
        let table = Schema::new(vec![
            with_id("host", DataType::Utf8, 1),
            with_id("reading", DataType::Int64, 2),
            with_id("v", DataType::Int64, 3),
        ]);
        let read = read(&table, &file);
        let host = read[0].clone().into_array(2).unwrap();
        assert_eq!(
            host.as_any().downcast_ref::<StringArray>().unwrap(),
            &StringArray::from(vec!["a", "b"])
        );
        let reading = read[1].clone().into_array(2).unwrap();
        assert_eq!(
            reading.as_any().downcast_ref::<Int64Array>().unwrap(),
            &Int64Array::from(vec![7, 8]),
            "{}",
            values(&read[1])
        );
        let v = read[2].clone().into_array(2).unwrap();
        assert_eq!(v.data_type(), &DataType::Int64);
        assert_eq!(v.null_count(), 2, "{}", values(&read[2]));
    }

    // Without field ids in the file, columns are matched by name.
    #[test]
    fn files_without_ids_match_by_name() {
        let file = RecordBatch::try_new(
            Arc::new(Schema::new(vec![Field::new("v", DataType::Int64, true)])),
            vec![Arc::new(Int64Array::from(vec![1, 2]))],
        )
        .unwrap();
        let table = Schema::new(vec![with_id("v", DataType::Int64, 9)]);
        let v = read(&table, &file)[0].clone().into_array(2).unwrap();
        assert_eq!(
            v.as_any().downcast_ref::<Int64Array>().unwrap(),
            &Int64Array::from(vec![1, 2])
        );
    }
}
