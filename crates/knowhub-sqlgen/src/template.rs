//! The no-LLM path: simple English and Chinese questions → SQL, or `None` when unsure.
//!
//! Handled shapes, each over one table with at most three equality filters:
//! count ("how many members", "有多少个客户"), list ("list the books", "列出所有图书",
//! "names of all categories"), sum/average of a numeric column ("total of sale totals",
//! "销售单总额", "average chapter ms") and distinct count/list ("how many different
//! countries do members come from"). A filter comes from a quoted value, a sample value of a
//! text column found in the question ("members from Brazil"), or "from X" with X a country
//! (then the table's country column).
//!
//! Counts, sums and averages can be given per group, largest first: per a column of the table
//! ("how many projects per status", "每个环境有多少项目", "按环境统计项目数量"), or per row of
//! the parent table a declared foreign key leads to, shown by its name ("how many books does
//! each author have": the one join the template writes; an author without books counts 0).
//! "Which X has the most/fewest Y" (哪个…最多/最少) gives every group at that end, ties
//! included. A listing can be ordered ("sorted by title", "按预算降序") or cut to its top N
//! ("top 3 projects by budget", "预算最高的前 3 个项目", "the 10 longest chapters"), and groups cut to
//! the top N by their count ("the top 5 countries by number of members", "客户最多的前5个国家").
//! A listing can show each row by its labels with the labels of the parent rows its foreign keys
//! lead to ("books with their author names", "列出所有图书及其作者": a left join, so a row
//! without a parent is still listed) or with some of its own columns ("projects with their
//! budgets", "each project's owner", "每个项目的负责人").
//!
//! Conditions beside these: one comparison with a number ("budget over 100000", "预算超过10万",
//! "longer than 5 minutes" against `DurationMs`, "cost more than $0.99" against the price
//! column), a year on a date column ("hired after 2002", "2023年"), a missing or present value
//! ("with NULL editor", "没有公司的客户"), a row's number ("member #5"). Without a group, a
//! superlative asks for the rows at that end ("the longest chapter", "哪个项目的预算最高"), and
//! "minimum"/"maximum"/"the smallest and largest" for the values themselves.
//!
//! Matching: the question is lower-cased and cut into words (CJK: one token per character),
//! plurals are folded ("companies" → "company"), Chinese phrases from a small glossary are
//! translated first (except inside names and sample values of the schema, which match as they
//! are), and table/column names are split at `_` and camelCase. The template answers only when
//! *every* word of the question is accounted for (a table, a column, a value, or a stop/intent
//! word): "how many rock chapters" leaves "rock" unexplained when no column of the chapter table
//! has it as a sample, so the answer is `None`, never a count of all chapters.

use knowhub_sql::{ColumnInfo, Schema, TableInfo, Value, quote_ident};

use crate::units::TimeUnit;
use crate::words::words;

/// SQL for a simple question about `schema`, or `None` when the question is not one of the
/// simple shapes or any part of it is not understood.
pub fn template_sql(question: &str, schema: &Schema) -> Option<String> {
    if let Some(cut) = CountCut::read(question) {
        let sql = statement(&cut.counting, schema, true, Some(cut.keep));
        // "top 5 …" read any other way would cut rows, not groups, and "the average number of
        // staff" would average some column of theirs; "budgets over 60 元" is not a count, and
        // is read as the comparison it is.
        if sql.is_some() || matches!(cut.keep, Keep::Top { .. } | Keep::Average) {
            return sql;
        }
    }
    // "哪个项目的预算最高？" could rank groups of projects, but counting them leaves the budget
    // unexplained: read without groups, it asks for the project with the highest budget.
    statement(question, schema, true, None).or_else(|| statement(question, schema, false, None))
}

/// A count per group of which only some groups are shown: the first N ("the top 5 countries
/// by number of members", "客户最多的前5个国家") or those whose count passes a number
/// ("authors who have more than 10 books", "超过10张图书的作者"). Read as the count it cuts
/// ("how many members per country", "每个国家有多少客户"), which the rest of the template
/// must understand whole.
#[derive(Debug, Clone, PartialEq)]
struct CountCut {
    counting: String,
    keep: Keep,
}

/// Which groups of a count per group are shown.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Keep {
    /// The first `n`, and every group tied with the `n`-th.
    Top { n: u32, descending: bool },
    /// Those whose count compares so with `n`.
    Passing { op: &'static str, n: u32 },
    /// None: the average of the counts ("the average number of chapters per book").
    Average,
}

/// Whether `word` is one of `list`, a list of the word file (`data/words.toml`).
fn listed(list: &[String], word: &str) -> bool {
    list.iter().any(|w| w == word)
}

/// Whether `c` is a Chinese measure word, which stands between a number and what it counts
/// ("10张图书", "2名员工").
fn is_measure_word_zh(c: char) -> bool {
    words().measure_words_zh.contains(c)
}

impl CountCut {
    fn read(question: &str) -> Option<CountCut> {
        let text = question
            .trim()
            .trim_end_matches(['?', '.', '!', '？', '。', '！'])
            .trim();
        Self::top(text)
            .or_else(|| Self::passing(text))
            .or_else(|| Self::average(text))
    }

    /// "[the] average number of <rows> per <group>" (or "for each", "in each"), "平均每个<group>
    /// 有多少<rows>", "每个<group>平均有多少<rows>": the average of the count per group. Groups
    /// without rows are counted as the count per group counts them.
    fn average(text: &str) -> Option<CountCut> {
        let lower = text.to_lowercase();
        for opening in ["average number of ", "average count of ", "mean number of "] {
            let Some(at) = lower.find(opening) else {
                continue;
            };
            let before = lower[..at].trim().trim_end_matches("the").trim();
            if !listed(&words().asking.average_openings, before) {
                return None;
            }
            let rest = &lower[at + opening.len()..];
            return Some(CountCut {
                counting: format!("how many {rest}"),
                keep: Keep::Average,
            });
        }
        let text = without_opening_zh(text);
        let rest = text
            .strip_prefix("平均每个")
            .map(|r| format!("每个{r}"))
            .or_else(|| {
                let (group, rows) = text.strip_prefix("每个")?.split_once("平均")?;
                Some(format!("每个{group}{rows}"))
            })?;
        // The count itself must be asked: "平均每个团队有多少人", "每个团队平均有几个人", not
        // "每个环境的平均预算是多少" (an average of the budget).
        let asks_count = rest.contains("有多少")
            || rest.contains("有几")
            || ["多少", "几"].iter().any(|w| {
                rest.match_indices(w).any(|(at, _)| {
                    rest[at + w.len()..]
                        .chars()
                        .next()
                        .is_some_and(is_measure_word_zh)
                })
            });
        if !asks_count {
            return None;
        }
        Some(CountCut {
            counting: rest,
            keep: Keep::Average,
        })
    }

    /// "[list the] top N <groups> by [the] number of <rows>"; "[列出]<rows>最多的前N个<groups>
    /// [有哪些]" (最少: the fewest first).
    fn top(text: &str) -> Option<CountCut> {
        let lower = text.to_lowercase();
        if let Some(at) = lower.find("top ") {
            if !listed(&words().asking.group_openings, lower[..at].trim()) {
                return None;
            }
            let rest = &lower[at + 4..];
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            let n: u32 = digits.parse().ok().filter(|n| *n > 0)?;
            let rest = rest[digits.len()..].trim_start();
            for by in [
                " by the number of ",
                " by number of ",
                " by the count of ",
                " by count of ",
            ] {
                if let Some(i) = rest.find(by) {
                    let (groups, rows) = (rest[..i].trim(), rest[i + by.len()..].trim());
                    if groups.is_empty() || rows.is_empty() || rows.contains(" by ") {
                        return None;
                    }
                    return Some(CountCut {
                        counting: format!("how many {rows} per {groups}"),
                        keep: Keep::Top {
                            n,
                            descending: true,
                        },
                    });
                }
            }
            return None;
        }
        for (word, descending) in [("最多的前", true), ("最少的前", false)] {
            let Some(at) = text.find(word) else { continue };
            let rows = without_opening_zh(&text[..at]).trim();
            let rest = &text[at + word.len()..];
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            let n: u32 = digits.parse().ok().filter(|n| *n > 0)?;
            let rest = rest[digits.len()..].trim_start_matches(['个', '名', '位', '家']);
            let groups = trim_which(rest);
            if rows.is_empty() || groups.is_empty() {
                return None;
            }
            return Some(CountCut {
                counting: format!("每个{groups}有多少{rows}"),
                keep: Keep::Top { n, descending },
            });
        }
        None
    }

    /// "[find] <groups> (who|that|which) have more than N <rows>", "<groups> with at least N
    /// <rows>"; "[有]超过N张<rows>的<groups>", "<rows>超过N个的<groups>", "哪些<groups>的<rows>
    /// 超过N个".
    fn passing(text: &str) -> Option<CountCut> {
        let lower = text.to_lowercase();
        // (where the groups end, the comparison, the number's digits, the rows)
        let mut found = None;
        for compare in &words().count_compare.before_en {
            let said = format!(" {} ", compare.phrase);
            if let Some(at) = lower.find(&said) {
                let after = &lower[at + said.len()..];
                let digits: String = after.chars().take_while(char::is_ascii_digit).collect();
                let rows = after[digits.len()..].to_owned();
                found = Some((at, compare.op.sql(), digits, rows));
                break;
            }
        }
        // "… have 2 or more <rows>": the comparison after the number.
        if found.is_none() {
            for compare in &words().count_compare.after_en {
                let said = format!(" {} ", compare.phrase);
                let Some(at) = lower.find(&said) else {
                    continue;
                };
                let before = &lower[..at];
                let digits: String = before
                    .chars()
                    .rev()
                    .take_while(char::is_ascii_digit)
                    .collect::<Vec<_>>()
                    .into_iter()
                    .rev()
                    .collect();
                let start = at - digits.len();
                let rows = lower[at + said.len()..].to_owned();
                found = Some((start.saturating_sub(1), compare.op.sql(), digits, rows));
                break;
            }
        }
        if let Some((at, op, digits, rows)) = found {
            let before = lower[..at].trim();
            let n: u32 = digits.parse().ok()?;
            let rows = rows.trim();
            let groups = [
                " who have",
                " who has",
                " that have",
                " that has",
                " which have",
                " which has",
                " with",
                " have",
                " has",
            ]
            .iter()
            .find_map(|link| before.strip_suffix(link))?;
            let groups = words()
                .asking
                .group_openings
                .iter()
                .rev()
                .filter(|o| !o.is_empty())
                .find_map(|o| groups.strip_prefix(&format!("{o} ")))
                .unwrap_or(groups)
                .trim();
            if groups.is_empty() || rows.is_empty() || rows.split_whitespace().count() > 3 {
                return None;
            }
            return Some(CountCut {
                counting: format!("how many {rows} per {groups}"),
                keep: Keep::Passing { op, n },
            });
        }
        let (before, op, n, after) = compare_zh(text)?;
        let before = without_opening_zh(before);
        let after = after.trim_start_matches(is_measure_word_zh);
        let (groups, rows) = if let Some(groups) = after.strip_prefix('的') {
            // "员工超过2人的团队", "图书数超过1的作者"; "哪些作者的图书超过1张"
            let rows = before.trim_end_matches("的数量").trim_end_matches("数量");
            (
                trim_which(groups),
                rows.trim_end_matches('数').trim_end_matches('有'),
            )
        } else if after.is_empty() {
            let (groups, rows) = before.trim_start_matches("哪些").split_once('的')?;
            (groups, rows.trim_end_matches('数'))
        } else if let Some((rows, groups)) = after.split_once('的') {
            // "超过10张图书的作者", "有超过2名员工的团队", "负责2个以上项目的负责人": nothing
            // but what the groups do with the rows before the number.
            let lead = before.trim_start_matches("哪些").trim();
            if !without_verb_zh(lead).unwrap_or(lead).is_empty() {
                return None;
            }
            (trim_which(groups), rows)
        } else {
            // "哪些作者有超过1张图书", "哪些负责人负责2个以上项目"
            (
                without_verb_zh(before.trim_start_matches("哪些"))?,
                trim_which(after),
            )
        };
        let (groups, rows) = (groups.trim(), rows.trim());
        if groups.is_empty() || rows.is_empty() {
            return None;
        }
        Some(CountCut {
            counting: format!("每个{groups}有多少{rows}"),
            keep: Keep::Passing { op, n },
        })
    }
}

/// `text` without the verb that ends it, what groups do with the rows they count ("作者有",
/// "负责人负责"); `None` when it ends in none.
fn without_verb_zh(text: &str) -> Option<&str> {
    let text = text.trim();
    ["拥有", "负责", "有"]
        .iter()
        .find_map(|v| text.strip_suffix(v))
}

/// A Chinese comparison of a count with a number, before it ("超过10张图书") or after it
/// ("2个以上项目", "3人以下"): the text before, the comparison, the number, the text after
/// (measure words before the comparison dropped).
fn compare_zh(text: &str) -> Option<(&str, &'static str, u32, &str)> {
    let compares = &words().count_compare;
    for compare in &compares.before_zh {
        let word = compare.phrase.as_str();
        let Some(at) = text.find(word) else { continue };
        let after = &text[at + word.len()..];
        let digits: String = after.chars().take_while(char::is_ascii_digit).collect();
        let n: u32 = digits.parse().ok()?;
        return Some((&text[..at], compare.op.sql(), n, &after[digits.len()..]));
    }
    for compare in &compares.after_zh {
        let word = compare.phrase.as_str();
        let Some(at) = text.find(word) else { continue };
        let number = text[..at].trim_end_matches(is_measure_word_zh);
        let digits = number.len() - number.trim_end_matches(|c: char| c.is_ascii_digit()).len();
        let n: u32 = number[number.len() - digits..].parse().ok()?;
        return Some((
            &number[..number.len() - digits],
            compare.op.sql(),
            n,
            &text[at + word.len()..],
        ));
    }
    None
}

/// `text` without its opening asking and listing words: "请问", "帮我列出", "我想看看", "显示"
/// (the glossary drops or translates the same words elsewhere).
fn without_opening_zh(text: &str) -> &str {
    let openings = &words().asking.openings_zh;
    let mut rest = text.trim_start();
    while let Some(shorter) = openings.iter().find_map(|o| rest.strip_prefix(o.as_str())) {
        rest = shorter.trim_start();
    }
    rest
}

/// `text` without a closing "有哪些"/"是哪些" ("which are they").
fn trim_which(text: &str) -> &str {
    text.trim_end_matches("有哪些")
        .trim_end_matches("是哪些")
        .trim()
}

