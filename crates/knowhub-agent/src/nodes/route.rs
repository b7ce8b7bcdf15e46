//! RouteNode: DOC, SQL, HYBRID, CLARIFY or REFUSE. The LLM classifies when one is configured;
//! the seed's keyword rules decide otherwise, and whenever the LLM's answer is unusable.
//! Without any data to query, SQL becomes DOC (and HYBRID too).

use std::collections::HashSet;

use knowhub_llm::{ChatRequest, Llm, Message};
use serde_json::json;

use super::{Deps, StepReport, clip};
use crate::state::{AgentState, Route};
use crate::text::terms;
use crate::words::words;
use crate::{AgentError, Result};

/// Whether `q` asks KnowHub to change data: a SQL statement that is not a query, or a request
/// (not a question) whose first verb changes data: `request_openings`, `change_verbs` and
/// `question_words` in `data/words.toml`.
fn asks_to_change_data(q: &str) -> bool {
    if knowhub_sql::changes_data(q) {
        return true;
    }
    let words = words();
    let lower = q.trim().to_lowercase();
    let mut rest = lower.as_str();
    while let Some(after) = words
        .request_openings
        .iter()
        .find_map(|o| rest.strip_prefix(o.as_str()).map(str::trim_start))
    {
        rest = after;
    }
    let opens_with_change = words.change_verbs.iter().any(|v| {
        rest.strip_prefix(v.as_str()).is_some_and(|after| {
            // A whole English word ("updates" or "updated" is no imperative); Chinese needs
            // no boundary.
            !v.is_ascii() || after.chars().next().is_none_or(|c| !c.is_alphanumeric())
        })
    });
    let said: Vec<&str> = rest
        .split(|c: char| !c.is_alphanumeric() && c != '\'')
        .filter(|w| !w.is_empty())
        .collect();
    let questioned = words.question_words.iter().any(|w| {
        if w.is_ascii() {
            if w.contains(' ') {
                rest.contains(w.as_str())
            } else {
                said.contains(&w.as_str())
            }
        } else {
            rest.contains(w.as_str())
        }
    });
    opens_with_change && !questioned
}

/// The keyword rules alone (also the fallback when the LLM's answer is unusable): the
/// routing keywords of `data/words.toml` (seed 004 §4.3.3).
/// `data_terms` are the words of the queryable tables' names and columns: a counting question
/// about something no table mentions ("how many days of leave?") is a document question.
/// `understood_as_data`: the no-LLM template path can write SQL for the question, every word
/// of it a table, a column, a value or a question word ("谁还在试用期？" over a table with an
/// `On leave` column), so it is a data question even without a keyword.
pub fn route_by_rules(
    question: &str,
    data_terms: Option<&HashSet<String>>,
    understood_as_data: bool,
) -> (Route, &'static str) {
    let has_data = match data_terms {
        Some(words) => {
            let q = terms(question);
            understood_as_data || words.is_empty() || q.iter().any(|t| words.contains(t))
        }
        None => false,
    };
    let q = question.to_lowercase();
    if asks_to_change_data(question)
        || words()
            .refuse_phrases
            .iter()
            .any(|w| q.contains(w.as_str()))
    {
        return (Route::Refuse, "out_of_scope");
    }
    let meaningful = q.chars().filter(|c| c.is_alphanumeric()).count();
    if meaningful < 3 {
        return (Route::Clarify, "too_vague");
    }
    let sql = understood_as_data || words().sql_words.iter().any(|w| q.contains(w.as_str()));
    let doc = words().doc_words.iter().any(|w| q.contains(w.as_str()));
    match (sql && has_data, doc) {
        (true, true) => (Route::Hybrid, "data_and_documents"),
        (true, false) => (Route::Sql, "query_data"),
        // Documents are where most answers are; asking back is for the truly unclear.
        _ => (Route::Doc, "ask_documents"),
    }
}

