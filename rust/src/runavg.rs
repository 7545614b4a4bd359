//! `avg` that adds a run of rows of one group in a register.
//!
//! Files of a Timelake table are sorted by (series, time), so the rows a
//! `GROUP BY series, time_bucket(…)` aggregate sees come in long runs of one
//! group. DataFusion's grouped `avg` adds each row into its group's slot in
//! memory (`sums[g] += v; counts[g] += 1`): on a run, every addition waits for
//! the store of the one before, and that chain was a third of a TSBS
//! `double-groupby-all`. This wrapper keeps a run's sum and count in registers
//! and stores them once when the group changes. It adds the same values in the
//! same order as the built-in, so the results are the same bits. Everything
//! else (types, coercion, state, the non-grouped and DISTINCT forms, decimals,
//! durations) is the built-in's.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, BooleanArray, Float64Array, UInt64Array};
use arrow::buffer::NullBuffer;
use arrow::datatypes::{DataType, FieldRef, Float64Type, UInt64Type};
use datafusion::common::Result;
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, Documentation, EmitTo, GroupsAccumulator,
    ReversedUDAF, Signature,
};
use datafusion::physical_expr::NullState;

#[derive(Debug, PartialEq, Eq, Hash)]
pub struct RunAvg {
    inner: AggregateUDF,
}

impl RunAvg {
    pub fn udaf() -> AggregateUDF {
        let inner = datafusion::functions_aggregate::average::avg_udaf();
        AggregateUDF::new_from_impl(Self {
            inner: AggregateUDF::clone(&inner),
        })
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
        self.inner.signature()
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        self.inner.return_type(arg_types)
    }

    fn accumulator(&self, acc_args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        self.inner.accumulator(acc_args)
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        self.inner.state_fields(args)
    }

    fn groups_accumulator_supported(&self, args: AccumulatorArgs) -> bool {
        self.inner.groups_accumulator_supported(args)
    }

    fn create_groups_accumulator(
        &self,
        args: AccumulatorArgs,
    ) -> Result<Box<dyn GroupsAccumulator>> {
        let floats = args.expr_fields.len() == 1
            && args.expr_fields[0].data_type() == &DataType::Float64
            && args.return_field.data_type() == &DataType::Float64
            && !args.is_distinct;
        if floats {
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

/// Adds the rows `valid(row)` accepts into `sums` and `counts`, a run of
/// one group at a time: the run's sum stays in a register, and is stored
/// once. Each group's values are added in row order, as the built-in does.
#[inline(always)]
fn add_runs(
    sums: &mut [f64],
    counts: &mut [u64],
    groups: &[usize],
    values: &[f64],
    valid: impl Fn(usize) -> bool,
) {
    let mut row = 0;
    while row < groups.len() {
        let group = groups[row];
        let mut sum = sums[group];
        let mut count = 0;
        while row < groups.len() && groups[row] == group {
            if valid(row) {
                sum += values[row];
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
        let values = values[0].as_primitive::<Float64Type>();
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
            None => add_runs(sums, counts, group_indices, data, |_| true),
            Some(v) => add_runs(sums, counts, group_indices, data, |row| v.is_valid(row)),
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
        let sums = values[0].as_primitive::<Float64Type>();
        let nulls = counted(sums, opt_filter);
        let counts = vec![1u64; sums.len()];
        Ok(vec![
            Arc::new(UInt64Array::new(counts.into(), nulls.clone())) as ArrayRef,
            Arc::new(Float64Array::new(sums.values().clone(), nulls)) as ArrayRef,
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
}