/// [`template_sql`], with or without reading the question as one about groups; `cut`: which
/// groups of the count per group are shown.
fn statement(question: &str, schema: &Schema, groups: bool, cut: Option<Keep>) -> Option<String> {
    let mut q = Question::new(question, schema);
    // "The smallest and largest sale totals", "the maximum unit price": figures, not rows.
    let ends = Ends::find(&mut q);
    // "Which team has the most people" counts the people of each team; "the most" is understood
    // of groups, as the order of a top-N listing ("预算最高的前 3 个项目", "the 10 longest
    // chapters"), or of the rows at that end ("Which project has the highest budget?").
    let extreme = Extreme::find(&q);
    let top = top_n(&q, extreme.as_ref());
    let asked = match (Intent::detect(&q), ends) {
        // "Sale totals" names a column, not a sum.
        (Intent::List | Intent::Sum, Some(e)) => Intent::Ends(e),
        (_, Some(_)) => return None,
        (intent, None) => intent,
    };
    let mut intent = match (asked, extreme, top) {
        (Intent::List, Some(s), None) if s.measure == Measure::Any => Intent::Count,
        (intent, _, _) => intent,
    };
    let ranks_groups = extreme.is_some() && top.is_none();
    let grouped = groups
        .then(|| pick_grouped_table(&q, schema, intent, ranks_groups))
        .flatten();
    // "List all books with their author names": what each row is shown with.
    let mut shown = Vec::new();
    let (table, group) = match grouped {
        Some((grouped, table, group)) => {
            q = grouped;
            (table, Some(group))
        }
        None => match (intent == Intent::List)
            .then(|| pick_shown_with(&q, schema))
            .flatten()
        {
            Some((with, table, items)) => {
                q = with;
                shown = items;
                (table, None)
            }
            None => (pick_table(&mut q, schema, intent)?, None),
        },
    };
    if cut.is_some() && group.is_none() {
        return None;
    }
    let (extreme, top_order, row_extreme) = match (extreme, &group, top) {
        // "Which category has the most chapters": a count per group; "the longest" is no count.
        (Some(s), Some(_), None) if s.measure == Measure::Any => {
            q.consume(s.at, s.len);
            (Some(s.end), None, None)
        }
        (Some(s), None, Some(_)) => {
            q.consume(s.at, s.len);
            (None, Some(s), None)
        }
        // "Which project has the highest budget?", "What is the longest chapter?": the rows at
        // that end.
        (Some(s), None, None) if asked == Intent::List => {
            q.consume(s.at, s.len);
            intent = Intent::List;
            (None, None, Some(s))
        }
        (Some(_), _, _) => return None,
        (None, _, _) => (None, None, None),
    };
    let filters = pick_filters(&mut q, schema, table)?;
    let comparison = pick_comparison(&mut q, table)?;
    let year = pick_year(&mut q, table)?;
    let missing = pick_missing(&mut q, table);
    let key = pick_key(&mut q, table);
    let row_extreme = match row_extreme {
        // The end is found among the rows of the table alone, not the joined ones.
        Some(_) if !shown.is_empty() => return None,
        // "Which sale is the largest?" names no number: by what is a guess. "The longest"
        // says a duration, so the only one is meant.
        Some(s) => Some((
            ranked_column(&mut q, table, s.measure, s.measure != Measure::Any)?,
            s.end,
        )),
        None => None,
    };
    let order = match intent {
        Intent::List if group.is_none() => pick_order(&mut q, table, top, top_order)?,
        _ if top.is_some() => return None,
        _ => None,
    };
    // Beside a parent table, the question's own table is `c` and its columns are qualified.
    let joined = matches!(group, Some(Group::Parent { .. }))
        || shown.iter().any(|s| matches!(s, Shown::Parent(_)));
    let own = |name: &str| {
        if joined {
            format!("c.{}", quote_ident(name))
        } else {
            quote_ident(name)
        }
    };
    let select = match intent {
        Intent::Sum | Intent::Avg | Intent::Ends(_) => {
            let col = pick_measure(&mut q, table)?;
            consume_repeats(&mut q, col);
            let c = own(&col.name);
            let divisor = asked_unit(&mut q, col);
            let figure = |f: &str| in_unit(&format!("{f}({c})"), divisor);
            match intent {
                Intent::Sum => figure("SUM"),
                Intent::Avg => figure("AVG"),
                Intent::Ends(Ends::Min) => figure("MIN"),
                Intent::Ends(Ends::Max) => figure("MAX"),
                Intent::Ends(Ends::Both) if group.is_none() => {
                    format!("{}, {}", figure("MIN"), figure("MAX"))
                }
                _ => return None,
            }
        }
        Intent::Count => {
            let before = q.clone();
            let cols = mentioned_columns(&mut q, table);
            match (cols.as_slice(), q.distinct, &group) {
                // A parent without children counts 0: count the joined rows, not the parent's.
                ([], _, Some(Group::Parent { key, .. })) => format!("COUNT({})", own(&key.name)),
                ([], _, _) => "COUNT(*)".to_owned(),
                ([c], true, None) => format!("COUNT(DISTINCT {})", quote_ident(&c.name)),
                ([c], false, None) if before.counts_values_of(c) => {
                    format!("COUNT(DISTINCT {})", quote_ident(&c.name))
                }
                _ => return None,
            }
        }
        Intent::List if group.is_some() => return None,
        // Each row by its labels (or whole, without any), then what it is shown with.
        Intent::List if !shown.is_empty() => {
            let labels = label_columns(table);
            // Results are read by column name, so a parent's "Name" beside the chapter's own is
            // "Category Name".
            let mut list: Vec<Label> = if labels.is_empty() {
                let star = if joined { "c.*" } else { "*" };
                table
                    .columns
                    .iter()
                    .enumerate()
                    .map(|(i, c)| Label {
                        expr: if i == 0 { star } else { "" }.to_owned(),
                        name: c.name.clone(),
                        renamed: false,
                    })
                    .collect()
            } else {
                shown_labels(&labels, joined.then_some("c"))
            };
            for (i, item) in shown.iter().enumerate() {
                match item {
                    Shown::Column(c)
                        if labels.is_empty() || labels.iter().any(|l| l.name == c.name) => {}
                    Shown::Column(c) => list.push(Label {
                        expr: own(&c.name),
                        name: c.name.clone(),
                        renamed: false,
                    }),
                    Shown::Parent(p) => {
                        let alias = format!("p{}", i + 1);
                        // Named by the key that leads there: `AccountManagerId` → "AccountManager Name",
                        // `ManagerId` → "ManagerId Name", `CategoryId` → "Category Name".
                        let key = &p.key.name;
                        let role = ["Id", "ID", "_id", "_ID"]
                            .iter()
                            .find_map(|id| key.strip_suffix(id))
                            .filter(|r| !r.is_empty())
                            .unwrap_or(key);
                        for mut label in shown_labels(&p.labels, Some(&alias)) {
                            if list.iter().any(|l| l.name == label.name) {
                                label.name = format!("{role} {}", label.name);
                                label.renamed = true;
                            }
                            list.push(label);
                        }
                    }
                }
            }
            let distinct = if q.distinct { "DISTINCT " } else { "" };
            let exprs: Vec<String> = list
                .iter()
                .filter(|l| !l.expr.is_empty())
                .map(|l| match l.renamed {
                    true => format!("{} AS {}", l.expr, quote_ident(&l.name)),
                    false => l.expr.clone(),
                })
                .collect();
            format!("{distinct}{}", exprs.join(", "))
        }
        Intent::List => {
            let mut cols = mentioned_columns(&mut q, table);
            // "List project names and budgets", "book titles": the rows' labels.
            if let Some(i) = q.toks.iter().position(|t| !t.used && t.norm == "name") {
                let labels = label_columns(table);
                if !labels.is_empty() {
                    q.consume(i, 1);
                    let rest: Vec<&ColumnInfo> = cols
                        .into_iter()
                        .filter(|c| !labels.iter().any(|l| l.name == c.name))
                        .collect();
                    cols = labels.into_iter().chain(rest).collect();
                }
            }
            // "Who owns the Member Portal project?" asks for its owner; "Who is on
            // probation?" for the people's names.
            if cols.is_empty() && q.asks_who {
                let doers: Vec<&ColumnInfo> = table
                    .columns
                    .iter()
                    .filter(|c| c.is_text() && doer_verb_at(&q, c).is_some())
                    .collect();
                cols = match doers.as_slice() {
                    [c] if consume_doer_verb(&mut q, c) => vec![*c],
                    _ => name_columns(table),
                };
            }
            if cols.is_empty() {
                // "all the different formats": the rows, each once.
                if q.distinct { "DISTINCT *" } else { "*" }.to_owned()
            } else {
                let list: Vec<String> = cols.iter().map(|c| quote_ident(&c.name)).collect();
                let distinct = if q.distinct { "DISTINCT " } else { "" };
                format!("{distinct}{}", list.join(", "))
            }
        }
    };
    if !q.fully_explained() {
        return None;
    }
    let mut from = match &group {
        None if joined => {
            let mut from = format!("FROM {} AS c", quote_ident(&table.name));
            for (i, item) in shown.iter().enumerate() {
                if let Shown::Parent(p) = item {
                    // Left: a row without a parent is still listed.
                    from.push_str(&format!(
                        " LEFT JOIN {} AS p{n} ON p{n}.{} = c.{}",
                        quote_ident(&p.table.name),
                        quote_ident(&p.parent_key),
                        quote_ident(&p.key.name),
                        n = i + 1
                    ));
                }
            }
            from
        }
        None | Some(Group::Column(_)) => format!("FROM {}", quote_ident(&table.name)),
        Some(Group::Parent {
            key,
            parent,
            parent_key,
            ..
        }) => format!(
            "FROM {} AS p LEFT JOIN {} AS c ON c.{} = p.{}",
            quote_ident(&parent.name),
            quote_ident(&table.name),
            quote_ident(&key.name),
            quote_ident(parent_key),
        ),
    };
    let mut conditions = Vec::new();
    for (col, filter) in filters {
        conditions.push(match filter {
            Filter::Text(value) => {
                format!("{} = '{}'", own(&col.name), value.replace('\'', "''"))
            }
            Filter::True => format!("{} = 1", own(&col.name)),
            Filter::Parent {
                table,
                key,
                column,
                value,
                via,
            } => {
                let mut rows =
                    format!("{} = '{}'", quote_ident(&column), value.replace('\'', "''"));
                if let Some(via) = via {
                    rows = format!(
                        "{} IN (SELECT {} FROM {} WHERE {rows})",
                        quote_ident(&via.key),
                        quote_ident(&via.table_key),
                        quote_ident(&via.table),
                    );
                }
                format!(
                    "{} IN (SELECT {} FROM {} WHERE {rows})",
                    own(&col.name),
                    quote_ident(&key),
                    quote_ident(&table),
                )
            }
        });
    }
    if let Some(c) = comparison {
        conditions.push(format!("{} {} {}", own(&c.column.name), c.op, c.value));
    }
    if let Some(y) = year {
        let col = own(&y.column.name);
        let (from, to) = y.range;
        if let Some((year, month)) = from {
            conditions.push(format!("{col} >= '{year}-{month:02}-01'"));
        }
        if let Some((year, month)) = to {
            conditions.push(format!("{col} < '{year}-{month:02}-01'"));
        }
    }
    if let Some((column, absent)) = missing {
        let col = own(&column.name);
        // A spreadsheet's empty cell may be stored as '' rather than NULL.
        conditions.push(match (absent, column.is_numeric()) {
            (true, true) => format!("{col} IS NULL"),
            (false, true) => format!("{col} IS NOT NULL"),
            (true, false) => format!("({col} IS NULL OR {col} = '')"),
            (false, false) => format!("({col} IS NOT NULL AND {col} <> '')"),
        });
    }
    if let Some((column, n)) = key {
        conditions.push(format!("{} = {n}", own(&column.name)));
    }
    // Every row at the end, among the rows the other conditions keep: a tie is shown whole.
    if let Some((column, end)) = row_extreme {
        let f = match end {
            Extreme::Most => "MAX",
            Extreme::Fewest => "MIN",
        };
        let col = quote_ident(&column.name);
        let mut inner = format!("SELECT {f}({col}) FROM {}", quote_ident(&table.name));
        if !conditions.is_empty() {
            inner.push_str(&format!(" WHERE {}", conditions.join(" AND ")));
        }
        conditions.push(format!("{col} = ({inner})"));
    }
    if !conditions.is_empty() {
        from.push_str(&format!(" WHERE {}", conditions.join(" AND ")));
    }
    // A group is shown by its labels and grouped by its key; the key also breaks ties, so the
    // order is the same every time.
    let (labels, key, tie_order) = match &group {
        None => {
            let mut sql = format!("SELECT {select} {from}");
            if let Some(order) = order {
                if let Some(column) = order.column {
                    let dir = if order.descending { " DESC" } else { "" };
                    sql.push_str(&format!(" ORDER BY {}{dir}", own(&column.name)));
                }
                if let Some(n) = order.limit {
                    sql.push_str(&format!(" LIMIT {n}"));
                }
            }
            return Some(sql);
        }
        Some(Group::Column(g)) => {
            let key = quote_ident(&g.name);
            (key.clone(), key.clone(), key)
        }
        Some(Group::Parent {
            parent_key, labels, ..
        }) => {
            let key = format!("p.{}", quote_ident(parent_key));
            let labels = labels.join(", ");
            (labels.clone(), key.clone(), format!("{labels}, {key}"))
        }
    };
    let grouped = format!("SELECT {labels}, {select} {from} GROUP BY {key}");
    Some(match (extreme, cut) {
        // The first N groups, and every group tied with the N-th: a tie is not settled by
        // where the list stops. Fewer groups than N are all shown.
        (None, Some(Keep::Top { n, descending })) if intent == Intent::Count => {
            let counts = format!("(SELECT {select} AS v {from} GROUP BY {key})");
            let (dir, cmp, fewer) = if descending {
                (" DESC", ">=", "0".to_owned())
            } else {
                ("", "<=", format!("(SELECT MAX(v) FROM {counts})"))
            };
            format!(
                "{grouped} HAVING {select} {cmp} COALESCE((SELECT v FROM {counts} ORDER BY v{dir} \
                 LIMIT 1 OFFSET {}), {fewer}) ORDER BY {select}{dir}, {tie_order}",
                n - 1
            )
        }
        // The groups whose count passes the number, largest first.
        (None, Some(Keep::Passing { op, n })) if intent == Intent::Count => {
            format!("{grouped} HAVING {select} {op} {n} ORDER BY {select} DESC, {tie_order}")
        }
        // The average of the counts, over the groups the count per group shows; named as it
        // is computed ("AVG(COUNT(*))"), as other figures are.
        (None, Some(Keep::Average)) if intent == Intent::Count => {
            let name = quote_ident(&format!("AVG({})", select.replace('"', "")));
            format!("SELECT AVG(v) AS {name} FROM (SELECT {select} AS v {from} GROUP BY {key})")
        }
        (_, Some(_)) => return None,
        // Largest groups first.
        (None, None) => format!("{grouped} ORDER BY {select} DESC, {tie_order}"),
        // Every group that reaches the extreme: a tie is shown, never settled silently.
        (Some(extreme), None) => {
            let f = match extreme {
                Extreme::Most => "MAX",
                Extreme::Fewest => "MIN",
            };
            format!(
                "{grouped} HAVING {select} = (SELECT {f}(v) FROM (SELECT {select} AS v {from} \
                 GROUP BY {key})) ORDER BY {tie_order}"
            )
        }
    })
}

