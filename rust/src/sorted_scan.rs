//! Sorted reads for operators that merge sorted inputs (ASOF JOIN).
//!
//! A Timelake scan marks the order its data files are sorted in (the
//! table's sort order: series key, then time; [`crate::provider`]'s
//! [`SortedFile`]) on each file but does not declare it, and it deals
//! several files to each partition, so DataFusion sees no order in a
//! partition. [`sorted_input`] reads such a scan one file per partition
//! instead, declaring the order, where that gives the order an operator
//! needs: each partition is then one sorted file, and DataFusion merges them
//! (`SortPreservingMergeExec`) instead of sorting. Other queries' plans do
//! not see the order.

use std::sync::Arc;

use datafusion::common::Result;
use datafusion::datasource::physical_plan::{FileGroup, FileScanConfig, FileScanConfigBuilder};
use datafusion::datasource::source::DataSourceExec;
use datafusion::physical_expr::LexOrdering;
use datafusion::physical_plan::execution_plan::{ChildrenPropertiesMode, ReplaceChildrenOptions};
use datafusion::physical_plan::repartition::RepartitionExec;
use datafusion::physical_plan::{ExecutionPlan, ExecutionPlanProperties, Partitioning};

use crate::provider::SortedFile;

/// `plan`, or `plan` with its Timelake scans read one file per partition,
/// and whether every partition of the result is sorted by `ordering`.
pub fn sorted_input(
    plan: Arc<dyn ExecutionPlan>,
    ordering: &LexOrdering,
) -> Result<(Arc<dyn ExecutionPlan>, bool)> {
    let satisfied = |p: &Arc<dyn ExecutionPlan>| {
        p.equivalence_properties()
            .ordering_satisfy(ordering.iter().cloned())
    };
    if satisfied(&plan)? {
        return Ok((plan, true));
    }
    let Some(split) = split_scans(&plan)? else {
        return Ok((plan, false));
    };
    if satisfied(&split)? {
        Ok((split, true))
    } else {
        Ok((plan, false))
    }
}

/// Rebuilds `plan` with each file scan that declares a file ordering read
/// one file per partition; None when nothing changes. Only looks through
/// operators that keep their input's order.
fn split_scans(plan: &Arc<dyn ExecutionPlan>) -> Result<Option<Arc<dyn ExecutionPlan>>> {
    if let Some(source) = plan.downcast_ref::<DataSourceExec>() {
        let Some(config) = source.data_source().downcast_ref::<FileScanConfig>() else {
            return Ok(None);
        };
        let declared = !config.output_ordering.is_empty();
        if declared && config.file_groups.iter().all(|g| g.len() <= 1) {
            return Ok(None);
        }
        let orderings = if declared {
            config.output_ordering.clone()
        } else {
            // The order the provider marks on its files ([`SortedFile`]),
            // when every file carries the same.
            let mut marks = config
                .file_groups
                .iter()
                .flat_map(|g| g.iter())
                .map(|f| f.extensions.get::<SortedFile>().map(|s| &s.0));
            let Some(Some(first)) = marks.next() else {
                return Ok(None);
            };
            if !marks.all(|m| m == Some(first)) {
                return Ok(None);
            }
            vec![first.clone()]
        };
        let groups: Vec<FileGroup> = config
            .file_groups
            .iter()
            .flat_map(|g| g.iter().cloned())
            .map(|f| FileGroup::new(vec![f]))
            .collect();
        let split = FileScanConfigBuilder::from(config.clone())
            .with_file_groups(groups)
            .with_output_ordering(orderings)
            .build();
        return Ok(Some(DataSourceExec::from_data_source(split)));
    }
    // A round-robin repartition only spreads a scan over more partitions,
    // which one file per partition does too.
    if let Some(repartition) = plan.downcast_ref::<RepartitionExec>() {
        if matches!(repartition.partitioning(), Partitioning::RoundRobinBatch(_))
            && !repartition.preserve_order()
        {
            return split_scans(repartition.input());
        }
    }
    let children = plan.children();
    if children.is_empty() || !plan.maintains_input_order().iter().all(|&m| m) {
        return Ok(None);
    }
    let mut changed = false;
    let mut new_children = Vec::with_capacity(children.len());
    for child in children {
        match split_scans(child)? {
            Some(c) => {
                changed = true;
                new_children.push(c);
            }
            None => new_children.push(Arc::clone(child)),
        }
    }
    if !changed {
        return Ok(None);
    }
    Ok(Some(Arc::clone(plan).replace_children(
        new_children,
        ReplaceChildrenOptions::new(ChildrenPropertiesMode::Recompute),
    )?))
}
