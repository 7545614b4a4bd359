//! `ASOF JOIN`: each row of the left input joined with the right row of equal
//! keys whose time is nearest on the side the inequality names.
//!
//! ```sql
//! SELECT … FROM trades t ASOF JOIN quotes q
//!   ON t.symbol = q.symbol AND t.time >= q.time          -- DuckDB's spelling
//! SELECT … FROM trades t ASOF LEFT JOIN quotes q ON …      -- keep unmatched trades
//! SELECT … FROM trades t ASOF JOIN quotes q
//!   MATCH_CONDITION (t.time >= q.time) ON t.symbol = q.symbol   -- Snowflake's (a LEFT join)
//! ```
//!
//! `LEFT [OUTER] ASOF JOIN` is accepted as well as DuckDB's
//! `ASOF LEFT [OUTER] JOIN`. The inequality is `>=`, `>`, `<=` or `<`
//! between an expression of each side (either way round); `>=`/`>` take the
//! latest right row at or before (strictly before) the left time, `<=`/`<`
//! the earliest at or after (strictly after). Every other conjunct of `ON`
//! must be an equality between the two sides. NULL keys or times never
//! match. Among right rows with equal keys and time the first in the input
//! order matches (DuckDB's choice too; which is first is unspecified for
//! table scans).
//!
//! How it is planned, in three steps:
//! 1. [`logical_plan`]: DataFusion's parser (sqlparser) knows only Snowflake's
//!    `ASOF JOIN … MATCH_CONDITION (…)`. When the SQL mentions `ASOF`, its
//!    tokens are rewritten first: DuckDB's spelling gets a
//!    `MATCH_CONDITION (<marker>)` naming inner or left, so both spellings
//!    parse into sqlparser's `JoinOperator::AsOf`; then the AST's ASOF joins
//!    become ordinary `INNER`/`LEFT` joins whose `ON` holds the equalities and
//!    `__timelake_asof(<inequality>)`, which DataFusion plans as a join.
//! 2. [`AsofJoinRule`] (an analyzer rule, so before any optimizer moves the
//!    condition) turns every join whose filter holds that marker into the
//!    [`AsofJoin`] logical node, checking the condition's shape.
//!    [`AsofFilterPushdown`] moves filters on the left input's columns below
//!    it (they keep or drop left rows alike); filters on the right side stay
//!    above, since they would change which right row is nearest.
//! 3. [`AsofPlanner`] plans it as [`AsofJoinExec`], a streaming merge of
//!    both inputs sorted by (keys, time); DataFusion sorts an input only
//!    when it is not sorted already (Timelake scans whose files are sorted
//!    by (series key, time) are read one file per partition and merged).

use std::cmp::Ordering;
use std::collections::HashSet;
use std::fmt;
use std::ops::ControlFlow;
use std::sync::Arc;

use arrow::datatypes::DataType;
use async_trait::async_trait;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TransformedResult, TreeNode};
use datafusion::common::{plan_err, DFSchema, DFSchemaRef, Result};
use datafusion::execution::context::{SQLOptions, SessionState};
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::logical_plan::build_join_schema;
use datafusion::logical_expr::utils::{conjunction, split_conjunction};
use datafusion::logical_expr::{
    BinaryExpr, ColumnarValue, Expr, ExprSchemable, Extension, Filter, JoinType, LogicalPlan,
    Operator, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, UserDefinedLogicalNode,
    UserDefinedLogicalNodeCore, Volatility,
};
use datafusion::optimizer::analyzer::AnalyzerRule;
use datafusion::optimizer::{ApplyOrder, OptimizerConfig, OptimizerRule};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_planner::{ExtensionPlanner, PhysicalPlanner};
use datafusion::sql::parser::{DFParserBuilder, Statement as DFStatement};
use datafusion::sql::sqlparser::ast::{
    self as sql, BinaryOperator, FunctionArg, FunctionArgExpr, FunctionArguments, Ident,
    JoinConstraint, JoinOperator, TableFactor, TableWithJoins, VisitMut, VisitorMut,
};
use datafusion::sql::sqlparser::dialect::{dialect_from_str, Dialect};
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::parser::Parser;
use datafusion::sql::sqlparser::tokenizer::{Token, TokenWithSpan, Tokenizer};