/// How a listing is ordered: "sorted by title", "按预算降序", "top 3 projects by budget".
#[derive(Debug, Clone, Copy)]
struct Order<'t> {
    /// `None`: the rows as stored ("the first 10 chapters").
    column: Option<&'t ColumnInfo>,
    descending: bool,
    limit: Option<u32>,
}

/// How many rows a listing is cut to, and where the question says so.
#[derive(Debug, Clone, Copy)]
struct TopN {
    /// The words that say it: "top 3", "前 3", "first 10", or the number beside a superlative
    /// ("the 10 longest chapters", "最贵的 5 首").
    at: usize,
    len: usize,
    n: u32,
}

/// "Top 3" / "前 3 个" / "first 10", or a number beside the question's superlative ("the 10
/// longest chapters", "最长的 10 首章节"). Its words are consumed only once the listing's order
/// is understood.
fn top_n(q: &Question, superlative: Option<&Superlative>) -> Option<TopN> {
    let count = |i: usize| {
        q.toks
            .get(i)
            .filter(|t| !t.used && !t.cjk)
            .and_then(|t| t.norm.parse::<u32>().ok())
            .filter(|n| *n > 0)
    };
    let opened = q.toks.windows(2).enumerate().find_map(|(i, w)| {
        let opens = w[0].norm == "top" || w[0].norm == "first" || w[0].orig == "前";
        let n = count(i + 1)?;
        opens.then_some(TopN { at: i, len: 2, n })
    });
    opened.or_else(|| {
        let s = superlative?;
        let after = s.at + s.len;
        let at = if s.at > 0 && count(s.at - 1).is_some() {
            s.at - 1
        } else if count(after).is_some() {
            after
        } else if q.toks.get(after).is_some_and(|t| t.orig == "的") && count(after + 1).is_some() {
            after + 1
        } else {
            return None;
        };
        Some(TopN {
            at,
            len: 1,
            n: count(at)?,
        })
    })
}

/// The order of a listing: `Some(None)` when the question asks for none, `None` when it asks
/// for one that is not understood. The column is the one named after "sorted by" / "order
/// by" / "by … sorted" (按…排序), or after "top N … by"; a top-N listing without "by" is
/// ordered by the only numeric column it names ("预算最高的前 3 个项目"); "the first 10 chapters"
/// and "前 3 个项目", naming no order at all, are the first rows as stored. "Top" (and 前) list
/// the largest first unless the question says otherwise; "first" and a sort are ascending
/// unless it says descending (降序).
fn pick_order<'t>(
    q: &mut Question,
    table: &'t TableInfo,
    top: Option<TopN>,
    top_order: Option<Superlative>,
) -> Option<Option<Order<'t>>> {
    let order = &words().order;
    let sort_at = q
        .toks
        .iter()
        .position(|t| !t.used && listed(&order.sort, &t.norm));
    let direction_said = q.toks.iter().any(|t| {
        !t.used && (listed(&order.descending, &t.norm) || listed(&order.ascending, &t.norm))
    });
    if sort_at.is_none() && top.is_none() && !direction_said {
        return Some(None);
    }
    let mut scratch = q.clone();
    if let Some(at) = sort_at {
        scratch.consume(at, 1);
    }
    // "first 10" (or 前 10 个 without a superlative) may ask for no order, only a count of
    // rows. 前 5 名 is a ranking ("the top 5"): it needs its order.
    let first = top.is_some_and(|t| q.toks[t.at].norm == "first");
    let qian_ge = top.is_some_and(|t| {
        q.toks[t.at].orig == "前" && q.toks.get(t.at + 2).is_none_or(|t| t.orig != "名")
    });
    let rows_as_stored =
        (first || qian_ge) && top_order.is_none() && sort_at.is_none() && !direction_said;
    if let Some(t) = top {
        scratch.consume(t.at, t.len);
    }
    let by = scratch.toks.iter().position(|t| !t.used && t.norm == "by");
    let column = match by {
        Some(by) => {
            let the = scratch.toks.get(by + 1).is_some_and(|t| t.norm == "the");
            let start = by + 1 + usize::from(the);
            scratch.consume(by, start - by);
            (1..=3)
                .rev()
                .find_map(|len| {
                    let words = scratch.toks.get(start..start + len)?;
                    if words.iter().any(|t| t.used) {
                        return None;
                    }
                    let phrase: Vec<String> = words.iter().map(|t| t.norm.clone()).collect();
                    let column = column_named(table, &phrase)?;
                    scratch.consume(start, len);
                    Some(column)
                })
                .map(Some)?
        }
        None if top.is_some() => {
            // "预算最高的前 3 个项目": the column named; "the 10 longest chapters": the only
            // column of what the superlative ranks by.
            let measure = top_order.map_or(Measure::Any, |s| s.measure);
            let pool = measure_columns(table, measure);
            match named_columns(&scratch, &pool).as_slice() {
                [(column, spans)] => {
                    scratch.consume_all(spans);
                    Some(*column)
                }
                [] if rows_as_stored => None,
                [] if measure != Measure::Any && pool.len() == 1 => {
                    consume_measure_words(&mut scratch, measure, table, pool[0]);
                    Some(pool[0])
                }
                _ => return None,
            }
        }
        None => return None,
    };
    let mut descending = match top_order.map(|s| s.end) {
        Some(Extreme::Fewest) => false,
        Some(Extreme::Most) => true,
        None => top.is_some() && !first,
    };
    for (i, t) in scratch.toks.clone().iter().enumerate() {
        if t.used {
            continue;
        }
        if listed(&order.descending, &t.norm) {
            descending = true;
        } else if listed(&order.ascending, &t.norm) {
            descending = false;
        } else {
            continue;
        }
        scratch.consume(i, 1);
    }
    *q = scratch;
    Some(Some(Order {
        column,
        descending,
        limit: top.map(|t| t.n),
    }))
}

/// The column of `table` that `phrase` (normalized words) names, ids and keys aside: the one
/// whose name is exactly those words; else, for one word, the only column whose name ends with
/// it ("country" → `ShipCountry`).
fn column_named<'t>(table: &'t TableInfo, phrase: &[String]) -> Option<&'t ColumnInfo> {
    let words_of = |c: &ColumnInfo| ident_parts(&c.name).concat();
    let plain = || {
        table
            .columns
            .iter()
            .filter(|c| !is_id_like(c) && c.primary_key == 0)
    };
    if let Some(c) = plain().find(|c| words_of(c) == phrase) {
        return Some(c);
    }
    let [word] = phrase else { return None };
    let ending: Vec<&ColumnInfo> = plain()
        .filter(|c| words_of(c).last() == Some(word))
        .collect();
    match ending.as_slice() {
        [c] => Some(*c),
        _ => None,
    }
}

/// Which end of a ranking of groups a question asks for: "which team has the most people",
/// "哪个环境的项目最少".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Extreme {
    Most,
    Fewest,
}

/// What a ranking orders by: any number the question names, or the kind its superlative
/// implies ("the longest": a duration; "the most expensive", "the cheapest": a price).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Measure {
    Any,
    Duration,
    Money,
}

/// A superlative of the question: its words, the end it asks for and what it ranks by.
#[derive(Debug, Clone, Copy)]
struct Superlative {
    at: usize,
    len: usize,
    end: Extreme,
    measure: Measure,
}

impl Extreme {
    /// The superlative of the question, if any (最长 and 最贵 arrive translated).
    fn find(q: &Question) -> Option<Superlative> {
        q.toks.iter().enumerate().find_map(|(i, t)| {
            if t.used || t.cjk {
                return None;
            }
            let next = q
                .toks
                .get(i + 1)
                .filter(|n| !n.used)
                .map(|n| n.norm.as_str());
            let (end, measure, len) = match (t.norm.as_str(), next) {
                ("most", Some("expensive")) => (Extreme::Most, Measure::Money, 2),
                ("least", Some("expensive")) => (Extreme::Fewest, Measure::Money, 2),
                ("most" | "highest" | "largest" | "biggest" | "greatest", _) => {
                    (Extreme::Most, Measure::Any, 1)
                }
                ("fewest" | "least" | "lowest" | "smallest", _) => {
                    (Extreme::Fewest, Measure::Any, 1)
                }
                ("longest", _) => (Extreme::Most, Measure::Duration, 1),
                ("shortest", _) => (Extreme::Fewest, Measure::Duration, 1),
                ("priciest" | "costliest", _) => (Extreme::Most, Measure::Money, 1),
                ("cheapest", _) => (Extreme::Fewest, Measure::Money, 1),
                _ => return None,
            };
            // "at least 2", "at most 5" state a bound, not an end of a ranking.
            let bound = i > 0 && q.toks[i - 1].norm == "at";
            (!bound).then_some(Superlative {
                at: i,
                len,
                end,
                measure,
            })
        })
    }
}

/// What a grouped figure is given per.
#[derive(Debug, Clone)]
enum Group<'s> {
    /// A column of the question's table: "projects per status".
    Column(&'s ColumnInfo),
    /// The rows of a parent table that the question's table references through a declared
    /// foreign key, shown by their names: "books per author" counts each author's books, and
    /// an author without books counts 0.
    Parent {
        /// The referencing column of the question's table (`Book.AuthorId`).
        key: &'s ColumnInfo,
        parent: &'s TableInfo,
        /// The referenced column (`Author.AuthorId`).
        parent_key: String,
        /// The parent's name columns, qualified (`p."Name"`).
        labels: Vec<String>,
    },
}

/// The value a filter compares with.
#[derive(Debug, Clone, PartialEq)]
enum Filter {
    /// `column = 'text'`.
    Text(String),
    /// A yes/no column that is true: "staff on leave".
    True,
    /// A parent row's value, the column being the foreign key that leads to it: "poetry chapters"
    /// is `CategoryId IN (SELECT CategoryId FROM Category WHERE Name = 'Poetry')`. With `via`, the value
    /// is the grandparent's, one more key away: "chapters by Ann Lee" is `BookId IN (SELECT
    /// BookId FROM Book WHERE AuthorId IN (SELECT AuthorId FROM Author WHERE Name =
    /// 'Ann Lee'))`.
    Parent {
        table: String,
        key: String,
        column: String,
        value: String,
        via: Option<Via>,
    },
}

/// The step from a parent to the grandparent whose value filters: the parent's foreign key
/// column, the grandparent table and its key.
#[derive(Debug, Clone, PartialEq)]
struct Via {
    key: String,
    table: String,
    table_key: String,
}

/// Token spans `(start, len)` of a match.
type Spans = Vec<(usize, usize)>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Intent {
    Count,
    List,
    Sum,
    Avg,
    /// The least and/or the greatest value of a column.
    Ends(Ends),
}

/// Which ends of a column's values a question asks for as figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ends {
    Min,
    Max,
    Both,
}

impl Ends {
    /// "minimum", "maximum" (最小值, 最大值), "range" (范围), or a pair of opposite
    /// superlatives ("the smallest and largest sale totals", "最高和最低单价"), their words
    /// consumed. A single superlative ranks rows instead ("the largest sale").
    fn find(q: &mut Question) -> Option<Ends> {
        let pos = |q: &Question, said: &[String]| {
            q.toks.iter().enumerate().position(|(i, t)| {
                let after_number = i > 0 && q.toks[i - 1].norm.parse::<f64>().is_ok();
                // "5 min" is a duration.
                !t.used && !t.cjk && listed(said, &t.norm) && !after_number
            })
        };
        let end_words = &words().ends;
        let min = pos(q, &end_words.minimum);
        let max = pos(q, &end_words.maximum);
        let range = pos(q, &end_words.range);
        let low = pos(q, &end_words.lowest);
        let high = pos(q, &end_words.highest);
        let (ends, words) = match (min, max, low, high) {
            (Some(a), Some(b), _, _) | (None, None, Some(a), Some(b)) => (Ends::Both, vec![a, b]),
            (Some(a), None, _, _) => (Ends::Min, vec![a]),
            (None, Some(b), _, _) => (Ends::Max, vec![b]),
            _ => match range {
                Some(r) => (Ends::Both, vec![r]),
                None => return None,
            },
        };
        for at in words.into_iter().chain(range) {
            q.consume(at, 1);
        }
        Some(ends)
    }
}

impl Intent {
    fn detect(q: &Question) -> Intent {
        // "Tracks longer than the average chapter length" lists chapters: that average is what
        // they are compared with.
        let averages = q.toks.iter().enumerate().any(|(i, t)| {
            let average = &words().measure.average;
            (listed(average, &t.norm) || listed(average, &t.orig.to_lowercase()))
                && !compared_with_average(q, i)
        });
        if averages {
            Intent::Avg
        } else if q.has_phrase(&["how", "many"])
            || q.has_phrase(&["number", "of"])
            || q.has_word("count")
        {
            Intent::Count
        } else if q.has_word("sum") || q.has_word("total") || asks_sales(q) {
            Intent::Sum
        } else {
            Intent::List
        }
    }
}

/// Whether the question asks how much was sold: sales are a sum of takings, so "What are the
/// sales per country?", "每个国家的销售额是多少？" ("each … sales what is") and "How much revenue
/// is there?" ask a total as "the total sales" does. Not "sales with revenue over 10",
/// which lists rows.
fn asks_sales(q: &Question) -> bool {
    q.says_any(&words().measure.sales)
        && (["per", "each", "by"].iter().any(|w| q.has_word(w))
            || [
                ["how", "much"],
                ["what", "is"],
                ["what", "are"],
                ["what", "was"],
                ["what", "were"],
            ]
            .iter()
            .any(|p| q.has_phrase(p)))
}

/// One word (or one CJK character) of the question.
#[derive(Debug, Clone)]
struct Tok {
    /// As written (for filter values).
    orig: String,
    /// Lower-cased, plural folded.
    norm: String,
    cjk: bool,
    used: bool,
}

#[derive(Debug, Clone)]
struct Question {
    toks: Vec<Tok>,
    quoted: Vec<String>,
    distinct: bool,
    /// The question asks who: it opens with "who", or says 谁/哪位/哪些人. Not "employees who
    /// have the title …", where "who" only joins a clause.
    asks_who: bool,
}

fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xAC00..=0xD7AF
        | 0xF900..=0xFAFF | 0x20000..=0x2FA1F)
}

/// Folds English plurals: "members" → "member", "companies" → "company".
pub(crate) fn singular(w: &str) -> String {
    let n = w.chars().count();
    if n <= 3 || !w.is_ascii() {
        return w.to_owned();
    }
    if let Some(stem) = w.strip_suffix("ies") {
        return format!("{stem}y");
    }
    for suffix in ["sses", "xes", "ches", "shes", "zzes"] {
        if w.ends_with(suffix) {
            return w[..w.len() - 2].to_owned();
        }
    }
    if w.ends_with("ss") || w.ends_with("us") || w.ends_with("is") {
        return w.to_owned();
    }
    w.strip_suffix('s').unwrap_or(w).to_owned()
}