/// Worked examples for the routing prompt, on a made-up shop (no table or document of any
/// evaluation set): a small model answers one word far more reliably after seeing the task
/// done than from a description alone.
const ROUTE_EXAMPLES: &[(&str, &str, &str)] = &[
    (
        "Orders, Products, Staff",
        "Show me the products that cost more than 20 dollars.",
        "SQL",
    ),
    (
        "Orders, Products, Staff",
        "What does the travel policy say about hotel costs?",
        "DOC",
    ),
    (
        "Orders, Products, Staff",
        "Which staff member handled the most orders?",
        "SQL",
    ),
    ("Orders, Products, Staff", "报销流程需要哪些审批？", "DOC"),
    ("Orders, Products, Staff", "列出上海仓库的所有产品", "SQL"),
    (
        "Orders, Products, Staff",
        "Explain the return policy and count the returned orders.",
        "HYBRID",
    ),
    (
        "Orders, Products, Staff",
        "Who founded the company and when?",
        "DOC",
    ),
    (
        "Orders, Products, Staff",
        "Delete every order from 2020.",
        "REFUSE",
    ),
    ("Orders, Products, Staff", "asdf", "CLARIFY"),
];

/// The routing prompt: one word back (DOC, SQL, HYBRID, CLARIFY, REFUSE), after worked
/// examples given as earlier turns.
fn llm_route_messages(q: &str, tables: &[String]) -> Vec<Message> {
    let system = "You route questions for a company knowledge assistant. Reply with exactly \
        one word: SQL when the answer is rows or numbers from the data tables (show, list, \
        find, count, sum, rank or filter records), DOC when it is in documents (policies, \
        manuals, how-to, facts and explanations in text), HYBRID when it needs both, CLARIFY \
        when the question is too vague to act on, REFUSE when it asks to change data, for \
        other people's passwords or keys, or to bypass permissions.";
    let turn = |tables: &str, q: &str| format!("Data tables: {tables}\nQuestion: {q}\nRoute:");
    let mut messages = vec![Message::system(system)];
    for (tables, question, route) in ROUTE_EXAMPLES {
        messages.push(Message::user(turn(tables, question)));
        messages.push(Message::assistant(*route));
    }
    let tables = if tables.is_empty() {
        "(none)".to_string()
    } else {
        tables.join(", ")
    };
    messages.push(Message::user(turn(&tables, q)));
    messages
}

/// How RouteNode routes `q` with `llm` (for evaluation): the LLM's own choice (`None` when
/// its answer was unusable or a refusal rule stood) and the final route after reconciling
/// it with the rules.
pub fn route_with_llm(
    llm: &dyn Llm,
    q: &str,
    tables: &[String],
    data_terms: Option<&HashSet<String>>,
    understood_as_data: bool,
) -> (Option<Route>, Route) {
    let (rules, _) = route_by_rules(q, data_terms, understood_as_data);
    if rules == Route::Refuse {
        return (None, rules);
    }
    let mut req = ChatRequest::new(llm_route_messages(q, tables));
    req.max_tokens = 4;
    let chosen = llm.complete(&req).ok().and_then(|r| parse_route(&r.text));
    match chosen {
        Some(r) => (Some(r), reconcile(rules, r).0),
        None => (None, rules),
    }
}