use crate::asof_exec::{AsofJoinExec, AsofOp};
use crate::sorted_scan::sorted_input;

/// The marker function the AST rewrite wraps the inequality in.
pub const MARKER: &str = "__timelake_asof";
const INNER_MARK: &str = "__timelake_asof_inner";
const LEFT_MARK: &str = "__timelake_asof_left";

// --- 1. parsing -------------------------------------------------------------

/// The logical plan of `sql`, as `SessionContext::sql_with_options` makes
/// it, with `ASOF JOIN` in DuckDB's and Snowflake's spellings.
pub async fn logical_plan(
    state: &SessionState,
    sql: &str,
    options: SQLOptions,
) -> Result<LogicalPlan> {
    let plan = if sql.to_ascii_lowercase().contains("asof") {
        state.statement_to_plan(parse(state, sql)?).await?
    } else {
        state.create_logical_plan(sql).await?
    };
    options.verify_plan(&plan)?;
    Ok(plan)
}

/// One statement, its ASOF joins made plannable (module comment, step 1).
fn parse(state: &SessionState, sql: &str) -> Result<DFStatement> {
    let options = state.config().options();
    let dialect_name = options.sql_parser.dialect.to_string();
    let Some(dialect) = dialect_from_str(&dialect_name) else {
        return plan_err!("unsupported SQL dialect {dialect_name}");
    };
    let tokens = Tokenizer::new(dialect.as_ref(), sql)
        .tokenize_with_location()
        .map_err(|e| datafusion::error::DataFusionError::SQL(Box::new(e.into()), None))?;
    let tokens = mark_duckdb_joins(tokens)?;
    let mut statements = DFParserBuilder::new(tokens)
        .with_dialect(dialect.as_ref())
        .with_recursion_limit(options.sql_parser.recursion_limit.get())
        .build()?
        .parse_statements()?;
    if statements.len() != 1 {
        return plan_err!("expected one SQL statement, got {}", statements.len());
    }
    let mut statement = statements.pop_front().expect("one statement");
    rewrite_statement(&mut statement, dialect.as_ref())?;
    Ok(statement)
}

fn is_keyword(token: &Token, keyword: Keyword) -> bool {
    matches!(token, Token::Word(w) if w.keyword == keyword && w.quote_style.is_none())
}

