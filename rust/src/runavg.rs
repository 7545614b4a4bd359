//! `avg` that adds a run of rows of one group in a register.
//!
//! Files of a Timelake table are sorted by (series, time), so the rows a
//! `GROUP BY series, time_bucket(…)` aggregate sees come in long runs of one
//! group. DataFusion's grouped `avg` adds each row into its group's slot in
//! memory (`sums[g] += v; counts[g] += 1`): on a run, every addition waits for
//! the store of the one before, and that chain was a third of a TSBS
//! `double-groupby-all`. This wrapper keeps a run's sum and count in registers
//! and stores them once when the group changes. It adds the same values in the
//! same order as the built-in, so the results are the same bits.
//!
//! It also takes `Int64` as it is, where the built-in's signature has
//! DataFusion cast the column to `Float64` first: each value is converted as
//! it is added, the same conversion the cast makes, without a cast array per
//! column per batch (9% of `double-groupby-all`, whose ten metrics are
//! integers). Everything else (state, the non-grouped, window and DISTINCT
//! forms, other types, decimals, durations) is the built-in's, given the
//! input as `Float64`.

use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, ArrowPrimitiveType, AsArray, BooleanArray, Float64Array, PrimitiveArray,
    UInt64Array,
};
use arrow::buffer::NullBuffer;
use arrow::datatypes::{DataType, FieldRef, Float64Type, Int64Type, UInt64Type};
use datafusion::common::{Result, ScalarValue};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, Documentation, EmitTo, GroupsAccumulator,
    ReversedUDAF, Signature, TypeSignature,
};
use datafusion::physical_expr::NullState;

#[derive(Debug, PartialEq, Eq, Hash)]
pub struct RunAvg {
    inner: AggregateUDF,
    /// The built-in's, with `Int64` taken exactly ahead of its variants
    /// (other integers are then cast to `Int64`, which keeps their values).
    signature: Signature,
}

impl RunAvg {
    pub fn udaf() -> AggregateUDF {
        let inner = AggregateUDF::clone(&datafusion::functions_aggregate::average::avg_udaf());
        let builtin = inner.signature();
        let mut variants = vec![TypeSignature::Exact(vec![DataType::Int64])];
        match &builtin.type_signature {
            TypeSignature::OneOf(theirs) => variants.extend(theirs.iter().cloned()),
            theirs => variants.push(theirs.clone()),
        }
        let signature = Signature::one_of(variants, builtin.volatility);
        AggregateUDF::new_from_impl(Self { inner, signature })
    }
}

/// Whether the one argument is an `Int64`, or NULL (which our signature
/// leaves untyped), that the built-in would have had cast to `Float64`.
fn takes_int64(fields: &[FieldRef]) -> bool {
    fields.len() == 1 && matches!(fields[0].data_type(), DataType::Int64 | DataType::Null)
}

/// The fields as the built-in would have seen them: typed `Float64`.
fn as_float64(fields: &[FieldRef]) -> Vec<FieldRef> {
    fields
        .iter()
        .map(|f| Arc::new(f.as_ref().clone().with_data_type(DataType::Float64)))
        .collect()
}

/// The built-in's accumulator given an `Int64` input cast to `Float64` (the
/// non-grouped, window and DISTINCT forms).
#[derive(Debug)]
struct Float64Input(Box<dyn Accumulator>);

fn cast_to_float64(values: &[ArrayRef]) -> Result<Vec<ArrayRef>> {
    values
        .iter()
        .map(|v| Ok(arrow::compute::cast(v, &DataType::Float64)?))
        .collect()
}

impl Accumulator for Float64Input {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        self.0.update_batch(&cast_to_float64(values)?)
    }

    fn retract_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        self.0.retract_batch(&cast_to_float64(values)?)
    }

    fn supports_retract_batch(&self) -> bool {
        self.0.supports_retract_batch()
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        self.0.evaluate()
    }

    fn size(&self) -> usize {
        self.0.size()
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        self.0.state()
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        self.0.merge_batch(states)
    }
}