pub(crate) fn run(state: &mut AgentState, deps: &mut Deps<'_>) -> Result<StepReport> {
    let data = deps.kb.queryable_data().map_err(AgentError::Engine)?;
    let has_data = !data.tables.is_empty() || !data.sources.is_empty();
    let q = state.input.normalized_query.clone();
    let data_terms: HashSet<String> = data
        .tables
        .iter()
        .flat_map(|t| std::iter::once(t.sheet_name.clone()).chain(t.columns.iter().cloned()))
        .chain(data.sources.iter().map(|s| s.name.clone()))
        .flat_map(|w| terms(&w.replace(['_', '-'], " ")))
        .collect();
    // Registered databases are not introspected here: their presence alone counts.
    let data_terms = if !data.sources.is_empty() {
        Some(HashSet::new())
    } else {
        has_data.then_some(data_terms)
    };
    let (mut rule_route, mut rule_intent) = route_by_rules(&q, data_terms.as_ref(), false);
    // Without a keyword, a question the template path fully understands is still about the
    // data. Checked only where it can change the route: it reads every database's schema.
    let mut understood = false;
    if rule_route == Route::Doc && has_data && super::sql_tool::template_understands(deps, &q) {
        understood = true;
        (rule_route, rule_intent) = route_by_rules(&q, data_terms.as_ref(), true);
    }
    // The rules are sure when the question names nothing the data holds (documents), or the
    // template reads it whole (data); the model is asked only between those.
    let q_terms = terms(&q);
    let names_data = data_terms
        .as_ref()
        .is_some_and(|w| w.is_empty() || q_terms.iter().any(|t| w.contains(t)));
    // Words cannot tell across scripts: a Chinese question about tables named in English
    // shares none of their terms, and only the model can judge it. The rules are sure only
    // when most of the data's words are in the question's script.
    let asked_in_cjk = q.chars().any(crate::lang::is_cjk);
    let data_in_script = data_terms.as_ref().is_some_and(|w| {
        let same = w
            .iter()
            .filter(|t| t.chars().any(crate::lang::is_cjk) == asked_in_cjk)
            .count();
        same * 2 >= w.len()
    });
    let rules_sure = match rule_route {
        Route::Doc => !names_data && data_in_script,
        // A counting word and a word of the data: the data, unless the data's words are
        // unknown (registered databases are not read here).
        Route::Sql => understood || data_terms.as_ref().is_some_and(|w| !w.is_empty()),
        _ => true,
    };
    let mut route = rule_route;
    let mut intent = rule_intent.to_string();
    let mut by = "rules";
    let mut llm_answer = None;
    // The model is asked only where its answer can change the route (see `reconcile`): not
    // over a refusal, a clarification or both tools chosen by the rules, not where the rules
    // are sure, and not without data to query (every route is then DOC) — each call costs
    // seconds on a small local model.
    let model_can_matter = has_data && matches!(rule_route, Route::Doc | Route::Sql) && !rules_sure;
    if deps.llm.is_some() && model_can_matter {
        let tables: Vec<String> = data
            .tables
            .iter()
            .map(|t| t.sheet_name.clone())
            .chain(data.sources.iter().map(|s| s.name.clone()))
            .take(20)
            .collect();
        match deps.ask_llm(state, llm_route_messages(&q, &tables), 4, false) {
            Ok(text) => {
                llm_answer = Some(text.clone());
                if let Some(r) = parse_route(&text) {
                    let (reconciled, how) = reconcile(rule_route, r);
                    route = reconciled;
                    by = how;
                    intent = format!("llm:{}", r.as_str());
                }
            }
            Err(e) => tracing::warn!("routing by rules: the LLM failed: {e}"),
        }
    }
    if !has_data && matches!(route, Route::Sql | Route::Hybrid) {
        route = Route::Doc;
        intent.push_str("; no data to query");
    }
    state.plan.route = route;
    state.plan.intent = intent;
    state.plan.routed_by = by.into();
    Ok(StepReport::ok(
        "classify",
        json!({ "q": clip(&q, 200), "has_data": has_data }),
        json!({
            "route": route.as_str(),
            "by": by,
            "rules": rule_route.as_str(),
            "llm": llm_answer.map(|a| clip(&a, 40)),
        }),
    ))
}

/// The route when the LLM has answered. A small local model mistakes words for table columns
/// ("after probation" → a `probation` column) or data questions for document ones; when its
/// choice between documents and data contradicts the keyword rules, both tools run (HYBRID)
/// and the evidence decides — a wrong single route would leave the answer without its source.
///
/// The model widens, the rules guard: a question the rules found too vague stays a
/// clarification, one they sent to both tools keeps both, and the model's CLARIFY or REFUSE
/// (a small model says them of plain questions) never drops a tool the rules chose — refusals
/// of out-of-scope requests are the rules' (checked before the model is asked).
fn reconcile(rules: Route, llm: Route) -> (Route, &'static str) {
    match (rules, llm) {
        (Route::Clarify, _) | (Route::Hybrid, _) => (rules, "rules"),
        (Route::Doc, Route::Sql) | (Route::Sql, Route::Doc) => (Route::Hybrid, "llm+rules"),
        (Route::Doc | Route::Sql, Route::Clarify | Route::Refuse) => (rules, "rules"),
        (_, llm) => (llm, "llm"),
    }
}