/// Splits text into word tokens (letters/digits, a number with its decimal point or thousands
/// separators) and single CJK characters.
fn tokenize(text: &str) -> Vec<Tok> {
    let mut out = Vec::new();
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut Vec<Tok>| {
        if !word.is_empty() {
            let lower = word.to_lowercase();
            out.push(Tok {
                norm: singular(&lower),
                orig: std::mem::take(word),
                cjk: false,
                used: false,
            });
        }
    };
    let chars: Vec<char> = text.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        // "0.99" and "100,000" are one number, as a comparison needs them.
        let inside_number = matches!(c, '.' | ',')
            && !word.is_empty()
            && word
                .chars()
                .all(|d| d.is_ascii_digit() || d == '.' || d == ',')
            && chars.get(i + 1).is_some_and(char::is_ascii_digit);
        if inside_number {
            word.push(c);
        } else if is_cjk(c) {
            flush(&mut word, &mut out);
            out.push(Tok {
                orig: c.to_string(),
                norm: c.to_string(),
                cjk: true,
                used: false,
            });
        } else if c.is_alphanumeric() {
            // "the SaleLine table", "FormatId": an identifier written as it is named,
            // split as names are ([`ident_words`]).
            if c.is_uppercase() && word.chars().last().is_some_and(char::is_lowercase) {
                flush(&mut word, &mut out);
            }
            word.push(c);
        } else if c == '#' && chars.get(i + 1).is_some_and(char::is_ascii_digit) {
            // "member #5": a row's number.
            flush(&mut word, &mut out);
            out.push(Tok {
                orig: "#".into(),
                norm: "#".into(),
                cjk: false,
                used: false,
            });
        } else if c == '#' && word.is_empty() && followed_by_of(&chars[i + 1..]) {
            // "the # of sales": the number of them.
            out.push(Tok {
                orig: "#".into(),
                norm: "number".into(),
                cjk: false,
                used: false,
            });
        } else {
            flush(&mut word, &mut out);
        }
    }
    flush(&mut word, &mut out);
    out
}

/// Whether `rest` opens with the word "of" ("# of sales").
fn followed_by_of(rest: &[char]) -> bool {
    let word: String = rest
        .iter()
        .skip_while(|c| c.is_whitespace())
        .take_while(|c| c.is_alphanumeric())
        .collect();
    word.eq_ignore_ascii_case("of")
}

/// Splits an identifier into words: `_`, spaces and camelCase boundaries; CJK runs stay whole.
pub(crate) fn ident_words(name: &str) -> Vec<String> {
    let mut spaced = String::new();
    let mut prev: Option<char> = None;
    for c in name.chars() {
        if let Some(p) = prev
            && ((p.is_lowercase() && c.is_uppercase())
                || (p.is_alphabetic() && c.is_ascii_digit())
                || (is_cjk(p) != is_cjk(c) && c.is_alphanumeric()))
        {
            spaced.push(' ');
        }
        spaced.push(if c.is_alphanumeric() { c } else { ' ' });
        prev = Some(c);
    }
    spaced
        .split_whitespace()
        .map(str::to_lowercase)
        .filter(|w| {
            !matches!(w.as_str(), "sheet" | "tbl" | "doc") && !w.chars().all(|c| c.is_ascii_digit())
        })
        .collect()
}

/// Each identifier word as a token sequence (one token for a word, one per CJK character).
fn ident_parts(name: &str) -> Vec<Vec<String>> {
    ident_words(name)
        .iter()
        .map(|w| tokenize(w).into_iter().map(|t| t.norm).collect())
        .collect()
}

/// Pulls out quoted values: '…' (not an apostrophe inside a word), "…", “…”, ‘…’, 「…」, 『…』.
fn extract_quoted(text: &str) -> (String, Vec<String>) {
    let chars: Vec<char> = text.chars().collect();
    let mut rest = String::new();
    let mut quoted = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let close = match c {
            '\'' if i == 0 || !chars[i - 1].is_alphanumeric() => Some('\''),
            '"' => Some('"'),
            '“' => Some('”'),
            '‘' => Some('’'),
            '「' => Some('」'),
            '『' => Some('』'),
            _ => None,
        };
        if let Some(close) = close
            && let Some(len) = chars[i + 1..].iter().position(|&d| d == close)
        {
            let end = i + 1 + len;
            let apostrophe_ok =
                close != '\'' || chars.get(end + 1).is_none_or(|d| !d.is_alphanumeric());
            if len > 0 && apostrophe_ok {
                quoted.push(chars[i + 1..end].iter().collect());
                rest.push(' ');
                i = end + 1;
                continue;
            }
        }
        rest.push(c);
        i += 1;
    }
    (rest, quoted)
}

/// Replaces glossary phrases by their English words, except inside CJK names and sample values
/// of the schema that occur in the text.
fn translate(text: &str, schema: &Schema) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut protected = vec![false; chars.len()];
    let mut names: Vec<&str> = Vec::new();
    for t in &schema.tables {
        names.push(&t.name);
        for c in &t.columns {
            names.push(&c.name);
            names.extend(c.known_values());
        }
    }
    for name in names.iter().filter(|n| n.chars().any(is_cjk)) {
        let pat: Vec<char> = name.chars().collect();
        for start in 0..chars.len() {
            if chars[start..].starts_with(&pat) {
                protected[start..start + pat.len()].fill(true);
            }
        }
    }
    let keys = &words().chinese;
    let mut out = String::new();
    let mut i = 0;
    'outer: while i < chars.len() {
        if !protected[i] {
            for (key, english) in keys {
                let pat: Vec<char> = key.chars().collect();
                let end = i + pat.len();
                if chars[i..].starts_with(&pat) && !protected[i..end].iter().any(|&p| p) {
                    out.push(' ');
                    out.push_str(english);
                    out.push(' ');
                    i = end;
                    continue 'outer;
                }
            }
        }
        out.push(chars[i]);
        i += 1;
    }
    out
}

impl Question {
    fn new(text: &str, schema: &Schema) -> Question {
        let (rest, quoted) = extract_quoted(text);
        let toks = tokenize(&translate(&rest, schema));
        let asking = &words().asking;
        let asks_who = asking.who_zh.iter().any(|w| rest.contains(w.as_str()))
            || toks.first().is_some_and(|t| t.norm == "who");
        let mut q = Question {
            toks,
            quoted,
            distinct: false,
            asks_who,
        };
        q.distinct = asking.distinct.iter().any(|w| q.has_word(w));
        // "I want to see all projects in prod", "Could you please list …": the asking.
        let mut at = 0;
        while let Some(phrase) = asking
            .openings_en
            .iter()
            .find(|p| q.phrase_at(at, p.words()))
        {
            q.consume(at, phrase.words().len());
            at += phrase.words().len();
        }
        // "How many people work in each team?", "staff who work on the Audio team": where
        // people are is said by the place, not by the verb.
        for i in 1..q.toks.len().saturating_sub(1) {
            let (before, verb, after) = (&q.toks[i - 1], &q.toks[i], &q.toks[i + 1]);
            if matches!(verb.norm.as_str(), "work" | "working")
                && (listed(&words().people.names, &before.norm) || before.norm == "who")
                && matches!(after.norm.as_str(), "in" | "on" | "for" | "at")
            {
                q.consume(i, 1);
            }
        }
        q
    }

    fn has_word(&self, w: &str) -> bool {
        self.toks
            .iter()
            .any(|t| t.norm == w || t.orig.to_lowercase() == w)
    }

    /// Whether the unused tokens from `i` are `words`.
    fn phrase_at<S: AsRef<str>>(&self, i: usize, words: &[S]) -> bool {
        self.toks.get(i..i + words.len()).is_some_and(|ts| {
            ts.iter()
                .zip(words)
                .all(|(t, w)| !t.used && t.norm == w.as_ref())
        })
    }

    fn has_phrase(&self, words: &[&str]) -> bool {
        self.toks
            .windows(words.len())
            .any(|win| win.iter().zip(words).all(|(t, w)| t.norm == *w))
    }

    /// Whether an unused token is one of `words` ("cost", "length").
    fn says_any(&self, said: &[String]) -> bool {
        self.toks.iter().any(|t| !t.used && listed(said, &t.norm))
    }

    /// Start of an unused run of tokens equal to `part`.
    fn find(&self, part: &[String]) -> Option<usize> {
        if part.is_empty() || part.len() > self.toks.len() {
            return None;
        }
        (0..=self.toks.len() - part.len()).find(|&i| {
            self.toks[i..i + part.len()]
                .iter()
                .zip(part)
                .all(|(t, p)| !t.used && t.norm == *p)
        })
    }

    /// Whether every part occurs (unused, distinct positions); returns their spans.
    fn find_all(&self, parts: &[Vec<String>]) -> Option<Spans> {
        if parts.is_empty() {
            return None;
        }
        let mut scratch = self.clone();
        let mut spans = Vec::new();
        for p in parts {
            let i = scratch.find(p)?;
            scratch.consume(i, p.len());
            spans.push((i, p.len()));
        }
        Some(spans)
    }

    fn consume(&mut self, start: usize, len: usize) {
        for t in &mut self.toks[start..start + len] {
            t.used = true;
        }
    }

    fn consume_all(&mut self, spans: &[(usize, usize)]) {
        for &(s, l) in spans {
            self.consume(s, l);
        }
    }

    /// Whether the question counts the values of `c` itself: "how many environments",
    /// "有多少个环境", "这些环境中有多少" (the column's words right after "how many" or "number
    /// of", or right before "how many" with only particles such as 中 between). "How many
    /// members have a company" counts members, not companies.
    fn counts_values_of(&self, c: &ColumnInfo) -> bool {
        if !c.is_text() || c.is_boolean() || is_id_like(c) {
            return false;
        }
        let Some(spans) = self.find_all(&ident_parts(&c.name)) else {
            return false;
        };
        let (Some(first), Some(last)) = (
            spans.iter().map(|&(s, _)| s).min(),
            spans.iter().map(|&(s, l)| s + l).max(),
        ) else {
            return false;
        };
        if last - first != spans.iter().map(|&(_, l)| l).sum::<usize>() {
            return false;
        }
        let norm = |i: usize| self.toks.get(i).map(|t| t.norm.as_str());
        let filler = |t: &Tok| {
            matches!(t.norm.as_str(), "the" | "different" | "distinct" | "unique")
                || (t.cjk && words().cjk_stop.contains(t.orig.as_str()))
        };
        let mut before = first;
        while before > 0 && self.toks.get(before - 1).is_some_and(filler) {
            before -= 1;
        }
        let after_how_many = before >= 2
            && matches!(
                (norm(before - 2), norm(before - 1)),
                (Some("how"), Some("many")) | (Some("number"), Some("of"))
            );
        let mut after = last;
        while self.toks.get(after).is_some_and(|t| t.cjk && filler(t)) {
            after += 1;
        }
        let before_how_many = norm(after) == Some("how") && norm(after + 1) == Some("many");
        after_how_many || before_how_many
    }

    fn fully_explained(&self) -> bool {
        self.toks.iter().filter(|t| !t.used).all(|t| {
            if t.cjk {
                words().cjk_stop.contains(t.orig.as_str())
            } else {
                let lower = t.orig.to_lowercase();
                let stop = &words().stopwords;
                stop.contains(&lower) || stop.contains(&t.norm)
            }
        })
    }
}

fn is_id_like(c: &ColumnInfo) -> bool {
    ident_words(&c.name).last().is_some_and(|w| w == "id")
}

/// The table the question is about: the one whose name words all occur, most words winning;
/// a tie means unsure. Without a named table, a sum/average column found in exactly one table,
/// or the only table of the schema, is used.
fn pick_table<'s>(q: &mut Question, schema: &'s Schema, intent: Intent) -> Option<&'s TableInfo> {
    let mut best: Vec<(usize, &TableInfo, Spans)> = Vec::new();
    for t in &schema.tables {
        let parts = ident_parts(&t.name);
        // A CJK table name inside one of its own CJK column names ("销售" in "销售额") names the
        // column, not the table.
        let mut scratch = q.clone();
        for c in t.columns.iter().filter(|c| c.name.chars().any(is_cjk)) {
            if let Some(spans) = scratch.find_all(&ident_parts(&c.name)) {
                scratch.consume_all(&spans);
            }
        }
        if let Some(spans) = scratch.find_all(&parts) {
            let score: usize = parts.iter().map(Vec::len).sum();
            best.push((score, t, spans));
        } else if let Some(spans) = said_for_people(&scratch, &parts) {
            // Below any table the question names itself.
            best.push((0, t, spans));
        }
    }
    best.sort_by_key(|(score, _, _)| std::cmp::Reverse(*score));
    // "chapters in the Poetry category", "books of the author Ann Lee", "chapters by the author Ann Lee": a
    // table and its parent (or grandparent) named alike are the rows and the parent they are
    // filtered by, which the filter reads.
    if let [(s1, a, _), (s2, b, _), rest @ ..] = best.as_slice()
        && s1 == s2
        && rest.first().is_none_or(|(s3, _, _)| s3 < s1)
    {
        let leads_to = |child: &TableInfo, parent: &TableInfo| {
            parents(schema, child).iter().any(|(_, p, _)| {
                p.name == parent.name
                    || parents(schema, p)
                        .iter()
                        .any(|(_, g, _)| g.name == parent.name)
            })
        };
        match (leads_to(a, b), leads_to(b, a)) {
            (true, false) => best.remove(1),
            (false, true) => best.remove(0),
            _ => return None,
        };
    }
    match best.as_slice() {
        [(s1, _, _), (s2, _, _), ..] if s1 == s2 => None,
        [(_, t, spans), ..] => {
            let spans = spans.clone();
            q.consume_all(&spans);
            Some(*t)
        }
        [] => {
            // "What are the total sales?": the one table with a column of takings ("total" may
            // name an sale's `Total`, but the sales of two tables are unsure).
            if matches!(intent, Intent::Sum | Intent::Avg | Intent::Ends(_))
                && q.says_any(&words().measure.sales)
            {
                let owners: Vec<&TableInfo> = schema
                    .tables
                    .iter()
                    .filter(|t| !takings_columns(t).is_empty())
                    .collect();
                return match owners.as_slice() {
                    [t] => Some(*t),
                    _ => None,
                };
            }
            if matches!(intent, Intent::Sum | Intent::Avg | Intent::Ends(_)) {
                let owners: Vec<&TableInfo> = schema
                    .tables
                    .iter()
                    .filter(|t| {
                        t.columns.iter().any(|c| {
                            c.is_numeric()
                                && !is_id_like(c)
                                && q.find_all(&ident_parts(&c.name)).is_some()
                        })
                    })
                    .collect();
                if let [t] = owners.as_slice() {
                    return Some(*t);
                }
            }
            // A table no other shares the question's column or value with: "who is on
            // probation" is about the table with an `On leave` column.
            let owners: Vec<&TableInfo> = schema
                .tables
                .iter()
                .filter(|t| mentions_something_of(q, t))
                .collect();
            if let [t] = owners.as_slice() {
                return Some(*t);
            }
            // "Who works in the Audio team?" asks for names: of those tables, the one that has
            // a column of names (staff beside projects; members beside employees stay unsure).
            if q.asks_who {
                let named: Vec<&TableInfo> = owners
                    .into_iter()
                    .filter(|t| !name_columns(t).is_empty())
                    .collect();
                if let [t] = named.as_slice() {
                    return Some(*t);
                }
            }
            match schema.tables.as_slice() {
                [only] => Some(only),
                _ => None,
            }
        }
    }
}