/// DuckDB's `[LEFT [OUTER]] ASOF [LEFT [OUTER]] JOIN rel ON cond` becomes
/// `ASOF JOIN rel MATCH_CONDITION (<inner or left marker>) ON cond`, which
/// sqlparser parses; Snowflake's spelling (with `MATCH_CONDITION`) is left as
/// it is.
fn mark_duckdb_joins(tokens: Vec<TokenWithSpan>) -> Result<Vec<TokenWithSpan>> {
    // Indices of the tokens that are not whitespace.
    let words: Vec<usize> = (0..tokens.len())
        .filter(|&i| !matches!(tokens[i].token, Token::Whitespace(_)))
        .collect();
    let mut drop = HashSet::new();
    // Insert `MATCH_CONDITION ( marker )` before the token at an index.
    let mut inserts: Vec<(usize, &str)> = Vec::new();
    for (w, &i) in words.iter().enumerate() {
        if !is_keyword(&tokens[i].token, Keyword::ASOF) {
            continue;
        }
        let at = |k: usize| words.get(k).map(|&j| &tokens[j].token);
        let mut left = false;
        let mut dropped = Vec::new();
        // LEFT [OUTER] before ASOF.
        if w >= 1 && at(w - 1).is_some_and(|t| is_keyword(t, Keyword::OUTER)) {
            if w >= 2 && at(w - 2).is_some_and(|t| is_keyword(t, Keyword::LEFT)) {
                left = true;
                dropped.extend([words[w - 2], words[w - 1]]);
            }
        } else if w >= 1 && at(w - 1).is_some_and(|t| is_keyword(t, Keyword::LEFT)) {
            left = true;
            dropped.push(words[w - 1]);
        }
        // [LEFT [OUTER]] JOIN after ASOF.
        let mut k = w + 1;
        if at(k).is_some_and(|t| is_keyword(t, Keyword::LEFT)) {
            left = true;
            dropped.push(words[k]);
            k += 1;
            if at(k).is_some_and(|t| is_keyword(t, Keyword::OUTER)) {
                dropped.push(words[k]);
                k += 1;
            }
        }
        if !at(k).is_some_and(|t| is_keyword(t, Keyword::JOIN)) {
            // `asof` as a name (a column, an alias: followed by a comma, a
            // keyword, …) is not a join; followed by another name it is a
            // misspelt one.
            let named =
                matches!(at(w + 1), Some(Token::Word(word)) if word.keyword == Keyword::NoKeyword);
            if left || named {
                return plan_err!("ASOF must be followed by JOIN (ASOF [LEFT] JOIN … ON …)");
            }
            continue;
        }
        drop.extend(dropped);
        // The first ON, USING or MATCH_CONDITION after the relation, outside
        // its parentheses.
        let mut depth = 0i32;
        let mut found = None;
        for &j in &words[k + 1..] {
            match &tokens[j].token {
                Token::LParen => depth += 1,
                Token::RParen => depth -= 1,
                t if depth == 0 && is_keyword(t, Keyword::ON) => {
                    found = Some((j, Keyword::ON));
                    break;
                }
                t if depth == 0 && is_keyword(t, Keyword::USING) => {
                    found = Some((j, Keyword::USING));
                    break;
                }
                t if depth == 0 && is_keyword(t, Keyword::MATCH_CONDITION) => {
                    found = Some((j, Keyword::MATCH_CONDITION));
                    break;
                }
                _ => {}
            }
            if depth < 0 {
                break;
            }
        }
        match found {
            Some((j, Keyword::ON)) => inserts.push((j, if left { LEFT_MARK } else { INNER_MARK })),
            Some((_, Keyword::MATCH_CONDITION)) => {} // Snowflake's spelling: a LEFT join
            Some(_) => {
                return plan_err!(
                    "ASOF JOIN … USING is not supported: write the condition with ON, e.g. \
                     ON t.symbol = q.symbol AND t.time >= q.time"
                )
            }
            None => {
                return plan_err!(
                    "ASOF JOIN needs an ON condition: equalities and one inequality, e.g. \
                     ON t.symbol = q.symbol AND t.time >= q.time"
                )
            }
        }
    }
    if drop.is_empty() && inserts.is_empty() {
        return Ok(tokens);
    }
    let mut out = Vec::with_capacity(tokens.len() + 4 * inserts.len());
    for (i, token) in tokens.into_iter().enumerate() {
        if let Some(&(_, mark)) = inserts.iter().find(|(at, _)| *at == i) {
            out.push(TokenWithSpan::wrap(Token::make_keyword("MATCH_CONDITION")));
            out.push(TokenWithSpan::wrap(Token::LParen));
            out.push(TokenWithSpan::wrap(Token::make_word(mark, None)));
            out.push(TokenWithSpan::wrap(Token::RParen));
            out.push(TokenWithSpan::wrap(Token::Whitespace(
                datafusion::sql::sqlparser::tokenizer::Whitespace::Space,
            )));
        }
        if !drop.contains(&i) {
            out.push(token);
        }
    }
    Ok(out)
}

/// Turns every `JoinOperator::AsOf` of the statement into an INNER or LEFT
/// join whose ON condition carries the inequality in the marker function.
fn rewrite_statement(statement: &mut DFStatement, dialect: &dyn Dialect) -> Result<()> {
    match statement {
        DFStatement::Statement(s) => {
            let mut visitor = AsofAstRewrite {
                dialect,
                error: None,
            };
            let _ = s.visit(&mut visitor);
            match visitor.error {
                Some(e) => Err(e),
                None => Ok(()),
            }
        }
        DFStatement::Explain(explain) => rewrite_statement(&mut explain.statement, dialect),
        _ => Ok(()),
    }
}

struct AsofAstRewrite<'a> {
    dialect: &'a dyn Dialect,
    error: Option<datafusion::error::DataFusionError>,
}