fn parse_route(text: &str) -> Option<Route> {
    let upper = text.to_uppercase();
    let word = upper
        .split(|c: char| !c.is_ascii_alphabetic())
        .find(|w| !w.is_empty())?;
    Some(match word {
        "DOC" | "DOCS" | "DOCUMENT" | "DOCUMENTS" => Route::Doc,
        "SQL" | "DATA" => Route::Sql,
        "HYBRID" | "BOTH" => Route::Hybrid,
        "CLARIFY" => Route::Clarify,
        "REFUSE" => Route::Refuse,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_route_like_the_seed() {
        let data: HashSet<String> = ["customer", "employee", "客户", "country"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let table = [
            (
                "How many customers are from Brazil?",
                Some(&data),
                false,
                Route::Sql,
            ),
            ("上月新增了多少客户？", Some(&data), false, Route::Sql),
            ("上月新增了多少客户？", None, false, Route::Doc),
            (
                "How many days of annual leave do we get?",
                Some(&data),
                false,
                Route::Doc,
            ),
            (
                "What is the default rolling update strategy?",
                Some(&data),
                false,
                Route::Doc,
            ),
            ("部署规范里默认策略是什么", Some(&data), false, Route::Doc),
            (
                "Explain the policy and count how many employees it covers",
                Some(&data),
                false,
                Route::Hybrid,
            ),
            ("?", Some(&data), false, Route::Clarify),
            ("DELETE FROM customers", Some(&data), false, Route::Refuse),
            ("告诉我管理员密码", Some(&data), false, Route::Refuse),
            (
                "Delete every customer from 2020.",
                Some(&data),
                false,
                Route::Refuse,
            ),
            (
                "Please update the customers table",
                Some(&data),
                false,
                Route::Refuse,
            ),
            ("请删除所有客户数据", Some(&data), false, Route::Refuse),
            (
                "UPDATE customer SET country = 'x'",
                Some(&data),
                false,
                Route::Refuse,
            ),
            // Questions about changing things, and words that only look like requests, are
            // questions: documents answer them.
            (
                "Which field do I set for a staged rolling update?",
                Some(&data),
                false,
                Route::Doc,
            ),
            ("How do I remove a package?", Some(&data), false, Route::Doc),
            ("如何删除软件包？", Some(&data), false, Route::Doc),
            ("删除软件包的命令是什么？", Some(&data), false, Route::Doc),
            (
                "How do I generate an SSH key?",
                Some(&data),
                false,
                Route::Doc,
            ),
            ("如何生成 SSH 密钥？", Some(&data), false, Route::Doc),
            (
                "Can I bypass the proxy for local addresses?",
                Some(&data),
                false,
                Route::Doc,
            ),
            (
                "How do I truncate a log file safely?",
                Some(&data),
                false,
                Route::Doc,
            ),
            (
                "Updated packages: where are they listed?",
                Some(&data),
                false,
                Route::Doc,
            ),
            ("annual leave", Some(&data), false, Route::Doc),
            // Understood by the template path: a data question without a keyword; with a
            // document word, both; never without data.
            ("谁还在试用期？", Some(&data), true, Route::Sql),
            ("谁还在试用期？", Some(&data), false, Route::Doc),
            ("谁还在试用期？", None, true, Route::Doc),
            (
                "Who is on probation, and what does the policy say?",
                Some(&data),
                true,
                Route::Hybrid,
            ),
        ];
        for (q, data, understood, want) in table {
            assert_eq!(route_by_rules(q, data, understood).0, want, "{q}");
        }
    }

    #[test]
    fn the_llm_widens_and_the_rules_guard() {
        use Route::*;
        let table: &[(Route, Route, Route, &str)] = &[
            (Doc, Sql, Hybrid, "llm+rules"),
            (Sql, Doc, Hybrid, "llm+rules"),
            (Doc, Doc, Doc, "llm"),
            (Sql, Sql, Sql, "llm"),
            (Doc, Hybrid, Hybrid, "llm"),
            (Sql, Hybrid, Hybrid, "llm"),
            // Never narrowed, never dropped for the model's CLARIFY or REFUSE.
            (Hybrid, Doc, Hybrid, "rules"),
            (Hybrid, Sql, Hybrid, "rules"),
            (Hybrid, Refuse, Hybrid, "rules"),
            (Doc, Clarify, Doc, "rules"),
            (Doc, Refuse, Doc, "rules"),
            (Sql, Refuse, Sql, "rules"),
            // Too vague for the rules stays a question back.
            (Clarify, Doc, Clarify, "rules"),
            (Clarify, Sql, Clarify, "rules"),
        ];
        for (rules, llm, want, by) in table {
            assert_eq!(
                reconcile(*rules, *llm),
                (*want, *by),
                "rules {rules:?}, llm {llm:?}"
            );
        }
    }

    #[test]
    fn llm_answers_are_parsed_leniently() {
        assert_eq!(parse_route("SQL"), Some(Route::Sql));
        assert_eq!(parse_route(" doc."), Some(Route::Doc));
        assert_eq!(parse_route("Hybrid\n"), Some(Route::Hybrid));
        assert_eq!(parse_route("I think"), None);
    }
}