/// Where the question names a table called by a word for people (`[people] names` of the word
/// file: "employee", "staff") by another of them.
fn said_for_people(q: &Question, table_parts: &[Vec<String>]) -> Option<Spans> {
    let [name] = table_parts else { return None };
    let [word] = name.as_slice() else { return None };
    let people = &words().people.names;
    if !listed(people, word) {
        return None;
    }
    people
        .iter()
        .filter(|w| *w != word)
        .find_map(|w| q.find_all(&[vec![w.clone()]]))
}

/// Words that ask for one figure per group: "per status", "for each team", "by country"
/// (每个/各 and 按 are translated to these). "by" groups only a figure ("sale totals by
/// country"); with a list it names an owner ("books by Ann Lee").
fn is_group_marker(norm: &str, intent: Intent, superlative: bool) -> bool {
    match norm {
        "per" | "each" => true,
        "by" => intent != Intent::List,
        // "Which team has the most people" ranks teams.
        "which" => superlative,
        _ => false,
    }
}

/// A grouped question: the table and what its figure is given per ("how many projects per
/// status" → `Status` of the projects table), with the marker and the group's words consumed
/// in the returned question. `None` when the question has no group marker or its
/// words after the marker name no column of the table the rest of the question picks.
///
/// The words after the marker are set aside before the table is picked, so "chapters per book"
/// is about chapters even though "book" names a table too; the longest reading that names a
/// column wins.
fn pick_grouped_table<'s>(
    q: &Question,
    schema: &'s Schema,
    intent: Intent,
    superlative: bool,
) -> Option<(Question, &'s TableInfo, Group<'s>)> {
    let marker = q
        .toks
        .iter()
        .position(|t| !t.cjk && is_group_marker(&t.norm, intent, superlative))?;
    let mut start = marker + 1;
    if q.toks.get(start).is_some_and(|t| t.norm == "the") {
        start += 1;
    }
    for len in (1..=3).rev() {
        let Some(phrase) = q.toks.get(start..start + len) else {
            continue;
        };
        let phrase: Vec<String> = phrase.iter().map(|t| t.norm.clone()).collect();
        let mut grouped = q.clone();
        grouped.consume(marker, start + len - marker);
        // "for each", "on each team": the word belongs to the marker.
        if marker > 0 && ["for", "on"].contains(&grouped.toks[marker - 1].norm.as_str()) {
            grouped.consume(marker - 1, 1);
        }
        // Without a named table, the only table with such a column: "各团队有多少人" is
        // about the table with a team column; "sales per country", about the one with a
        // country column and a column of takings.
        let sales = grouped.says_any(&words().measure.sales);
        let table = pick_table(&mut grouped, schema, intent).or_else(|| {
            let owners: Vec<&TableInfo> = schema
                .tables
                .iter()
                .filter(|t| group_by(schema, t, &phrase).is_some())
                .filter(|t| !sales || !takings_columns(t).is_empty())
                .collect();
            match owners.as_slice() {
                [t] => Some(*t),
                _ => None,
            }
        });
        let Some(table) = table else { continue };
        if let Some(group) = group_by(schema, table, &phrase) {
            return Some((grouped, table, group));
        }
    }
    None
}

/// What `phrase` (normalized words) names for grouping rows of `table`: the column it names
/// ([`column_named`]); else the parent table of that name that a declared foreign
/// key leads to ("author" → `Book.AuthorId` → `Author`, shown by its name columns). Ids are
/// never shown as groups: a spreadsheet's "Project ID" with no declared key is not understood.
fn group_by<'s>(schema: &'s Schema, table: &'s TableInfo, phrase: &[String]) -> Option<Group<'s>> {
    if let Some(c) = column_named(table, phrase) {
        return Some(Group::Column(c));
    }
    let parent = parent_named(schema, table, phrase, false)?;
    Some(Group::Parent {
        key: parent.key,
        parent: parent.table,
        parent_key: parent.parent_key,
        labels: parent
            .labels
            .iter()
            .map(|c| format!("p.{}", quote_ident(&c.name)))
            .collect(),
    })
}

/// A parent row that a declared single-column foreign key of a table leads to.
#[derive(Debug, Clone)]
struct ParentRow<'s> {
    /// The referencing column (`Book.AuthorId`).
    key: &'s ColumnInfo,
    table: &'s TableInfo,
    /// The referenced column (`Author.AuthorId`).
    parent_key: String,
    /// The parent's [`label_columns`], never empty.
    labels: Vec<&'s ColumnInfo>,
}

/// The parent table of `table` that `phrase` (normalized words) names: by its table name
/// ("author" → `Book.AuthorId` → `Author`), or with `by_key`, by the referencing column's own
/// words, each word of it said whole or begun ("support rep" or "support representative" for
/// `Member.AccountManagerId` → `Staff`). A parent with nothing to show it by is none.
fn parent_named<'s>(
    schema: &'s Schema,
    table: &'s TableInfo,
    phrase: &[String],
    by_key: bool,
) -> Option<ParentRow<'s>> {
    let words_of = |name: &str| -> Vec<String> { ident_parts(name).concat() };
    let said_by_key = |col: &str| {
        let mut words = words_of(col);
        if words.last().is_some_and(|w| w == "id") {
            words.pop();
        }
        words.len() == phrase.len()
            && words.iter().zip(phrase).all(|(w, p)| {
                w == p
                    || (w.chars().count() >= 3
                        && !w.chars().any(is_cjk)
                        && p.starts_with(w.as_str()))
            })
    };
    parents(schema, table)
        .into_iter()
        .find_map(|(key, parent, parent_key)| {
            let superior = by_key
                && parent.name == table.name
                && words().people.superior.iter().any(|w| {
                    tokenize(w)
                        .into_iter()
                        .map(|t| t.norm)
                        .eq(phrase.iter().cloned())
                });
            if words_of(&parent.name) != phrase && !(by_key && said_by_key(&key.name)) && !superior
            {
                return None;
            }
            let labels = label_columns(parent);
            if labels.is_empty() {
                return None;
            }
            Some(ParentRow {
                key,
                table: parent,
                parent_key,
                labels,
            })
        })
}

/// The columns that name a row of `table` for a reader: its name columns ("Name", "GivenName"
/// and "FamilyName"), else the column named as the table ("Project" of a projects sheet), else a
/// title column ("Title" of an book).
fn label_columns(table: &TableInfo) -> Vec<&ColumnInfo> {
    let names = name_columns(table);
    if !names.is_empty() {
        return names;
    }
    // A sheet of projects whose first column is "Project".
    let table_words = ident_parts(&table.name).concat();
    let text = || table.columns.iter().filter(|c| c.is_text());
    if let Some(c) =
        text().find(|c| !table_words.is_empty() && ident_parts(&c.name).concat() == table_words)
    {
        return vec![c];
    }
    text()
        .filter(|c| ident_words(&c.name).iter().any(|w| w == "title"))
        .take(1)
        .collect()
}

/// What a listing shows beside each row's labels, after "with their", "along with",
/// "including" or 及其 (which arrives as "with their").
#[derive(Debug, Clone)]
enum Shown<'s> {
    /// A column of the listed table: "projects with their budgets".
    Column(&'s ColumnInfo),
    /// The parent row, by its labels: "books with their author names".
    Parent(ParentRow<'s>),
}

/// Where a listing says what it shows each row with: the marker's start, the position after
/// it, and whether it may show the rows' own columns. "with" alone shows only parents ("books
/// with author names"): before a column it is a condition ("projects with budget less than
/// 90", "members with a company").
fn with_marker(q: &Question) -> Option<(usize, usize, bool)> {
    let norm = |i: usize| q.toks.get(i).filter(|t| !t.used).map(|t| t.norm.as_str());
    (0..q.toks.len()).find_map(|i| {
        let (end, marked) = match (norm(i)?, norm(i + 1)) {
            ("along" | "together", Some("with")) => (i + 2, true),
            ("including" | "include", _) => (i + 1, true),
            ("with", _) => (i + 1, false),
            _ => return None,
        };
        let owner = matches!(
            norm(end),
            Some("their" | "its" | "respective" | "corresponding")
        );
        let the = !owner && norm(end) == Some("the");
        Some((i, end + usize::from(owner || the), marked || owner))
    })
}

/// A listing of rows shown with their parents' labels or some of their own columns: "List all
/// books with their author names", "chapters with their book and category", "members with their
/// support rep", "列出所有项目及其预算". The table is the one named before the marker; every
/// item after it is consumed. `None` when no marker or nothing it could show.
fn pick_shown_with<'s>(
    q: &Question,
    schema: &'s Schema,
) -> Option<(Question, &'s TableInfo, Vec<Shown<'s>>)> {
    if let Some(each) = pick_each_ones(q, schema) {
        return Some(each);
    }
    let (start, end, columns) = with_marker(q)?;
    let mut head = q.clone();
    // The table is named before the marker: "chapters with their format" lists chapters, though
    // `Format` is named by more words.
    let after: Vec<usize> = (start..head.toks.len())
        .filter(|&i| !head.toks[i].used)
        .collect();
    for &i in &after {
        head.toks[i].used = true;
    }
    let table = pick_table(&mut head, schema, Intent::List)?;
    for &i in &after {
        head.toks[i].used = false;
    }
    // "List each employee with their manager": "each" belongs to the table named after it.
    if let Some(each) = (1..start).find(|&i| {
        let t = &head.toks[i - 1];
        !t.used && matches!(t.norm.as_str(), "each" | "every") && head.toks[i].used
    }) {
        head.consume(each - 1, 1);
    }
    head.consume(start, end - start);
    let shown = shown_items(&mut head, schema, table, end)?;
    if !columns && shown.iter().any(|s| matches!(s, Shown::Column(_))) {
        return None;
    }
    Some((head, table, shown))
}

/// A result column of a listing: its expression (empty for a column a `*` before it shows),
/// its name, and whether the name must be given with `AS`.
struct Label {
    expr: String,
    name: String,
    renamed: bool,
}

/// How labels are shown: a person's first and last names as one name ("Jane Peacock",
/// `concat_ws` passing over a missing part), other labels as they are; qualified by `alias`
/// where the table has one.
fn shown_labels(labels: &[&ColumnInfo], alias: Option<&str>) -> Vec<Label> {
    let column = |c: &ColumnInfo| match alias {
        Some(a) => format!("{a}.{}", quote_ident(&c.name)),
        None => quote_ident(&c.name),
    };
    let has = |c: &ColumnInfo, word: &str| ident_words(&c.name).iter().any(|w| w == word);
    let first = labels.iter().find(|c| has(c, "first"));
    let last = labels.iter().find(|c| has(c, "last"));
    if let (2, Some(first), Some(last)) = (labels.len(), first, last) {
        return vec![Label {
            expr: format!("concat_ws(' ', {}, {})", column(first), column(last)),
            name: "Name".to_owned(),
            renamed: true,
        }];
    }
    labels
        .iter()
        .map(|c| Label {
            expr: column(c),
            name: c.name.clone(),
            renamed: false,
        })
        .collect()
}

/// "Show each project's owner", "每个项目的负责人是谁？" (每个 arrives as "each"): a listing of
/// the rows of the table named right after "each", shown with what its possessive names.
fn pick_each_ones<'s>(
    q: &Question,
    schema: &'s Schema,
) -> Option<(Question, &'s TableInfo, Vec<Shown<'s>>)> {
    let each = q.toks.iter().position(|t| !t.used && t.norm == "each")?;
    schema.tables.iter().find_map(|table| {
        let words = ident_parts(&table.name).concat();
        let named = q.toks.get(each + 1..each + 1 + words.len())?;
        if words.is_empty()
            || named
                .iter()
                .zip(&words)
                .any(|(t, w)| t.used || t.norm != *w)
        {
            return None;
        }
        let mut end = each + 1 + words.len();
        // The possessive: "project's" leaves an "s"; 的.
        if q.toks
            .get(end)
            .is_some_and(|t| !t.used && matches!(t.norm.as_str(), "s" | "的"))
        {
            end += 1;
        }
        let mut listed = q.clone();
        listed.consume(each, end - each);
        let shown = shown_items(&mut listed, schema, table, end)?;
        Some((listed, table, shown))
    })
}

/// The items a listing shows from `at` on, each consumed: parent tables (followed by "name" or
/// "title", which are their labels) and columns of `table`, joined by "and" or commas.
fn shown_items<'s>(
    q: &mut Question,
    schema: &'s Schema,
    table: &'s TableInfo,
    mut at: usize,
) -> Option<Vec<Shown<'s>>> {
    let mut out: Vec<Shown<'s>> = Vec::new();
    loop {
        while q.toks.get(at).is_some_and(|t| {
            !t.used
                && matches!(
                    t.norm.as_str(),
                    "and" | "the" | "their" | "its" | "和" | "与" | "及"
                )
        }) {
            q.consume(at, 1);
            at += 1;
        }
        let found = (1..=3).rev().find_map(|len| {
            let words = q.toks.get(at..at + len)?;
            if words.iter().any(|t| t.used) {
                return None;
            }
            let phrase: Vec<String> = words.iter().map(|t| t.norm.clone()).collect();
            let item = match column_named(table, &phrase) {
                Some(c) if !is_id_like(c) => Shown::Column(c),
                _ => Shown::Parent(parent_named(schema, table, &phrase, true)?),
            };
            Some((item, len))
        });
        let Some((item, len)) = found else { break };
        q.consume(at, len);
        at += len;
        if matches!(item, Shown::Parent(_))
            && q.toks
                .get(at)
                .is_some_and(|t| !t.used && matches!(t.norm.as_str(), "name" | "title"))
        {
            q.consume(at, 1);
            at += 1;
        }
        out.push(item);
    }
    (!out.is_empty()).then_some(out)
}

/// Whether the question names a column of `table` (not an id), a yes/no column of it, or one
/// of its sample text values.
fn mentions_something_of(q: &Question, table: &TableInfo) -> bool {
    table.columns.iter().any(|c| {
        (!is_id_like(c) && q.find_all(&ident_parts(&c.name)).is_some())
            || (c.is_boolean() && flag_mention(q, c).is_some())
            || c.known_values().into_iter().any(|s| {
                let part: Vec<String> = tokenize(s).into_iter().map(|t| t.norm).collect();
                is_matched_value(s) && q.find(&part).is_some()
            })
    })
}