impl VisitorMut for AsofAstRewrite<'_> {
    type Break = ();

    fn pre_visit_select(&mut self, select: &mut sql::Select) -> ControlFlow<()> {
        for from in &mut select.from {
            if let Err(e) = self.rewrite_joins(from) {
                self.error = Some(e);
                return ControlFlow::Break(());
            }
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_table_factor(&mut self, factor: &mut TableFactor) -> ControlFlow<()> {
        if let TableFactor::NestedJoin {
            table_with_joins, ..
        } = factor
        {
            if let Err(e) = self.rewrite_joins(table_with_joins) {
                self.error = Some(e);
                return ControlFlow::Break(());
            }
        }
        ControlFlow::Continue(())
    }
}

fn unnest(expr: sql::Expr) -> sql::Expr {
    match expr {
        sql::Expr::Nested(inner) => unnest(*inner),
        other => other,
    }
}

fn sql_conjuncts(expr: sql::Expr, out: &mut Vec<sql::Expr>) {
    match unnest(expr) {
        sql::Expr::BinaryOp {
            left,
            op: BinaryOperator::And,
            right,
        } => {
            sql_conjuncts(*left, out);
            sql_conjuncts(*right, out);
        }
        other => out.push(other),
    }
}

fn is_inequality(expr: &sql::Expr) -> bool {
    matches!(
        expr,
        sql::Expr::BinaryOp {
            op: BinaryOperator::Gt
                | BinaryOperator::GtEq
                | BinaryOperator::Lt
                | BinaryOperator::LtEq,
            ..
        }
    )
}

impl AsofAstRewrite<'_> {
    fn rewrite_joins(&self, from: &mut TableWithJoins) -> Result<()> {
        for join in &mut from.joins {
            let JoinOperator::AsOf {
                match_condition,
                constraint,
            } = &join.join_operator
            else {
                continue;
            };
            let mark = match match_condition {
                sql::Expr::Identifier(id) if id.quote_style.is_none() => Some(id.value.as_str()),
                _ => None,
            };
            let (left, inequality, mut rest) = match mark {
                Some(m) if m == INNER_MARK || m == LEFT_MARK => {
                    // DuckDB's spelling: the inequality is one of ON's conjuncts.
                    let JoinConstraint::On(on) = constraint else {
                        return plan_err!("ASOF JOIN needs an ON condition");
                    };
                    let mut conjuncts = Vec::new();
                    sql_conjuncts(on.clone(), &mut conjuncts);
                    let (inequalities, rest): (Vec<_>, Vec<_>) =
                        conjuncts.into_iter().partition(is_inequality);
                    let [inequality] =
                        <[sql::Expr; 1]>::try_from(inequalities).map_err(|found| {
                            datafusion::error::DataFusionError::Plan(format!(
                                "ASOF JOIN: the ON condition must hold exactly one inequality \
                             (>=, >, <= or <) between the two sides, found {}{}",
                                found.len(),
                                if found.is_empty() {
                                    String::new()
                                } else {
                                    format!(
                                        ": {}",
                                        found
                                            .iter()
                                            .map(|e| e.to_string())
                                            .collect::<Vec<_>>()
                                            .join(", ")
                                    )
                                }
                            ))
                        })?;
                    (m == LEFT_MARK, inequality, rest)
                }
                _ => {
                    // Snowflake's spelling: a left join (unmatched rows kept).
                    let inequality = unnest(match_condition.clone());
                    if !is_inequality(&inequality) {
                        return plan_err!(
                            "ASOF JOIN: MATCH_CONDITION must be an inequality (>=, >, <= or <) \
                             between the two sides, not {inequality}"
                        );
                    }
                    let mut rest = Vec::new();
                    match constraint {
                        JoinConstraint::On(on) => sql_conjuncts(on.clone(), &mut rest),
                        JoinConstraint::None => {}
                        _ => {
                            return plan_err!(
                                "ASOF JOIN … MATCH_CONDITION (…) takes ON with equalities, \
                                 not USING or NATURAL"
                            )
                        }
                    }
                    (true, inequality, rest)
                }
            };
            rest.push(self.marker_call(inequality)?);
            let on = rest
                .into_iter()
                .reduce(|a, b| sql::Expr::BinaryOp {
                    left: Box::new(a),
                    op: BinaryOperator::And,
                    right: Box::new(b),
                })
                .expect("the marker at least");
            join.join_operator = if left {
                JoinOperator::LeftOuter(JoinConstraint::On(on))
            } else {
                JoinOperator::Inner(JoinConstraint::On(on))
            };
        }
        Ok(())
    }

    /// `__timelake_asof(<inequality>)`.
    fn marker_call(&self, inequality: sql::Expr) -> Result<sql::Expr> {
        let mut call = Parser::new(self.dialect)
            .try_with_sql(&format!("{MARKER}(TRUE)"))
            .and_then(|mut p| p.parse_expr())
            .map_err(|e| datafusion::error::DataFusionError::SQL(Box::new(e), None))?;
        if let sql::Expr::Function(f) = &mut call {
            if let FunctionArguments::List(list) = &mut f.args {
                list.args = vec![FunctionArg::Unnamed(FunctionArgExpr::Expr(inequality))];
                f.name = sql::ObjectName::from(vec![Ident::new(MARKER)]);
                return Ok(call);
            }
        }
        plan_err!("internal: could not build the ASOF marker call")
    }
}