impl AggregateUDFImpl for RunAvg {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn aliases(&self) -> &[String] {
        self.inner.aliases()
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        self.inner.return_type(arg_types)
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        if !takes_int64(args.expr_fields) {
            return self.inner.accumulator(args);
        }
        let fields = as_float64(args.expr_fields);
        let inner = self.inner.accumulator(AccumulatorArgs {
            expr_fields: &fields,
            ..args
        })?;
        Ok(Box::new(Float64Input(inner)))
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        if !takes_int64(args.input_fields) {
            return self.inner.state_fields(args);
        }
        let fields = as_float64(args.input_fields);
        self.inner.state_fields(StateFieldsArgs {
            input_fields: &fields,
            ..args
        })
    }

    fn groups_accumulator_supported(&self, args: AccumulatorArgs) -> bool {
        if args.expr_fields.first().map(|f| f.data_type()) == Some(&DataType::Null) {
            return false; // the non-grouped accumulator, given the NULLs as Float64
        }
        let fields = as_float64(args.expr_fields);
        let args = if takes_int64(args.expr_fields) {
            AccumulatorArgs {
                expr_fields: &fields,
                ..args
            }
        } else {
            args
        };
        self.inner.groups_accumulator_supported(args)
    }

    fn create_groups_accumulator(
        &self,
        args: AccumulatorArgs,
    ) -> Result<Box<dyn GroupsAccumulator>> {
        let ours = args.expr_fields.len() == 1
            && matches!(
                args.expr_fields[0].data_type(),
                DataType::Float64 | DataType::Int64
            )
            && args.return_field.data_type() == &DataType::Float64
            && !args.is_distinct;
        if ours {
            Ok(Box::new(RunAvgGroups::default()))
        } else {
            self.inner.create_groups_accumulator(args)
        }
    }

    fn reverse_expr(&self) -> ReversedUDAF {
        ReversedUDAF::Identical
    }

    fn documentation(&self) -> Option<&Documentation> {
        self.inner.documentation()
    }
}

/// The grouped state of `avg(Float64)`: the built-in's (counts, sums, which
/// groups saw a value), filled a run at a time.
#[derive(Debug, Default)]
struct RunAvgGroups {
    counts: Vec<u64>,
    sums: Vec<f64>,
    null_state: NullState,
}

/// The rows that count, as validity: those whose value is not null and whose
/// filter entry is true (`None`: all of them).
fn counted(values: &dyn Array, filter: Option<&BooleanArray>) -> Option<NullBuffer> {
    let filter = filter.map(|f| match f.nulls() {
        Some(n) => NullBuffer::new(f.values() & n.inner()),
        None => NullBuffer::new(f.values().clone()),
    });
    NullBuffer::union(filter.as_ref(), values.nulls())
}

impl RunAvgGroups {
    fn update<T: ArrowPrimitiveType + Send>(
        &mut self,
        values: &PrimitiveArray<T>,
        group_indices: &[usize],
        opt_filter: Option<&BooleanArray>,
        total_num_groups: usize,
        to_f64: impl Fn(T::Native) -> f64,
    ) {
        self.counts.resize(total_num_groups, 0);
        self.sums.resize(total_num_groups, 0.0);
        // Which groups saw a value: the built-in's bookkeeping, on its own
        // (with no nulls and no filter it costs nothing).
        self.null_state.accumulate(
            group_indices,
            values,
            opt_filter,
            total_num_groups,
            |_, _| {},
        );
        let (sums, counts) = (&mut self.sums, &mut self.counts);
        let data = values.values();
        match counted(values, opt_filter) {
            None => add_runs(sums, counts, group_indices, data, to_f64, |_| true),
            Some(v) => add_runs(sums, counts, group_indices, data, to_f64, |row| {
                v.is_valid(row)
            }),
        }
    }
}

/// Adds the rows `valid(row)` accepts into `sums` and `counts`, a run of
/// one group at a time: the run's sum stays in a register, and is stored
/// once. Each group's values are added in row order, as the built-in does.
#[inline(always)]
fn add_runs<N: Copy>(
    sums: &mut [f64],
    counts: &mut [u64],
    groups: &[usize],
    values: &[N],
    to_f64: impl Fn(N) -> f64,
    valid: impl Fn(usize) -> bool,
) {
    let mut row = 0;
    while row < groups.len() {
        let group = groups[row];
        let mut sum = sums[group];
        let mut count = 0;
        while row < groups.len() && groups[row] == group {
            if valid(row) {
                sum += to_f64(values[row]);
                count += 1;
            }
            row += 1;
        }
        sums[group] = sum;
        counts[group] += count;
    }
}