/// A filter on a value of the parent row a declared single-column foreign key of `table`
/// leads to, its words consumed: "poetry chapters", "chapters on The Long Road", "Accept的图书";
/// or of the grandparent row one more key away ("chapters by Ann Lee": chapter → book → author),
/// where the same words as a parent's value are the parent's. The value's table name said right
/// beside it is consumed too ("the Rock category", "the book The Long Road"). `Some(None)`
/// when no such value is named; `None` when two are, equally long, as near.
fn parent_filter<'t>(
    q: &mut Question,
    schema: &'t Schema,
    table: &'t TableInfo,
) -> Option<Option<(&'t ColumnInfo, Filter)>> {
    struct Found<'a> {
        len: usize,
        start: usize,
        child: &'a ColumnInfo,
        parent: &'a TableInfo,
        key: String,
        /// The table that holds the value: the parent, or the grandparent `via` leads to.
        holder: &'a TableInfo,
        column: &'a ColumnInfo,
        value: String,
        via: Option<Via>,
    }
    let mut found: Vec<Found<'t>> = Vec::new();
    for (child, parent, key) in parents(schema, table) {
        // The parent's own values, then those of its parents: "chapters by Ann Lee" (an author's
        // chapters, through their books).
        let mut holders = vec![(parent, None)];
        for (via_key, grand, grand_key) in parents(schema, parent) {
            if grand.name != table.name && grand.name != parent.name {
                holders.push((
                    grand,
                    Some(Via {
                        key: via_key.name.clone(),
                        table: grand.name.clone(),
                        table_key: grand_key,
                    }),
                ));
            }
        }
        for (holder, via) in holders {
            for column in holder.columns.iter().filter(|c| c.is_text()) {
                for value in column.known_values() {
                    if !is_matched_value(value) {
                        continue;
                    }
                    let part: Vec<String> = tokenize(value).into_iter().map(|t| t.norm).collect();
                    if let Some(start) = q.find(&part) {
                        found.push(Found {
                            len: part.len(),
                            start,
                            child,
                            parent,
                            key: key.clone(),
                            holder,
                            column,
                            value: value.to_owned(),
                            via: via.clone(),
                        });
                    }
                }
            }
        }
    }
    // The longest value first; of the same words, a parent's before a grandparent's.
    found.sort_by_key(|f| (std::cmp::Reverse(f.len), f.via.is_some()));
    let Some(best) = found.first() else {
        return Some(None);
    };
    // The same words a value of two parents (or two grandparents), or of two columns: unsure. A
    // value elsewhere in the question is the next filter's ("Rock chapters on The Long Road").
    let overlaps = |f: &Found<'_>| f.start < best.start + best.len && best.start < f.start + f.len;
    if found[1..]
        .iter()
        .any(|f| f.len == best.len && overlaps(f) && f.via.is_some() == best.via.is_some())
    {
        return None;
    }
    q.consume(best.start, best.len);
    // "chapters on The Long Road", "books by Ann Lee", "chapters in the Rock category", "chapters on
    // the book The Long Road": the words that lead to the value's table.
    let mut at = best.start;
    let holder_words = ident_parts(&best.holder.name).concat();
    let named: Vec<&str> = holder_words.iter().map(String::as_str).collect();
    if at >= named.len() && q.phrase_at(at - named.len(), &named) {
        at -= named.len();
        q.consume(at, named.len());
    }
    consume_lead_in(q, at, &["on", "in", "by", "from", "of"]);
    // "the Rock category": the table's name right after the value. Said anywhere else, it may be
    // what is asked for ("How many categories have rock chapters?"), and stays unexplained.
    let end = best.start + best.len;
    if q.phrase_at(end, &named) {
        q.consume(end, named.len());
    }
    Some(Some((
        best.child,
        Filter::Parent {
            table: best.parent.name.clone(),
            key: best.key.clone(),
            column: best.column.name.clone(),
            value: best.value.clone(),
            via: best.via.clone(),
        },
    )))
}

/// The parents a table's declared single-column foreign keys lead to: `(referencing column,
/// parent table, referenced key)`; a key left unnamed is the parent's one primary key column.
fn parents<'t>(
    schema: &'t Schema,
    table: &'t TableInfo,
) -> Vec<(&'t ColumnInfo, &'t TableInfo, String)> {
    table
        .foreign_keys
        .iter()
        .filter_map(|fk| {
            let [col] = fk.columns.as_slice() else {
                return None;
            };
            let (child, parent) = (table.column(col)?, schema.table(&fk.ref_table)?);
            let key = match fk.ref_columns.as_slice() {
                [k] => k.clone(),
                [] => match parent
                    .columns
                    .iter()
                    .filter(|c| c.primary_key > 0)
                    .collect::<Vec<_>>()[..]
                {
                    [k] => k.name.clone(),
                    _ => return None,
                },
                _ => return None,
            };
            Some((child, parent, key))
        })
        .collect()
}

/// Whether the question names `c`: its words, or the verb of its doer ("owned by").
fn says_column(q: &Question, c: &ColumnInfo) -> bool {
    q.find_all(&ident_parts(&c.name)).is_some() || doer_verb_at(q, c).is_some()
}

/// The column of `table` whose whole name the question says right before token `start` (a
/// "the" between): "report to Sam Hill" puts the name in `ManagerId`, "owner 张伟" in
/// `Owner`. A value found in another column is then not what the question means by it.
fn named_before<'t>(q: &Question, start: usize, table: &'t TableInfo) -> Option<&'t ColumnInfo> {
    let end = if start > 0 && q.phrase_at(start - 1, &["the"]) {
        start - 1
    } else {
        start
    };
    table.columns.iter().find(|c| {
        let words = ident_parts(&c.name).concat();
        let words: Vec<&str> = words.iter().map(String::as_str).collect();
        end >= words.len() && !words.is_empty() && q.phrase_at(end - words.len(), &words)
    })
}

/// Consumes the words that lead to a value at token `start`: a "the" right before it, and one
/// of `words` before that ("on the Firmware team", "chapters in the Rock category").
fn consume_lead_in(q: &mut Question, start: usize, words: &[&str]) {
    let mut at = start;
    if at > 0 && q.phrase_at(at - 1, &["the"]) {
        at -= 1;
    }
    if at > 0 && words.iter().any(|w| q.phrase_at(at - 1, &[w])) {
        at -= 1;
    }
    q.consume(at, start - at);
}

/// Whether a column's value is looked for among a question's words: two characters or more,
/// and a letter among them. A number in a question is a year, a count or a bound, not a code
/// that happens to be written the same ("sales from the year 2010" beside the postcode
/// 2010).
fn is_matched_value(value: &str) -> bool {
    value.chars().count() >= 2 && value.chars().any(char::is_alphabetic)
}

/// The most equality filters one question is read with; more is a list of values, not
/// conditions a reader would expect the template to settle.
const MAX_FILTERS: usize = 3;

/// Every equality filter of the question, each on its own column: "projects active owned
/// by 张伟" is `Status = 'Active' AND Owner = '张伟'`, "staff on leave in the Audio
/// team" a value and a yes/no column. `None` when unsure, and when one column would have to
/// equal two values ("projects owned by Ada Li or Sam Hill" asks for either, an `OR` the
/// template does not write).
fn pick_filters<'t>(
    q: &mut Question,
    schema: &'t Schema,
    table: &'t TableInfo,
) -> Option<Vec<(&'t ColumnInfo, Filter)>> {
    let mut filters: Vec<(&ColumnInfo, Filter)> = Vec::new();
    while let Some((col, filter)) = pick_filter(q, schema, table, filters.is_empty())? {
        if filters.len() == MAX_FILTERS || filters.iter().any(|(c, _)| c.name == col.name) {
            return None;
        }
        filters.push((col, filter));
    }
    Some(filters)
}

/// One filter `(column, value)`, its words consumed: `Some(None)` for no (more) filter, `None`
/// when unsure. A quoted value is looked for only by the `first` call: a question quotes one.
fn pick_filter<'t>(
    q: &mut Question,
    schema: &'t Schema,
    table: &'t TableInfo,
    first: bool,
) -> Option<Option<(&'t ColumnInfo, Filter)>> {
    let text_cols: Vec<&ColumnInfo> = table.columns.iter().filter(|c| c.is_text()).collect();
    // 1. A quoted value: the column that has it, else the one text column named.
    if let Some(value) = q.quoted.first().cloned().filter(|_| first) {
        if q.quoted.len() > 1 {
            return None;
        }
        let lower = value.to_lowercase();
        let holders: Vec<(&ColumnInfo, String)> = text_cols
            .iter()
            .filter_map(|c| {
                c.known_values()
                    .into_iter()
                    .find(|t| t.to_lowercase() == lower)
                    .map(|t| (*c, t.to_owned()))
            })
            .collect();
        if let [(c, v)] = holders.as_slice() {
            consume_column_mention(q, c);
            return Some(Some((*c, Filter::Text(v.clone()))));
        }
        let named: Vec<(&ColumnInfo, Spans)> = text_cols
            .iter()
            .filter_map(|c| q.find_all(&ident_parts(&c.name)).map(|s| (*c, s)))
            .collect();
        return match named.as_slice() {
            [(c, spans)] => {
                q.consume_all(spans);
                Some(Some((*c, Filter::Text(value))))
            }
            _ => None,
        };
    }
    // 2. A value of a text column (any where the column's values are known, else a sample),
    // longest match first.
    let mut matches: Vec<(usize, &ColumnInfo, String, usize)> = Vec::new();
    for c in &text_cols {
        for s in c.known_values() {
            if !is_matched_value(s) {
                continue;
            }
            let part: Vec<String> = tokenize(s).into_iter().map(|t| t.norm).collect();
            if let Some(start) = q.find(&part) {
                matches.push((part.len(), *c, s.to_owned(), start));
            }
        }
    }
    // Longest first; of equal ones, the first said, so several filters keep the question's
    // order ("named Frank Harris": the first name, then the last).
    matches.sort_by_key(|&(len, _, _, start)| (std::cmp::Reverse(len), start));
    if let Some(&(len, _, _, start)) = matches.first() {
        // The same words may be a value of several columns ("张伟" an owner and a reviewer):
        // the one the question names is meant ("owned by 张伟"), else it is unsure. A value
        // elsewhere in the question is the next filter's.
        let same_words: Vec<&(usize, &ColumnInfo, String, usize)> = matches
            .iter()
            .filter(|m| m.0 == len && m.3 < start + len && start < m.3 + m.0)
            .collect();
        let chosen = match same_words.as_slice() {
            [only] => Some(*only),
            many => match many
                .iter()
                .filter(|m| m.3 == start && says_column(q, m.1))
                .collect::<Vec<_>>()
                .as_slice()
            {
                [named] => Some(**named),
                _ => None,
            },
        };
        let (_, col, value, _) = chosen?.clone();
        if named_before(q, start, table).is_some_and(|c| c.name != col.name) {
            return None;
        }
        q.consume(start, len);
        // "Who is on the Firmware team?", "members named Frank Harris" ("in", "of" and
        // "from" are stop words; "by" before a value of the table's own is left to the group
        // reading).
        consume_lead_in(q, start, &["on", "named", "called"]);
        consume_column_mention(q, col);
        return Some(Some((col, Filter::Text(value))));
    }
    // 3. A value of a parent row a declared foreign key leads to.
    if let Some(found) = parent_filter(q, schema, table)? {
        return Some(Some(found));
    }
    // 4. A yes/no column named by its words: "staff on leave" (`On leave` true).
    let flags: Vec<(&ColumnInfo, Spans)> = table
        .columns
        .iter()
        .filter(|c| c.is_boolean())
        .filter_map(|c| flag_mention(q, c).map(|spans| (c, spans)))
        .collect();
    match flags.as_slice() {
        [] => Some(None),
        [(c, spans)] => {
            q.consume_all(spans);
            Some(Some((*c, Filter::True)))
        }
        _ => None,
    }
}

/// A numeric condition: "budget over 100000", "at least 2 items", "预算超过10万".
#[derive(Debug, Clone)]
struct Comparison<'t> {
    column: &'t ColumnInfo,
    /// `>`, `>=`, `<` or `<=`.
    op: &'static str,
    /// The number as SQL writes it ("100000", "0.99"), or the subquery of the table's average.
    value: String,
}

/// The length of "the average" or "average" (平均, 平均值 arrive as "average") at token `i`.
fn average_at(q: &Question, i: usize) -> Option<usize> {
    let the = usize::from(q.phrase_at(i, &["the"]));
    q.toks
        .get(i + the)
        .filter(|t| !t.used && !t.cjk && listed(&words().measure.average, &t.norm))
        .map(|_| the + 1)
}

/// Whether the average at token `i` is what a comparison is against: "longer than the
/// average", "budget above average", "预算高于平均值".
fn compared_with_average(q: &Question, i: usize) -> bool {
    words().compare.before.iter().any(|compare| {
        let phrase = compare.words.words();
        (0..=1).any(|the| {
            let start = i.checked_sub(phrase.len() + the);
            start.is_some_and(|s| {
                q.phrase_at(s, phrase) && average_at(q, s + phrase.len()) == Some(the + 1)
            })
        })
    })
}

/// What a comparison measures rows against.
#[derive(Debug, Clone, PartialEq)]
enum Against {
    /// A number the question states, as SQL writes it.
    Number(String),
    /// The column's average over the table: "longer than the average chapter length".
    Average,
}

/// What follows a compared number: a unit of time ("5 minutes", "3分钟") or of money ("$0.99"
/// leaves no word, "1 dollar", "10美元", "5元").
#[derive(Debug, Clone, Copy, PartialEq)]
enum Suffix {
    Time(TimeUnit),
    Money,
}

/// The unit written at token `i`, and how many tokens it takes.
fn suffix_at(q: &Question, i: usize) -> Option<(Suffix, usize)> {
    let word = |i: usize| q.toks.get(i).filter(|t| !t.used);
    let first = word(i)?;
    if first.cjk {
        // Chinese units are runs of characters: 分钟, 小时, 美元.
        for len in [2, 1] {
            let Some(run) = q.toks.get(i..i + len) else {
                continue;
            };
            if run.iter().any(|t| t.used || !t.cjk) {
                continue;
            }
            let text: String = run.iter().map(|t| t.orig.as_str()).collect();
            if let Some(unit) = TimeUnit::of_word(&text) {
                return Some((Suffix::Time(unit), len));
            }
            if listed(&words().measure.money_units, &text) {
                return Some((Suffix::Money, len));
            }
        }
        return None;
    }
    if let Some(unit) = TimeUnit::of_word(&first.norm).or_else(|| TimeUnit::of_word(&first.orig)) {
        // "s" and "h" alone are letters more often than units.
        if first.norm.len() > 1 {
            return Some((Suffix::Time(unit), 1));
        }
    }
    listed(&words().measure.money_units, &first.norm).then_some((Suffix::Money, 1))
}