// --- the marker function ------------------------------------------------------

/// `__timelake_asof(bool)`: only a mark for [`AsofJoinRule`]; evaluating it
/// means a join was left unconverted, which is an error.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct AsofMarker {
    signature: Signature,
}

impl AsofMarker {
    pub fn udf() -> ScalarUDF {
        ScalarUDF::new_from_impl(Self {
            signature: Signature::exact(vec![DataType::Boolean], Volatility::Immutable),
        })
    }
}

impl ScalarUDFImpl for AsofMarker {
    fn name(&self) -> &str {
        MARKER
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(DataType::Boolean)
    }

    fn invoke_with_args(&self, _args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        plan_err!("{MARKER} is internal to ASOF JOIN and cannot be called")
    }
}

fn marker_arg(expr: &Expr) -> Option<&Expr> {
    match expr {
        Expr::ScalarFunction(ScalarFunction { func, args }) if func.name() == MARKER => {
            args.first()
        }
        _ => None,
    }
}

fn contains_marker(expr: &Expr) -> bool {
    expr.exists(|e| Ok(marker_arg(e).is_some()))
        .unwrap_or(false)
}

// --- 2. the logical node ------------------------------------------------------

/// Inner or left ASOF join (module comment).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AsofJoin {
    pub left: Arc<LogicalPlan>,
    pub right: Arc<LogicalPlan>,
    /// Keep left rows without a match (right columns NULL).
    pub left_outer: bool,
    /// Equal keys: (left expression, right expression).
    pub on: Vec<(Expr, Expr)>,
    pub left_time: Expr,
    pub op: AsofOp,
    pub right_time: Expr,
    pub schema: DFSchemaRef,
}

impl PartialOrd for AsofJoin {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        (
            &self.left,
            &self.right,
            &self.on,
            &self.left_time,
            &self.right_time,
        )
            .partial_cmp(&(
                &other.left,
                &other.right,
                &other.on,
                &other.left_time,
                &other.right_time,
            ))
    }
}

impl AsofJoin {
    fn try_new(
        left: Arc<LogicalPlan>,
        right: Arc<LogicalPlan>,
        left_outer: bool,
        on: Vec<(Expr, Expr)>,
        left_time: Expr,
        op: AsofOp,
        right_time: Expr,
    ) -> Result<Self> {
        let join_type = if left_outer {
            JoinType::Left
        } else {
            JoinType::Inner
        };
        let schema = Arc::new(build_join_schema(
            left.schema(),
            right.schema(),
            &join_type,
        )?);
        Ok(Self {
            left,
            right,
            left_outer,
            on,
            left_time,
            op,
            right_time,
            schema,
        })
    }
}

impl UserDefinedLogicalNodeCore for AsofJoin {
    fn name(&self) -> &str {
        "AsofJoin"
    }

    fn inputs(&self) -> Vec<&LogicalPlan> {
        vec![&self.left, &self.right]
    }

    fn schema(&self) -> &DFSchemaRef {
        &self.schema
    }

    fn expressions(&self) -> Vec<Expr> {
        let mut exprs = Vec::with_capacity(2 * self.on.len() + 2);
        for (l, r) in &self.on {
            exprs.push(l.clone());
            exprs.push(r.clone());
        }
        exprs.push(self.left_time.clone());
        exprs.push(self.right_time.clone());
        exprs
    }