impl GroupsAccumulator for RunAvgGroups {
    fn update_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        opt_filter: Option<&BooleanArray>,
        total_num_groups: usize,
    ) -> Result<()> {
        match values[0].data_type() {
            DataType::Int64 => self.update(
                values[0].as_primitive::<Int64Type>(),
                group_indices,
                opt_filter,
                total_num_groups,
                // What the cast to Float64 does (round to nearest).
                |v| v as f64,
            ),
            _ => self.update(
                values[0].as_primitive::<Float64Type>(),
                group_indices,
                opt_filter,
                total_num_groups,
                |v| v,
            ),
        }
        Ok(())
    }

    fn evaluate(&mut self, emit_to: EmitTo) -> Result<ArrayRef> {
        let counts = emit_to.take_needed(&mut self.counts);
        let sums = emit_to.take_needed(&mut self.sums);
        let nulls = self.null_state.build(emit_to);
        // A group that saw no value is null (its count is 0, its sum 0).
        let averages: Vec<f64> = sums
            .into_iter()
            .zip(counts)
            .map(|(sum, count)| sum / count as f64)
            .collect();
        Ok(Arc::new(Float64Array::new(averages.into(), nulls)))
    }

    fn state(&mut self, emit_to: EmitTo) -> Result<Vec<ArrayRef>> {
        let nulls = self.null_state.build(emit_to);
        let counts = emit_to.take_needed(&mut self.counts);
        let sums = emit_to.take_needed(&mut self.sums);
        Ok(vec![
            Arc::new(UInt64Array::new(counts.into(), nulls.clone())) as ArrayRef,
            Arc::new(Float64Array::new(sums.into(), nulls)) as ArrayRef,
        ])
    }

    fn merge_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        total_num_groups: usize,
    ) -> Result<()> {
        let partial_counts = values[0].as_primitive::<UInt64Type>();
        let partial_sums = values[1].as_primitive::<Float64Type>();
        self.counts.resize(total_num_groups, 0);
        self.sums.resize(total_num_groups, 0.0);
        let counts = &mut self.counts;
        self.null_state.accumulate(
            group_indices,
            partial_counts,
            None,
            total_num_groups,
            |group, count| counts[group] += count,
        );
        let sums = &mut self.sums;
        self.null_state.accumulate(
            group_indices,
            partial_sums,
            None,
            total_num_groups,
            |group, sum| sums[group] += sum,
        );
        Ok(())
    }

    fn convert_to_state(
        &self,
        values: &[ArrayRef],
        opt_filter: Option<&BooleanArray>,
    ) -> Result<Vec<ArrayRef>> {
        let nulls = counted(values[0].as_ref(), opt_filter);
        let sums = match values[0].data_type() {
            DataType::Int64 => {
                let ints = values[0].as_primitive::<Int64Type>();
                ints.values().iter().map(|&v| v as f64).collect()
            }
            _ => values[0].as_primitive::<Float64Type>().values().clone(),
        };
        let counts = vec![1u64; values[0].len()];
        Ok(vec![
            Arc::new(UInt64Array::new(counts.into(), nulls.clone())) as ArrayRef,
            Arc::new(Float64Array::new(sums, nulls)) as ArrayRef,
        ])
    }

    fn size(&self) -> usize {
        self.counts.capacity() * size_of::<u64>()
            + self.sums.capacity() * size_of::<f64>()
            + self.null_state.size()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{Array, ArrayRef, BooleanArray, Float64Array};
    use arrow::datatypes::{DataType, Field, FieldRef, Schema};
    use datafusion::logical_expr::function::AccumulatorArgs;
    use datafusion::logical_expr::{AggregateUDF, EmitTo, GroupsAccumulator};
    use datafusion::physical_expr::expressions::Column;
    use datafusion::physical_expr::PhysicalExpr;

    use super::RunAvg;
    use crate::tsagg_tests::Rng;

    fn groups(udaf: &AggregateUDF) -> Box<dyn GroupsAccumulator> {
        let schema = Schema::new(vec![Field::new("v", DataType::Float64, true)]);
        let field: FieldRef = Arc::new(schema.field(0).clone());
        let exprs: Vec<Arc<dyn PhysicalExpr>> = vec![Arc::new(Column::new("v", 0))];
        let args = AccumulatorArgs {
            return_field: Arc::new(Field::new("avg", DataType::Float64, true)),
            schema: &schema,
            ignore_nulls: false,
            order_bys: &[],
            is_reversed: false,
            name: "avg(v)",
            is_distinct: false,
            exprs: &exprs,
            expr_fields: &[field],
        };
        assert!(udaf.groups_accumulator_supported(args.clone()));
        udaf.create_groups_accumulator(args).unwrap()
    }

    /// Runs of groups (as sorted files give them), single rows, nulls, NaN,
    /// groups with nothing but nulls,
    /// values whose sum depends on the order of the additions, and a filter.
    fn batch(rng: &mut Rng, groups: usize) -> (Vec<usize>, ArrayRef, BooleanArray) {
        let mut indices = Vec::new();
        let mut values = Vec::new();
        let mut filter = Vec::new();
        while indices.len() < 3000 {
            let group = rng.below(groups as u64) as usize;
            let run = 1 + rng.below(40) as usize;
            for _ in 0..run {
                indices.push(group);
                values.push(match rng.below(50) {
                    // Every seventh group sees no value at all: its avg is null.
                    _ if group % 7 == 6 => None,
                    0 => None,
                    1 => Some(f64::NAN),
                    2 => Some(1e17),
                    _ => Some(rng.below(1000) as f64 / 7.0 - 50.0),
                });
                filter.push(match rng.below(20) {
                    0 => None,
                    1 => Some(false),
                    _ => Some(true),
                });
            }
        }
        (
            indices,
            Arc::new(Float64Array::from(values)),
            BooleanArray::from(filter),
        )
    }

    fn assert_same_bits(got: &ArrayRef, want: &ArrayRef, what: &str) {
        assert_eq!(got.data_type(), want.data_type(), "{what}");
        assert_eq!(got.nulls(), want.nulls(), "{what}: nulls");
        let (got, want) = (got.to_data(), want.to_data());
        assert_eq!(got.buffers().len(), want.buffers().len(), "{what}");
        // Values under null slots are not compared.
        let valid = |i: usize| want.nulls().is_none_or(|n| n.is_valid(i));
        let (g, w) = (&got.buffers()[0], &want.buffers()[0]);
        let width = g.len() / got.len().max(1);
        for i in (0..got.len()).filter(|&i| valid(i)) {
            assert_eq!(
                &g[i * width..(i + 1) * width],
                &w[i * width..(i + 1) * width],
                "{what}: row {i}"
            );
        }
    }

    #[test]
    fn grouped_avg_gives_the_builtins_bits() {
        let builtin = datafusion::functions_aggregate::average::avg_udaf();
        let ours = RunAvg::udaf();
        assert_eq!(ours.name(), "avg");
        assert_eq!(ours.aliases(), builtin.aliases());
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for filtered in [false, true] {
            let (mut a, mut b) = (groups(&builtin), groups(&ours));
            let (mut merged_a, mut merged_b) = (groups(&builtin), groups(&ours));
            for round in 0..6 {
                let n = 20 + round * 10;
                let (indices, values, filter) = batch(&mut rng, n);
                let filter = filtered.then_some(&filter);
                let values = [values];
                a.update_batch(&values, &indices, filter, n).unwrap();
                b.update_batch(&values, &indices, filter, n).unwrap();
                // Skipped partial aggregation, and the merge of its states.
                let sa = a.convert_to_state(&values, filter).unwrap();
                let sb = b.convert_to_state(&values, filter).unwrap();
                for (x, y) in sa.iter().zip(&sb) {
                    assert_same_bits(y, x, "convert_to_state");
                }
                merged_a.merge_batch(&sa, &indices, n).unwrap();
                merged_b.merge_batch(&sb, &indices, n).unwrap();
                if round == 3 {
                    // Emit the first groups early, as sorted input does.
                    let x = a.evaluate(EmitTo::First(7)).unwrap();
                    let y = b.evaluate(EmitTo::First(7)).unwrap();
                    assert_same_bits(&y, &x, "evaluate(First)");
                    let x = a.state(EmitTo::First(5)).unwrap();
                    let y = b.state(EmitTo::First(5)).unwrap();
                    for (x, y) in x.iter().zip(&y) {
                        assert_same_bits(y, x, "state(First)");
                    }
                    break;
                }
            }
            let x = a.evaluate(EmitTo::All).unwrap();
            let y = b.evaluate(EmitTo::All).unwrap();
            assert!(x.null_count() > 0, "some groups saw no value");
            assert_same_bits(&y, &x, "evaluate");
            let x = merged_a.evaluate(EmitTo::All).unwrap();
            let y = merged_b.evaluate(EmitTo::All).unwrap();
            assert_same_bits(&y, &x, "merged evaluate");
        }
    }

    /// `avg` over an Int64 column, with no cast in the plan, answers the
    /// bits of `avg` over the column cast to Float64: grouped in runs, with
    /// FILTER, not grouped, over a sliding window (which retracts), and
    /// beside the other input types the built-in's coercion still serves.
    /// DISTINCT takes the distinct integers (within rounding of the sum).
    #[test]
    fn int64_is_taken_as_it_is_with_the_builtins_bits() {
        use arrow::array::{
            AsArray, Float32Array, Int32Array, Int64Array, RecordBatch, UInt64Array,
        };
        use datafusion::datasource::MemTable;
        use datafusion::prelude::{SessionConfig, SessionContext};

        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        let n = 3000;
        let mut ints = Vec::new();
        for k in 0..n {
            // Nulls, and values past 2^53 whose conversion rounds.
            ints.push(match rng.below(20) {
                0 => None,
                1 => Some((1i64 << 53) + rng.below(1000) as i64),
                2 => Some(-(rng.below(1 << 40) as i64)),
                _ => Some(rng.below(100) as i64 + k),
            });
        }
        let groups: Vec<i64> = (0..n).map(|k| k / 70).collect();
        let schema = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int64, false),
            Field::new("g", DataType::Int64, false),
            Field::new("v", DataType::Int64, true),
            Field::new("i", DataType::Int32, true),
            Field::new("u", DataType::UInt64, true),
            Field::new("f", DataType::Float32, true),
        ]));
        let column = |f: &dyn Fn(Option<i64>) -> Option<i64>| -> Vec<Option<i64>> {
            ints.iter().map(|&v| f(v)).collect()
        };
        let batch = RecordBatch::try_new(
            Arc::clone(&schema),
            vec![
                Arc::new(Int64Array::from((0..n).collect::<Vec<_>>())),
                Arc::new(Int64Array::from(groups)),
                Arc::new(Int64Array::from(ints.clone())),
                Arc::new(Int32Array::from_iter(
                    column(&|v| v.map(|x| x % 100_000))
                        .into_iter()
                        .map(|v| v.map(|x| x as i32)),
                )),
                Arc::new(UInt64Array::from_iter(
                    column(&|v| v.map(|x| x.unsigned_abs() as i64))
                        .into_iter()
                        .map(|v| v.map(|x| x as u64)),
                )),
                Arc::new(Float32Array::from_iter(
                    ints.iter().map(|v| v.map(|x| (x % 1000) as f32 / 7.0)),
                )),
            ],
        )
        .unwrap();
        // Batches of 256 rows in 2 partitions: runs cross batch ends.
        let parts: Vec<Vec<RecordBatch>> = (0..2)
            .map(|p| {
                let half = batch.slice(p * (n as usize / 2), n as usize / 2);
                (0..half.num_rows())
                    .step_by(256)
                    .map(|at| half.slice(at, 256.min(half.num_rows() - at)))
                    .collect()
            })
            .collect();
        let ctx = SessionContext::new_with_config(SessionConfig::new().with_target_partitions(2));
        ctx.register_table("t", Arc::new(MemTable::try_new(schema, parts).unwrap()))
            .unwrap();
        // The Float64 forms are the built-in's (the grouped one gives its
        // bits, grouped_avg_gives_the_builtins_bits): an explicit cast is
        // what the built-in's coercion inserted.
        ctx.register_udaf(RunAvg::udaf());

        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let run = |sql: &str| -> Vec<RecordBatch> {
            rt.block_on(async { ctx.sql(sql).await?.collect().await })
                .unwrap()
        };
        let explain = run("EXPLAIN SELECT g, avg(v) FROM t GROUP BY g");
        let plan = arrow::util::pretty::pretty_format_batches(&explain)
            .unwrap()
            .to_string();
        assert!(
            plan.contains("avg(t.v)") && !plan.contains("CAST"),
            "{plan}"
        );

        // Each shape with {A} our Int64 form (or another type's), {B} the
        // Float64 one: run apart, as physical plans name both `avg(t.v)`.
        let shapes = [
            "SELECT g, {A} FROM t GROUP BY g ORDER BY g",
            "SELECT g % 3, {A} FILTER (WHERE k % 5 <> 0) FROM t GROUP BY 1 ORDER BY 1",
            "SELECT {A} FROM t",
            "SELECT k, {A} OVER (ORDER BY k ROWS BETWEEN 5 PRECEDING AND CURRENT ROW) \
             FROM t ORDER BY k",
        ];
        let mut cases = Vec::new();
        for shape in shapes {
            cases.push((
                shape.replace("{A}", "avg(v)"),
                shape.replace("{A}", "avg(CAST(v AS DOUBLE))"),
            ));
        }
        for (ours, reference) in [
            ("avg(i)", "avg(CAST(CAST(i AS BIGINT) AS DOUBLE))"),
            ("avg(u)", "avg(CAST(u AS DOUBLE))"),
            ("avg(f)", "avg(CAST(f AS DOUBLE))"),
        ] {
            let shape = "SELECT g, {A} FROM t GROUP BY g ORDER BY g";
            cases.push((shape.replace("{A}", ours), shape.replace("{A}", reference)));
        }
        // DISTINCT over the integers themselves: 2^53 and 2^53 + 1 are two
        // values, where the built-in's cast made them one.
        cases.push((
            "SELECT g, avg(DISTINCT v) FROM t GROUP BY g ORDER BY g".into(),
            "SELECT g, avg(CAST(v AS DOUBLE)) FROM (SELECT DISTINCT g, v FROM t) \
             GROUP BY g ORDER BY g"
                .into(),
        ));
        for shape in [
            "SELECT {A} FROM t",
            "SELECT g, {A} FROM t GROUP BY g ORDER BY g",
        ] {
            cases.push((
                shape.replace("{A}", "avg(NULL)"),
                shape.replace("{A}", "avg(CAST(NULL AS DOUBLE))"),
            ));
        }
        for (ours, reference) in cases {
            let (got, want) = (run(&ours), run(&reference));
            let rows: usize = got.iter().map(|b| b.num_rows()).sum();
            assert!(rows > 0, "{ours}");
            let got = arrow::compute::concat_batches(&got[0].schema(), &got).unwrap();
            let want = arrow::compute::concat_batches(&want[0].schema(), &want).unwrap();
            assert_eq!(got.num_rows(), want.num_rows(), "{ours}");
            let last = got.num_columns() - 1;
            for c in 0..last {
                assert_eq!(got.column(c), want.column(c), "{ours}: column {c}");
            }
            let (a, b) = (got.column(last), want.column(last));
            assert_eq!(a.data_type(), &DataType::Float64, "{ours}");
            assert_eq!(b.data_type(), &DataType::Float64, "{reference}");
            let (a, b) = (
                a.as_primitive::<arrow::datatypes::Float64Type>(),
                b.as_primitive::<arrow::datatypes::Float64Type>(),
            );
            // DISTINCT adds a hash set's values, in an order that differs
            // from run to run (and partitions merge in either order).
            let exact = !ours.contains("DISTINCT");
            for r in 0..got.num_rows() {
                assert_eq!(a.is_null(r), b.is_null(r), "{ours}: row {r}");
                if a.is_null(r) {
                    continue;
                }
                let (x, y) = (a.value(r), b.value(r));
                if exact {
                    assert_eq!(x.to_bits(), y.to_bits(), "{ours}: row {r}");
                } else {
                    assert!((x - y).abs() <= 1e-12 * y.abs(), "{ours}: row {r}: {x} {y}");
                }
            }
        }
    }
}