/// One numeric condition on a numeric column of `table`, its words consumed: `Some(None)` when
/// the question states none (a comparison word with no number beside it stays unconsumed, so
/// the question is not fully understood), `None` when which column it compares is not clear.
/// The column is the numeric one the question names, or the table's only numeric column when
/// it names none. A number with a unit of time compares a column whose name states one
/// (`DurationMs`), converted ("longer than 5 minutes" is `> 300000`); one with a unit of
/// money, or beside "cost"/"price", a column of prices or amounts.
fn pick_comparison<'t>(q: &mut Question, table: &'t TableInfo) -> Option<Option<Comparison<'t>>> {
    let compares = &words().compare;
    let mut found = None;
    'scan: for i in 0..q.toks.len() {
        for compare in &compares.before {
            let phrase = compare.words.words();
            if !q.phrase_at(i, phrase) {
                continue;
            }
            let op = compare.op.sql();
            let after = i + phrase.len();
            if let Some((value, len)) = number_at(q, after) {
                let suffix = suffix_at(q, after + len);
                let slen = suffix.map_or(0, |(_, l)| l);
                let against = Against::Number(value);
                found = Some((i, phrase.len() + len + slen, op, against, suffix, phrase));
                break 'scan;
            }
            if let Some(len) = average_at(q, after) {
                found = Some((i, phrase.len() + len, op, Against::Average, None, phrase));
                break 'scan;
            }
        }
        if let Some((value, len)) = number_at(q, i) {
            let suffix = suffix_at(q, i + len);
            let slen = suffix.map_or(0, |(_, l)| l);
            for compare in &compares.after {
                let phrase = compare.words.words();
                if q.phrase_at(i + len + slen, phrase) {
                    let against = Against::Number(value);
                    let len = len + slen + phrase.len();
                    found = Some((i, len, compare.op.sql(), against, suffix, phrase));
                    break 'scan;
                }
            }
        }
    }
    let Some((start, len, op, against, suffix, phrase)) = found else {
        return Some(None);
    };
    // "owners with 2 or more projects", "超过2个项目": a number of the table's rows is a count
    // per group, not a value of one of its columns (it read `Budget >= 2`).
    let table_words = ident_parts(&table.name).concat();
    let counted = q.toks[start + len..]
        .iter()
        .find(|t| !(t.cjk && t.orig.starts_with(is_measure_word_zh)))
        .is_some_and(|t| table_words.contains(&t.norm));
    if counted && matches!(against, Against::Number(_)) {
        return None;
    }
    let mut scratch = q.clone();
    scratch.consume(start, len);
    let measure = match suffix {
        Some((Suffix::Time(_), _)) => Measure::Duration,
        _ if compares.duration.iter().any(|d| d.words() == phrase) => Measure::Duration,
        Some((Suffix::Money, _)) => Measure::Money,
        None => Measure::Any,
    };
    let pool = measure_columns(table, measure);
    let named = named_columns(&scratch, &pool);
    let column = match named.as_slice() {
        [(c, spans)] => {
            scratch.consume_all(spans);
            *c
        }
        [] => {
            // "chapters that cost more than 0.99": the one column of prices; "时长超过平均时长"
            // (duration over the average duration): the one of durations.
            let pool = match measure {
                Measure::Any if scratch.says_any(&words().measure.money) => {
                    measure_columns(table, Measure::Money)
                }
                Measure::Any if scratch.says_any(&words().measure.duration) => {
                    measure_columns(table, Measure::Duration)
                }
                _ => pool,
            };
            let [only] = pool.as_slice() else {
                return None;
            };
            *only
        }
        _ => return None,
    };
    consume_measure_words(&mut scratch, measure, table, column);
    if measure == Measure::Any && is_money_column(column) {
        consume_measure_words(&mut scratch, Measure::Money, table, column);
    }
    if measure == Measure::Any && TimeUnit::of_column(&column.name).is_some() {
        consume_measure_words(&mut scratch, Measure::Duration, table, column);
    }
    if against == Against::Average {
        // "longer than the average chapter length": the words after "average" say whose it
        // is and of what, the table's name said again.
        let table_words = ident_parts(&table.name).concat();
        let mut i = start + len;
        while let Some(t) = scratch.toks.get_mut(i) {
            if t.used {
                i += 1;
            } else if table_words.contains(&t.norm) {
                t.used = true;
                i += 1;
            } else {
                break;
            }
        }
    }
    let value = match (against, suffix) {
        // "The average" with no other words is the table's: every row is compared with the
        // same figure, whatever the question's other conditions keep.
        (Against::Average, _) => format!(
            "(SELECT AVG({}) FROM {})",
            quote_ident(&column.name),
            quote_ident(&table.name)
        ),
        // The question's quantity in the column's unit.
        (Against::Number(value), Some((Suffix::Time(unit), _))) => {
            let n: f64 = value.parse().ok()?;
            let to = TimeUnit::of_column(&column.name)?;
            sql_number(n * unit.millis() / to.millis(), None)?
        }
        (Against::Number(value), _) => value,
    };
    *q = scratch;
    Some(Some(Comparison { column, op, value }))
}

/// A column of `table` that the question says holds no value (`true`) or holds one (`false`),
/// its words consumed: the column's whole name right after words such as "without", "with
/// null" or "have a", or right before "is null", "is not specified", "is not empty". Keys and yes/no
/// columns are not read so ("staff without probation" is a flag, not a missing value).
fn pick_missing<'t>(q: &mut Question, table: &'t TableInfo) -> Option<(&'t ColumnInfo, bool)> {
    for c in &table.columns {
        if c.primary_key > 0 || c.is_boolean() {
            continue;
        }
        // "employees who do not have a manager": the key to the employee they report to.
        let mut names = vec![ident_parts(&c.name).concat()];
        if leads_to_own_table(table, c) {
            names.extend(
                words()
                    .people
                    .superior
                    .iter()
                    .map(|w| tokenize(w).into_iter().map(|t| t.norm).collect()),
            );
        }
        for name in names {
            let Some(at) = q.find(&name) else { continue };
            let end = at + name.len();
            for state in &words().missing.before {
                let phrase = state.words.words();
                if at >= phrase.len() && q.phrase_at(at - phrase.len(), phrase) {
                    q.consume(at - phrase.len(), end - (at - phrase.len()));
                    return Some((c, state.absent));
                }
            }
            for state in &words().missing.after {
                let phrase = state.words.words();
                if q.phrase_at(end, phrase) {
                    q.consume(at, name.len() + phrase.len());
                    return Some((c, state.absent));
                }
            }
        }
    }
    None
}

/// Whether `c` is a declared single-column foreign key of `table` to `table` itself.
fn leads_to_own_table(table: &TableInfo, c: &ColumnInfo) -> bool {
    table.foreign_keys.iter().any(|fk| {
        matches!(fk.columns.as_slice(), [col] if *col == c.name)
            && fk.ref_table.eq_ignore_ascii_case(&table.name)
    })
}

/// A row asked for by its number: "member #5", "the sale with id 37". The column is the id
/// column whose words come right before ("sale id 37" in sale lines is `SaleId`),
/// else the table's single-column numeric primary key.
fn pick_key<'t>(q: &mut Question, table: &'t TableInfo) -> Option<(&'t ColumnInfo, i64)> {
    let at = q
        .toks
        .windows(2)
        .position(|w| !w[0].used && !w[1].used && matches!(w[0].norm.as_str(), "#" | "id"))?;
    let n: i64 = q.toks[at + 1].norm.parse().ok()?;
    let before = |len: usize| -> Option<Vec<String>> {
        let start = at.checked_sub(len)?;
        Some(q.toks[start..at].iter().map(|t| t.norm.clone()).collect())
    };
    let by_words = table
        .columns
        .iter()
        .filter(|c| is_id_like(c) && c.is_numeric())
        .filter_map(|c| {
            let mut words = ident_parts(&c.name).concat();
            words.pop();
            (!words.is_empty() && before(words.len()).as_ref() == Some(&words))
                .then_some((words.len(), c))
        })
        .max_by_key(|(len, _)| *len);
    let (len, column) = match by_words {
        Some(hit) => hit,
        None => {
            let keys: Vec<&ColumnInfo> =
                table.columns.iter().filter(|c| c.primary_key > 0).collect();
            match keys.as_slice() {
                [key] if key.is_numeric() => (0, *key),
                _ => return None,
            }
        }
    };
    q.consume(at - len, len + 2);
    Some((column, n))
}

/// A condition on a date column by year or month: "sales from the year 2010", "projects
/// started after 2023", "after March 2024", "2024年的项目", "2024年3月以后".
#[derive(Debug, Clone)]
struct YearFilter<'t> {
    column: &'t ColumnInfo,
    /// The months it spans, `[from, to)`; an open end is `None`.
    range: (Option<Month>, Option<Month>),
}

/// A month: `(year, month)`, the month from 1.
type Month = (u32, u32);

/// The month after `(year, month)`.
fn next_month((year, month): Month) -> Month {
    if month >= 12 {
        (year + 1, 1)
    } else {
        (year, month + 1)
    }
}

/// The month an English word names: "March", "mar", "Sept".
fn month_named(word: &str) -> Option<u32> {
    let w = word.to_lowercase();
    words()
        .dates
        .months
        .iter()
        .position(|m| {
            *m == w || (w.len() >= 3 && m.starts_with(&w) && (w.len() == 3 || w == "sept"))
        })
        .and_then(|i| u32::try_from(i + 1).ok())
}

/// Whether a column holds dates: every sample is text that opens with an ISO date
/// ("2024-02-05", "2009-01-01 00:00:00"), whatever type it was declared with.
fn is_date_column(c: &ColumnInfo) -> bool {
    let iso = |t: &str| {
        let b = t.as_bytes();
        b.len() >= 10
            && b[..4].iter().all(u8::is_ascii_digit)
            && b[4] == b'-'
            && b[5..7].iter().all(u8::is_ascii_digit)
            && b[7] == b'-'
            && b[8..10].iter().all(u8::is_ascii_digit)
    };
    !c.samples.is_empty()
        && c.samples
            .iter()
            .all(|v| matches!(v, Value::Text(t) if iso(t)))
}

/// A year or month condition on a date column of `table`, its words consumed: `Some(None)` when
/// the question names no year; `None` when which date column it means is not clear. A year is
/// four digits (1900–2100), a month its English name before the year ("March 2024", "Sept
/// 2023") or 2024年3月; after "in"/"during"/"from [the year]" (within it), "after" (from the
/// next), "before" (up to it), "since" (from it), or before 年/月 (within it, 以后 after, 以前
/// before, 起/以来 since). The column is the date column the question names, or the table's
/// only one.
fn pick_year<'t>(q: &mut Question, table: &'t TableInfo) -> Option<Option<YearFilter<'t>>> {
    let year_at = |i: usize| {
        q.toks
            .get(i)
            // As written: "1990s" folds to "1990" but names a decade.
            .filter(|t| !t.used && t.orig.len() == 4 && t.orig.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|t| t.orig.parse::<u32>().ok())
            .filter(|y| (1900..=2100).contains(y))
    };
    let word = |i: usize| q.toks.get(i).filter(|t| !t.used).map(|t| t.norm.as_str());
    // The month or year as `[from, to)`, and what the question's words make of it.
    let span = |period: (Month, Month), relation: &str| match relation {
        "after" => (Some(period.1), None),
        "before" => (None, Some(period.0)),
        "since" => (Some(period.0), None),
        _ => (Some(period.0), Some(period.1)),
    };
    let mut found = None;
    for i in 0..q.toks.len() {
        let Some(y) = year_at(i) else { continue };
        if word(i + 1) == Some("年") {
            // "2024年3月": a month of that year.
            let month = word(i + 2)
                .and_then(|m| m.parse::<u32>().ok())
                .filter(|m| (1..=12).contains(m) && word(i + 3) == Some("月"));
            let (period, at) = match month {
                Some(m) => (((y, m), next_month((y, m))), i + 4),
                None => (((y, 1), (y + 1, 1)), i + 2),
            };
            // "2002年以后" (after), "2010年以前" (before), "2020年起" / "2020年以来" (since).
            let (relation, words) = match (word(at), word(at + 1)) {
                (Some("以" | "之"), Some("后")) => ("after", 2),
                (Some("以" | "之"), Some("前")) => ("before", 2),
                (Some("以"), Some("来")) => ("since", 2),
                (Some("起"), _) => ("since", 1),
                _ => ("in", 0),
            };
            found = Some((i, at + words - i, span(period, relation)));
            break;
        }
        // "from the year 2010", "after March 2024": the words before the year.
        let mut start = i;
        let mut period = ((y, 1), (y + 1, 1));
        if let Some(m) = start.checked_sub(1).and_then(word).and_then(month_named) {
            start -= 1;
            period = ((y, m), next_month((y, m)));
        } else if start >= 1 && word(start - 1) == Some("year") {
            start -= 1;
            if start >= 1 && word(start - 1) == Some("the") {
                start -= 1;
            }
        }
        let relation = match start.checked_sub(1).and_then(word) {
            Some("in" | "during" | "from") => "in",
            Some(r @ ("after" | "before" | "since")) => r,
            _ => continue,
        };
        found = Some((start - 1, i + 1 - (start - 1), span(period, relation)));
        break;
    }
    let Some((start, len, range)) = found else {
        return Some(None);
    };
    let dates: Vec<&ColumnInfo> = table.columns.iter().filter(|c| is_date_column(c)).collect();
    let mut scratch = q.clone();
    scratch.consume(start, len);
    let column = match named_columns(&scratch, &dates).as_slice() {
        [(c, spans)] => {
            scratch.consume_all(spans);
            *c
        }
        [] => match date_verb(&scratch, &dates) {
            Some((c, at)) => {
                scratch.consume(at, 1);
                c
            }
            None => match dates.as_slice() {
                [only] => *only,
                _ => return None,
            },
        },
        _ => return None,
    };
    *q = scratch;
    Some(Some(YearFilter { column, range }))
}

/// The date column a verb of the question names by its event, and the verb's position:
/// "hired" names `HiredOn`, "started" `StartDate`, "shipped" `ShippedDate` (入职 arrives as
/// "hired"); "born" names a birth date. `None` unless exactly one column is named so.
fn date_verb<'t>(q: &Question, dates: &[&'t ColumnInfo]) -> Option<(&'t ColumnInfo, usize)> {
    let event = |c: &ColumnInfo| -> Option<String> {
        let words = ident_words(&c.name);
        let (last, rest) = words.split_last()?;
        matches!(last.as_str(), "date" | "time" | "at" | "on" | "day")
            .then(|| rest.concat())
            .filter(|e| !e.is_empty())
    };
    let mut hits = Vec::new();
    for (i, t) in q.toks.iter().enumerate() {
        if t.used || t.cjk {
            continue;
        }
        let w = t.norm.as_str();
        let mut stems: Vec<String> = Vec::new();
        if w == "born" {
            stems.push("birth".into());
        }
        // Joining a company is being hired: "staff who joined in 2023" (入职 arrives as
        // "hired").
        if w == "joined" {
            stems.push("hire".into());
        }
        if let Some(stem) = w.strip_suffix("ed") {
            stems.push(stem.to_owned());
            // "shipped" → "ship", "hired" → "hire".
            let b = stem.as_bytes();
            if b.len() >= 2 && b[b.len() - 1] == b[b.len() - 2] {
                stems.push(stem[..stem.len() - 1].to_owned());
            }
            stems.push(format!("{stem}e"));
        }
        for c in dates {
            if event(c).is_some_and(|e| stems.contains(&e)) {
                hits.push((*c, i));
            }
        }
    }
    match hits.as_slice() {
        [hit] => Some(*hit),
        _ => None,
    }
}