    fn fmt_for_explain(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let keys: Vec<String> = self.on.iter().map(|(l, r)| format!("{l} = {r}")).collect();
        write!(
            f,
            "AsofJoin: {}{} {} {}{}{}",
            if self.left_outer { "left, " } else { "" },
            self.left_time,
            self.op,
            self.right_time,
            if keys.is_empty() { "" } else { ", on " },
            keys.join(" AND ")
        )
    }

    fn with_exprs_and_inputs(
        &self,
        mut exprs: Vec<Expr>,
        mut inputs: Vec<LogicalPlan>,
    ) -> Result<Self> {
        if inputs.len() != 2 || exprs.len() != 2 * self.on.len() + 2 {
            return plan_err!("AsofJoin: wrong number of inputs or expressions");
        }
        let right_time = exprs.pop().expect("checked");
        let left_time = exprs.pop().expect("checked");
        let mut on = Vec::with_capacity(self.on.len());
        let mut it = exprs.into_iter();
        while let (Some(l), Some(r)) = (it.next(), it.next()) {
            on.push((l, r));
        }
        let right = inputs.pop().expect("checked");
        let left = inputs.pop().expect("checked");
        Self::try_new(
            Arc::new(left),
            Arc::new(right),
            self.left_outer,
            on,
            left_time,
            self.op,
            right_time,
        )
    }

    /// The output columns asked for, plus what the keys and times read.
    fn necessary_children_exprs(&self, output_columns: &[usize]) -> Option<Vec<Vec<usize>>> {
        let n_left = self.left.schema().fields().len();
        let mut left: Vec<usize> = output_columns
            .iter()
            .copied()
            .filter(|&i| i < n_left)
            .collect();
        let mut right: Vec<usize> = output_columns
            .iter()
            .filter(|&&i| i >= n_left)
            .map(|&i| i - n_left)
            .collect();
        let add = |expr: &Expr, schema: &DFSchema, out: &mut Vec<usize>| -> Option<()> {
            for c in expr.column_refs() {
                out.push(schema.index_of_column(c).ok()?);
            }
            Some(())
        };
        for (l, r) in &self.on {
            add(l, self.left.schema(), &mut left)?;
            add(r, self.right.schema(), &mut right)?;
        }
        add(&self.left_time, self.left.schema(), &mut left)?;
        add(&self.right_time, self.right.schema(), &mut right)?;
        for v in [&mut left, &mut right] {
            v.sort_unstable();
            v.dedup();
        }
        Some(vec![left, right])
    }
}

/// Which input an expression reads.
#[derive(Debug, PartialEq, Eq)]
enum Side {
    Left,
    Right,
    Neither,
}

fn side_of(expr: &Expr, left: &DFSchema, right: &DFSchema) -> Side {
    let columns = expr.column_refs();
    if columns.is_empty() {
        return Side::Neither;
    }
    if columns.iter().all(|c| left.has_column(c)) {
        Side::Left
    } else if columns.iter().all(|c| right.has_column(c)) {
        Side::Right
    } else {
        Side::Neither
    }
}

/// Whether `t` can be ordered by the join (sorted and compared).
fn orderable(t: &DataType) -> bool {
    t.is_numeric()
        || t.is_temporal()
        || matches!(
            t,
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View | DataType::Boolean
        )
}

/// The analyzer rule of step 2 (module comment).
#[derive(Debug, Default)]
pub struct AsofJoinRule;

impl AnalyzerRule for AsofJoinRule {
    fn name(&self) -> &str {
        "timelake_asof_join"
    }

    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        plan.transform_up_with_subqueries(|p| {
            let LogicalPlan::Join(join) = &p else {
                return Ok(Transformed::no(p));
            };
            let Some(filter) = &join.filter else {
                return Ok(Transformed::no(p));
            };
            if !contains_marker(filter) {
                return Ok(Transformed::no(p));
            }
            let left_outer = match join.join_type {
                JoinType::Inner => false,
                JoinType::Left => true,
                other => return plan_err!("ASOF JOIN cannot be a {other} join"),
            };
            let (ls, rs) = (join.left.schema(), join.right.schema());
            let mut on = Vec::new();
            for (l, r) in &join.on {
                on.push((l.clone(), r.clone()));
            }
            let mut time = None;
            for conjunct in split_conjunction(filter) {
                if let Some(inequality) = marker_arg(conjunct) {
                    let Expr::BinaryExpr(BinaryExpr { left, op, right }) = inequality else {
                        return plan_err!("ASOF JOIN: {inequality} is not an inequality");
                    };
                    let op = AsofOp::from_operator(*op)?;
                    time = Some(match (side_of(left, ls, rs), side_of(right, ls, rs)) {
                        (Side::Left, Side::Right) => ((**left).clone(), op, (**right).clone()),
                        (Side::Right, Side::Left) => {
                            ((**right).clone(), op.flipped(), (**left).clone())
                        }
                        _ => {
                            return plan_err!(
                                "ASOF JOIN: the inequality must compare an expression of the left \
                                 input with one of the right input, not {inequality}"
                            )
                        }
                    });
                    continue;
                }
                if contains_marker(conjunct) {
                    return plan_err!("ASOF JOIN: the inequality cannot be nested in {conjunct}");
                }
                match conjunct {
                    Expr::BinaryExpr(BinaryExpr {
                        left,
                        op: Operator::Eq,
                        right,
                    }) => match (side_of(left, ls, rs), side_of(right, ls, rs)) {
                        (Side::Left, Side::Right) => on.push(((**left).clone(), (**right).clone())),
                        (Side::Right, Side::Left) => on.push(((**right).clone(), (**left).clone())),
                        _ => {
                            return plan_err!(
                                "ASOF JOIN: an equality of the ON condition must compare the two \
                                 inputs, not {conjunct}"
                            )
                        }
                    },
                    other => {
                        return plan_err!(
                            "ASOF JOIN: besides its one inequality, the ON condition may only hold \
                             equalities between the two inputs, not {other}"
                        )
                    }
                }
            }
            let Some((left_time, op, right_time)) = time else {
                return plan_err!("ASOF JOIN: no inequality in the ON condition");
            };
            for (l, r) in on
                .iter()
                .chain(std::iter::once(&(left_time.clone(), right_time.clone())))
            {
                let (lt, rt) = (l.get_type(ls)?, r.get_type(rs)?);
                if lt != rt {
                    return plan_err!("ASOF JOIN: {l} ({lt}) and {r} ({rt}) have different types");
                }
                if !orderable(&lt) {
                    return plan_err!("ASOF JOIN: cannot order by {l} of type {lt}");
                }
            }
            let node = AsofJoin::try_new(
                Arc::clone(&join.left),
                Arc::clone(&join.right),
                left_outer,
                on,
                left_time,
                op,
                right_time,
            )?;
            if node.schema.fields().len() != join.schema.fields().len() {
                return plan_err!("internal: ASOF JOIN schema differs from the join's");
            }
            Ok(Transformed::yes(LogicalPlan::Extension(Extension {
                node: Arc::new(node),
            })))
        })
        .data()
    }
}

/// Moves conjuncts of a filter above an [`AsofJoin`] that read only left
/// columns below it (module comment).
#[derive(Debug, Default)]
pub struct AsofFilterPushdown;

impl OptimizerRule for AsofFilterPushdown {
    fn name(&self) -> &str {
        "timelake_asof_filter_pushdown"
    }

    fn apply_order(&self) -> Option<ApplyOrder> {
        Some(ApplyOrder::TopDown)
    }

    fn supports_rewrite(&self) -> bool {
        true
    }