/// The `columns` the question names by all their words; when it names none so, the one whose
/// last word it says ("price" for `ItemPrice`, "date" for `SaleDate`), if only one has it.
fn named_columns<'t>(q: &Question, columns: &[&'t ColumnInfo]) -> Vec<(&'t ColumnInfo, Spans)> {
    let whole: Vec<(&ColumnInfo, Spans)> = columns
        .iter()
        .filter_map(|c| q.find_all(&ident_parts(&c.name)).map(|s| (*c, s)))
        .collect();
    if !whole.is_empty() {
        return whole;
    }
    let by_last: Vec<(&ColumnInfo, Spans)> = columns
        .iter()
        .filter_map(|c| {
            let last = ident_parts(&c.name).pop()?;
            q.find(&last).map(|i| (*c, vec![(i, last.len())]))
        })
        .collect();
    if by_last.len() == 1 {
        by_last
    } else {
        Vec::new()
    }
}

/// The numeric columns (ids aside) a ranking or comparison of `measure` can be about: all of
/// them, those whose name states a time unit (`DurationMs`), or those that hold prices and
/// amounts (`ItemPrice`, `Total`, `Budget`).
fn measure_columns(table: &TableInfo, measure: Measure) -> Vec<&ColumnInfo> {
    table
        .columns
        .iter()
        .filter(|c| c.is_numeric() && !is_id_like(c))
        .filter(|c| match measure {
            Measure::Any => true,
            Measure::Duration => TimeUnit::of_column(&c.name).is_some(),
            Measure::Money => is_money_column(c),
        })
        .collect()
}

/// Whether a column's name says it holds money.
fn is_money_column(c: &ColumnInfo) -> bool {
    let measure = &words().measure;
    ident_words(&c.name)
        .iter()
        .any(|w| listed(&measure.takings_column, w) || listed(&measure.paid_column, w))
}

/// Whether `c` holds money taken in: a money column named total, amount, revenue or sales, not
/// a price, cost, budget, fee, salary or spend.
fn is_takings_column(c: &ColumnInfo) -> bool {
    let measure = &words().measure;
    let name = ident_words(&c.name);
    name.iter().any(|w| listed(&measure.takings_column, w))
        && !name.iter().any(|w| listed(&measure.paid_column, w))
}

/// The columns of takings of `table` ([`is_takings_column`]), ids aside.
fn takings_columns(table: &TableInfo) -> Vec<&ColumnInfo> {
    table
        .columns
        .iter()
        .filter(|c| c.is_numeric() && !is_id_like(c) && is_takings_column(c))
        .collect()
}

/// Consumes the words of a duration or of money (`[measure]` of the word file) once `column`
/// of `table` is chosen, but not a word that names another of its columns ("sales" beside a
/// `Sales Rep` column is that column's, "amount" beside an `Amount due` one).
fn consume_measure_words(
    q: &mut Question,
    measure: Measure,
    table: &TableInfo,
    column: &ColumnInfo,
) {
    let measure_words = &words().measure;
    let said_words = match measure {
        Measure::Any => return,
        Measure::Duration => &measure_words.duration,
        Measure::Money => &measure_words.money,
    };
    let others: Vec<String> = table
        .columns
        .iter()
        .filter(|c| c.name != column.name)
        .flat_map(|c| ident_parts(&c.name).concat())
        .collect();
    let takings = measure == Measure::Money && is_takings_column(column);
    for t in &mut q.toks {
        let said =
            listed(said_words, &t.norm) || (takings && listed(&measure_words.sales, &t.norm));
        if !t.used && !t.cjk && said && !others.contains(&t.norm) {
            t.used = true;
        }
    }
}

/// The column rows are ranked by for a superlative of `measure` ("the longest chapter", "the
/// project with the highest budget"): the one of its columns the question names, or the only
/// one (when `allow_only`); `None` when unclear.
fn ranked_column<'t>(
    q: &mut Question,
    table: &'t TableInfo,
    measure: Measure,
    allow_only: bool,
) -> Option<&'t ColumnInfo> {
    let pool = measure_columns(table, measure);
    match named_columns(q, &pool).as_slice() {
        [(c, spans)] => {
            q.consume_all(spans);
            consume_measure_words(q, measure, table, c);
            Some(*c)
        }
        [] if allow_only && pool.len() == 1 => {
            consume_measure_words(q, measure, table, pool[0]);
            Some(pool[0])
        }
        _ => None,
    }
}

/// The number written at token `i` ("100000", "0.99", "100,000"), with a following multiplier
/// ("10 万", "5 k", "2 million"), as SQL writes it, and how many tokens it takes.
fn number_at(q: &Question, i: usize) -> Option<(String, usize)> {
    let t = q.toks.get(i).filter(|t| !t.used && !t.cjk)?;
    let digits = t.norm.replace(',', "");
    if !digits.chars().next().is_some_and(|c| c.is_ascii_digit()) {
        return None;
    }
    let n: f64 = digits.parse().ok()?;
    let scale = q.toks.get(i + 1).filter(|t| !t.used).and_then(|t| {
        Some(match t.norm.as_str() {
            "万" => 1e4,
            "亿" => 1e8,
            "千" => 1e3,
            "k" | "thousand" => 1e3,
            "million" | "m" => 1e6,
            "billion" => 1e9,
            _ => return None,
        })
    });
    Some((sql_number(n, scale)?, 1 + usize::from(scale.is_some())))
}

/// `n` times `scale` as SQL writes it: "0.07 万" is 700, not 700.0000000000001.
fn sql_number(n: f64, scale: Option<f64>) -> Option<String> {
    let mut value = n;
    if let Some(scale) = scale {
        value = (n * scale * 1e6).round() / 1e6;
    }
    if !value.is_finite() {
        return None;
    }
    Some(if value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{value:.0}")
    } else {
        value.to_string()
    })
}

/// Where the question names a yes/no column: all of its words of three letters or more (any
/// CJK word), with its short words ("on", "is") where they occur too.
fn flag_mention(q: &Question, c: &ColumnInfo) -> Option<Spans> {
    let parts = ident_parts(&c.name);
    let (content, short): (Vec<Vec<String>>, Vec<Vec<String>>) = parts.into_iter().partition(|p| {
        p.len() > 1
            || p.iter()
                .any(|w| w.chars().count() >= 3 || w.chars().any(is_cjk))
    });
    let mut spans = q.find_all(&content)?;
    let mut scratch = q.clone();
    scratch.consume_all(&spans);
    for p in &short {
        if let Some(i) = scratch.find(p) {
            scratch.consume(i, p.len());
            spans.push((i, p.len()));
        }
    }
    Some(spans)
}

/// A table's columns of people's or things' names ("Name", "GivenName" and "FamilyName"), in
/// table order.
fn name_columns(table: &TableInfo) -> Vec<&ColumnInfo> {
    table
        .columns
        .iter()
        .filter(|c| {
            c.is_text()
                && ident_words(&c.name)
                    .iter()
                    .any(|w| matches!(w.as_str(), "name" | "姓名" | "名字"))
        })
        .collect()
}

/// Consumes the words that name `c`, the column a value was found in: its name ("owner
/// 张伟"), or the verb a one-word name of a doer comes from, with "by" after it ("owned by
/// Sam Hill", "does Grace Lee own", "张伟负责的" — 负责 arrives as "own").
fn consume_column_mention(q: &mut Question, c: &ColumnInfo) {
    if let Some(spans) = q.find_all(&ident_parts(&c.name)) {
        q.consume_all(&spans);
        return;
    }
    consume_doer_verb(q, c);
}

/// Where the question says the verb `c`'s one-word name of a doer comes from ("owns", "owned"
/// for `Owner`; "managed" for `Manager`): the token's position.
fn doer_verb_at(q: &Question, c: &ColumnInfo) -> Option<usize> {
    let words = ident_parts(&c.name).concat();
    let [word] = words.as_slice() else {
        return None;
    };
    let stem = word
        .strip_suffix("er")
        .or_else(|| word.strip_suffix("or"))?;
    // "user" gives no verb to look for.
    if stem.chars().count() < 3 {
        return None;
    }
    let verb = |w: &str| {
        w.strip_prefix(stem)
            .is_some_and(|end| ["", "e", "s", "es", "ed", "d", "ing"].contains(&end))
    };
    q.toks
        .iter()
        .position(|t| !t.used && !t.cjk && verb(&t.norm))
}

/// Consumes the verb of `c` ([`doer_verb_at`]) and a "by" after it; whether there was one.
fn consume_doer_verb(q: &mut Question, c: &ColumnInfo) -> bool {
    let Some(i) = doer_verb_at(q, c) else {
        return false;
    };
    let by = q.toks.get(i + 1).is_some_and(|t| !t.used && t.norm == "by");
    q.consume(i, 1 + usize::from(by));
    true
}

/// The numeric column to sum or average: the one named (most words winning, ties unsure), else
/// the table's only numeric non-id column.
fn pick_measure<'t>(q: &mut Question, table: &'t TableInfo) -> Option<&'t ColumnInfo> {
    let column = named_measure(q, table)?;
    // "the average amount of an sale" over `Total`: the words that say it is money.
    if is_money_column(column) {
        consume_measure_words(q, Measure::Money, table, column);
    }
    Some(column)
}

/// The numeric column a figure is of: the one the question names, else the one its words
/// for durations or money point to, else the table's only one.
fn named_measure<'t>(q: &mut Question, table: &'t TableInfo) -> Option<&'t ColumnInfo> {
    let numeric = measure_columns(table, Measure::Any);
    let mut named: Vec<(usize, &ColumnInfo, Spans)> = numeric
        .iter()
        .filter_map(|c| {
            let parts = ident_parts(&c.name);
            let score = parts.iter().map(Vec::len).sum();
            q.find_all(&parts).map(|spans| (score, *c, spans))
        })
        .collect();
    named.sort_by_key(|(score, _, _)| std::cmp::Reverse(*score));
    match named.as_slice() {
        [(s1, _, _), (s2, _, _), ..] if s1 == s2 => None,
        [(_, c, spans), ..] => {
            let spans = spans.clone();
            q.consume_all(&spans);
            Some(*c)
        }
        [] => {
            // "the maximum price": the one column whose last word is named; "the average chapter
            // length": the one duration column; "the average amount": the one of money.
            if let [(c, spans)] = named_columns(q, &numeric).as_slice() {
                q.consume_all(spans);
                consume_repeats(q, c);
                return Some(*c);
            }
            if q.says_any(&words().measure.duration) {
                return ranked_column(q, table, Measure::Duration, true);
            }
            // "the total sales": the one column of takings.
            if q.says_any(&words().measure.sales) {
                let [c] = takings_columns(table)[..] else {
                    return None;
                };
                consume_measure_words(q, Measure::Money, table, c);
                return Some(c);
            }
            if q.says_any(&words().measure.money) {
                return ranked_column(q, table, Measure::Money, true);
            }
            match numeric.as_slice() {
                [only] => Some(*only),
                _ => None,
            }
        }
    }
}

/// Consumes the words of `c`'s name said again ("the price range … unit price").
fn consume_repeats(q: &mut Question, c: &ColumnInfo) {
    let words = ident_parts(&c.name).concat();
    for t in &mut q.toks {
        if !t.used && words.contains(&t.norm) {
            t.used = true;
        }
    }
}

/// What figures of `col` are divided by to be in the unit of time the question asks for, its
/// words consumed: "the average chapter length in minutes" over `DurationMs` is 60000,
/// "平均时长是多少分钟" the same. `None` when no unit is asked for, `col` states none, or they
/// are the same.
fn asked_unit(q: &mut Question, col: &ColumnInfo) -> Option<f64> {
    let stored = TimeUnit::of_column(&col.name)?;
    let (at, unit, len) = (0..q.toks.len()).find_map(|i| match suffix_at(q, i) {
        Some((Suffix::Time(unit), len)) => Some((i, unit, len)),
        _ => None,
    })?;
    let start = if at > 0 && !q.toks[at - 1].used && q.toks[at - 1].norm == "in" {
        at - 1
    } else {
        at
    };
    q.consume(start, at + len - start);
    let ratio = unit.millis() / stored.millis();
    ((ratio - 1.0).abs() >= f64::EPSILON).then_some(ratio)
}

/// `figure` divided into the unit asked for ([`asked_unit`]).
fn in_unit(figure: &str, divisor: Option<f64>) -> String {
    match divisor {
        Some(d) => format!("CAST({figure} AS REAL) / {d:?}"),
        None => figure.to_owned(),
    }
}

/// Columns whose every name word occurs, in table order (each consumed).
fn mentioned_columns<'t>(q: &mut Question, table: &'t TableInfo) -> Vec<&'t ColumnInfo> {
    let mut out = Vec::new();
    for c in &table.columns {
        if let Some(spans) = q.find_all(&ident_parts(&c.name)) {
            q.consume_all(&spans);
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_as_sql_writes_them() {
        for (n, scale, want) in [
            (100000.0, None, Some("100000")),
            (0.99, None, Some("0.99")),
            (0.07, Some(1e4), Some("700")),
            (0.007, Some(1e4), Some("70")),
            (2.5, Some(1e6), Some("2500000")),
            (1.25, Some(1e3), Some("1250")),
            (f64::MAX, Some(1e8), None),
        ] {
            assert_eq!(sql_number(n, scale).as_deref(), want, "{n} × {scale:?}");
        }
    }

    #[test]
    fn plural_folding() {
        for (w, want) in [
            ("customers", "customer"),
            ("companies", "company"),
            ("addresses", "address"),
            ("boxes", "box"),
            ("status", "status"),
            ("albums", "album"),
            ("invoices", "invoice"),
            ("bus", "bus"),
            ("客户", "客户"),
        ] {
            assert_eq!(singular(w), want, "{w}");
        }
    }

    #[test]
    fn identifier_words() {
        for (name, want) in [
            ("InvoiceLine", &["invoice", "line"][..]),
            ("order_items", &["order", "items"]),
            ("UnitPrice", &["unit", "price"]),
            ("doc12_sheet1", &[]),
            ("sheet_销售", &["销售"]),
            ("销售额2024", &["销售额"]),
            ("CustomerId", &["customer", "id"]),
        ] {
            assert_eq!(ident_words(name), want, "{name}");
        }
    }

    #[test]
    fn quoted_values() {
        for (text, rest_has, want) in [
            ("customers from 'Brazil'", "customers from", &["Brazil"][..]),
            ("the customer's orders", "customer's", &[]),
            ("artist “AC/DC”", "artist", &["AC/DC"]),
            ("艺术家「巴西」", "艺术家", &["巴西"]),
        ] {
            let (rest, quoted) = extract_quoted(text);
            assert!(rest.contains(rest_has), "{text}: {rest}");
            assert_eq!(quoted, want, "{text}");
        }
    }
}