    fn rewrite(
        &self,
        plan: LogicalPlan,
        _config: &dyn OptimizerConfig,
    ) -> Result<Transformed<LogicalPlan>> {
        let LogicalPlan::Filter(filter) = &plan else {
            return Ok(Transformed::no(plan));
        };
        // Through projections that only pass columns on (projection pushdown
        // puts them between the filter and the join).
        let mut projections = Vec::new();
        let mut below = filter.input.as_ref();
        while let LogicalPlan::Projection(p) = below {
            if !p.expr.iter().all(|e| matches!(e, Expr::Column(_))) {
                return Ok(Transformed::no(plan));
            }
            projections.push(p);
            below = p.input.as_ref();
        }
        let LogicalPlan::Extension(ext) = below else {
            return Ok(Transformed::no(plan));
        };
        let Some(join) = ext.node.as_any().downcast_ref::<AsofJoin>() else {
            return Ok(Transformed::no(plan));
        };
        let left_schema = join.left.schema();
        let (down, keep): (Vec<&Expr>, Vec<&Expr>) = split_conjunction(&filter.predicate)
            .into_iter()
            .partition(|e| {
                let columns = e.column_refs();
                !columns.is_empty()
                    && columns.iter().all(|c| left_schema.has_column(c))
                    && !e.is_volatile()
                    && !e
                        .exists(|x| {
                            Ok(matches!(
                                x,
                                Expr::ScalarSubquery(_) | Expr::Exists(_) | Expr::InSubquery(_)
                            ))
                        })
                        .unwrap_or(true)
            });
        if down.is_empty() {
            return Ok(Transformed::no(plan));
        }
        let pushed = conjunction(down.into_iter().cloned()).expect("not empty");
        let new_left = LogicalPlan::Filter(Filter::try_new(pushed, Arc::clone(&join.left))?);
        let mut moved = join.clone();
        moved.left = Arc::new(new_left);
        let mut node = LogicalPlan::Extension(Extension {
            node: Arc::new(moved),
        });
        for p in projections.into_iter().rev() {
            node = LogicalPlan::Projection(datafusion::logical_expr::Projection::try_new(
                p.expr.clone(),
                Arc::new(node),
            )?);
        }
        let out = match conjunction(keep.into_iter().cloned()) {
            Some(rest) => LogicalPlan::Filter(Filter::try_new(rest, Arc::new(node))?),
            None => node,
        };
        Ok(Transformed::yes(out))
    }
}

// --- 3. physical planning -------------------------------------------------------

/// Plans [`AsofJoin`] nodes as [`AsofJoinExec`].
#[derive(Debug, Default)]
pub struct AsofPlanner;

#[async_trait]
impl ExtensionPlanner for AsofPlanner {
    async fn plan_extension(
        &self,
        planner: &dyn PhysicalPlanner,
        node: &dyn UserDefinedLogicalNode,
        logical_inputs: &[&LogicalPlan],
        physical_inputs: &[Arc<dyn ExecutionPlan>],
        session: &dyn datafusion::catalog::Session,
        planning_ctx: &datafusion::logical_expr::physical_planning_context::PhysicalPlanningContext,
    ) -> Result<Option<Arc<dyn ExecutionPlan>>> {
        let Some(join) = node.as_any().downcast_ref::<AsofJoin>() else {
            return Ok(None);
        };
        let (ls, rs) = (logical_inputs[0].schema(), logical_inputs[1].schema());
        let phys =
            |e: &Expr, s: &DFSchema| planner.create_physical_expr(e, s, session, planning_ctx);
        let mut left_keys = Vec::new();
        let mut right_keys = Vec::new();
        for (l, r) in &join.on {
            left_keys.push(phys(l, ls)?);
            right_keys.push(phys(r, rs)?);
        }
        let left_time = phys(&join.left_time, ls)?;
        let right_time = phys(&join.right_time, rs)?;
        let left_order = AsofJoinExec::ordering_of(&left_keys, &left_time);
        let right_order = AsofJoinExec::ordering_of(&right_keys, &right_time);
        // Inputs already sorted by (keys, time) (or Timelake scans that can
        // be read sorted) are merged into one partition; otherwise each side
        // is hash-partitioned by the keys and sorted per partition.
        let (left, left_sorted) = sorted_input(Arc::clone(&physical_inputs[0]), &left_order)?;
        let (right, right_sorted) = sorted_input(Arc::clone(&physical_inputs[1]), &right_order)?;
        let partitioned = !(left_sorted && right_sorted) && !left_keys.is_empty();
        let exec = AsofJoinExec::try_new(
            left,
            right,
            left_keys,
            right_keys,
            left_time,
            right_time,
            join.op,
            join.left_outer,
            partitioned,
            Arc::new(join.schema.as_arrow().clone()),
        )?;
        Ok(Some(Arc::new(exec)))
    }
}
