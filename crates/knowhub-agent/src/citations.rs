//! After generation: every cited number must name an allowed evidence item, every sentence
//! that states something must cite one, and every figure and every copied name a cited
//! sentence states must stand in what it cites (or in the question). Sentences that fail are
//! cut (and listed in the trace).

use std::collections::{BTreeSet, HashSet};

use crate::lang::Lang;
use crate::text::{sentences, word_terms};
use crate::words::words;

/// The outcome of checking a generated answer against `n` evidence items.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Checked {
    /// The answer with failing sentences removed and invalid markers dropped.
    pub answer: String,
    /// 1-based evidence numbers cited by the kept sentences, in order of first use.
    pub cited: Vec<usize>,
    pub cut: Vec<String>,
    /// Whether what is left says anything in words: "[1]" or "2 [1]" alone is not an answer
    /// (a small model sometimes writes only a marker or a bare number).
    pub substantive: bool,
}

/// An evidence item as the writer was shown it, which the check holds the draft to.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Shown<'a> {
    /// The title it was listed under: a name copied from it is the item's own.
    pub title: &'a str,
    pub text: &'a str,
    /// For a query result, its rows without the statement `text` shows them with: the rows'
    /// figures need no words around them, and the statement's own numbers (its `LIMIT 50`, a
    /// filter's constant) are not results — "目前有 50 人在试用期 [1]" is not said by a query
    /// that returned COUNT(*)=3.
    pub data: Option<&'a str>,
}

/// Checks `answer` (with `[n]` markers) against document passages `evidence` (item `k` is
/// `evidence[k - 1]`) for `question`: [`check_items`] with untitled passages.
#[cfg(test)]
pub(crate) fn check(answer: &str, evidence: &[&str], question: &str) -> Checked {
    let items: Vec<Shown<'_>> = evidence
        .iter()
        .map(|text| Shown {
            title: "",
            text,
            data: None,
        })
        .collect();
    check_items(answer, &items, question)
}

/// Checks `answer` (with `[n]` markers) against `items` (item `k` is `items[k - 1]`, as the
/// writer was shown it) for `question`.
pub(crate) fn check_items(answer: &str, items: &[Shown<'_>], question: &str) -> Checked {
    let n = items.len();
    let mut out = Checked::default();
    let mut kept = Vec::new();
    let mut seen = BTreeSet::new();
    let mut said = BTreeSet::new();
    // Read once: each sentence checks its figures against the items it cites, a query
    // result's as a whole, a passage's sentence by sentence.
    let question_figures = figures(question);
    let result_figures: Vec<Vec<Figure>> = items
        .iter()
        .map(|item| item.data.map(figures).unwrap_or_default())
        .collect();
    let passages: Vec<Vec<Passage>> = items
        .iter()
        .map(|item| {
            if item.data.is_some() {
                Vec::new()
            } else {
                sentences(item.text)
                    .iter()
                    .map(|s| Passage::of(s))
                    .collect()
            }
        })
        .collect();
    let title_subjects: Vec<HashSet<String>> =
        items.iter().map(|item| subject_words(item.title)).collect();
    // What a claim's figure is said of is read from the words it shares with the question,
    // among those the writer was shown: a word no item uses ("vacation" asked, "annual leave"
    // written) cannot tell which sentence a figure is from.
    let shown_words: HashSet<&String> = passages
        .iter()
        .flatten()
        .flat_map(|p| &p.subject)
        .chain(title_subjects.iter().flatten())
        .collect();
    let question_subject: HashSet<String> = subject_words(question)
        .into_iter()
        .filter(|w| shown_words.contains(w))
        .collect();
    // A figure is taken from a sentence about what was asked, not from its neighbour: of the
    // shown sentences that state figures, the source of a claim's figure must hold as much of
    // one asked question's subject (with its item's title) as any other does. "Memory limit:
    // 512Mi" is in the row of another component than the one asked about, whose own row holds
    // the component's name too.
    let asked_subjects: Vec<HashSet<String>> = crate::text::questions(question)
        .iter()
        .map(|part| {
            subject_words(part)
                .into_iter()
                .filter(|w| shown_words.contains(w))
                .collect()
        })
        .collect();
    let held = |p: &Passage, k: usize, subject: &HashSet<String>| {
        subject
            .iter()
            .filter(|w| p.subject.contains(*w) || title_subjects[k].contains(*w))
            .count()
    };
    // Per asked question and script: a sentence in the other language than the question holds
    // none of its words, and is compared only with sentences in its own.
    let most_held = |subject: &HashSet<String>, cjk: bool| {
        passages
            .iter()
            .enumerate()
            .flat_map(|(k, ps)| {
                ps.iter()
                    .filter(|p| !p.figures.is_empty() && p.cjk == cjk)
                    .map(move |p| (k, p))
            })
            .map(|(k, p)| held(p, k, subject))
            .max()
            .unwrap_or(0)
    };
    let most_held: Vec<[usize; 2]> = asked_subjects
        .iter()
        .map(|subject| [most_held(subject, false), most_held(subject, true)])
        .collect();
    let about_what_was_asked = |p: &Passage, k: usize| {
        asked_subjects
            .iter()
            .zip(&most_held)
            .any(|(subject, most)| held(p, k, subject) >= most[usize::from(p.cjk)])
    };
    let question_lower = question.to_lowercase();
    let evidence_lower: Vec<String> = items
        .iter()
        .map(|item| format!("{}\n{}", item.title, item.text).to_lowercase())
        .collect();
    let quotable: Vec<BTreeSet<String>> = items
        .iter()
        .map(|item| {
            sentences(item.data.unwrap_or(item.text))
                .iter()
                .flat_map(|s| [Some(s.as_str()), after_aside(s)])
                .flatten()
                .map(quote_key)
                .filter(|key| !key.is_empty())
                .collect()
        })
        .collect();
    // Whether the items `numbers` hold what `text` states: the values it lists from query
    // results, its figures (said of the same thing), and the names it can only have copied.
    // The content words of each item (title, text, rows; see [`subject_words`]), and its
    // script: what a claim citing it must mostly be made of.
    let item_words: Vec<(HashSet<String>, bool)> = items
        .iter()
        .map(|item| {
            let text = format!("{}\n{}\n{}", item.title, item.text, item.data.unwrap_or(""));
            (
                subject_words(&text),
                Lang::detect(item.data.unwrap_or(item.text)) == Lang::Zh,
            )
        })
        .collect();
    // Whether the items `numbers` use more than [`SUPPORT_SHARE`] of the content words of
    // `text`: a claim is about what it cites. "There is a company shuttle bus [1]" citing a
    // passage that names no bus is not, nor "公司有健身房" citing the office hours. A sentence
    // that introduces what follows (it ends with a colon) is not held to it, and items in the
    // other script than the claim cannot be read so.
    let uses_its_words = |text: &str, numbers: &[usize]| -> bool {
        let trimmed = text.trim_end();
        if trimmed.ends_with(':') || trimmed.ends_with('：') {
            return true;
        }
        let words: HashSet<String> = subject_words(text)
            .into_iter()
            .filter(|w| !w.chars().any(|c| c.is_ascii_digit()))
            .collect();
        let cjk = Lang::detect(text) == Lang::Zh;
        if words.is_empty() || numbers.iter().any(|&k| item_words[k - 1].1 != cjk) {
            return true;
        }
        let used = words
            .iter()
            .filter(|w| numbers.iter().any(|&k| item_words[k - 1].0.contains(*w)))
            .count();
        used as f32 > SUPPORT_SHARE * words.len() as f32
    };
    let holds = |text: &str, numbers: &[usize]| -> bool {
        // A claim without figures says only words: they must be its items' (a claim with
        // figures is held to them below, and may word the rest its own way).
        if !numbers.is_empty() && figures(text).is_empty() && !uses_its_words(text, numbers) {
            return false;
        }
        // The values a sentence lists from query results are the rows' own: "遥测数据接入,
        // 安全急停固件, 检电充电协议, 客户门户 [1]" misspells a project the rows name.
        if numbers.iter().all(|&k| items[k - 1].data.is_some()) {
            let rows: String = numbers
                .iter()
                .filter_map(|&k| items[k - 1].data)
                .collect::<Vec<_>>()
                .join("\n")
                .to_lowercase();
            if !listed_values(text)
                .iter()
                .all(|v| rows.contains(v.as_str()))
            {
                return false;
            }
        }
        // A figure the cited items do not hold is the model's own ("2 days" where the
        // evidence says 10, a citation to the wrong item), and one a passage holds must be said
        // of the same thing there: "这些环境中有 3 个正在使用 [1]" citing "3 个工作日内提交复盘
        // 草稿" borrows a figure, not a fact. Either way the sentence goes.
        let stated = figures(text);
        if !stated.is_empty() {
            let own = Passage::of(text);
            let subject: HashSet<String> = own
                .subject
                .intersection(&question_subject)
                .cloned()
                .collect();
            let beside = if own.cjk {
                Vec::new()
            } else {
                words_beside_figures(text)
            };
            // What the cited passages say, word by word: a claim's word they never use
            // ("lasts" for "is") cannot tell which of their sentences it speaks of.
            let vocabulary: HashSet<&String> = numbers
                .iter()
                .flat_map(|&k| passages[k - 1].iter().flat_map(|p| &p.words))
                .collect();
            let said_of = |f: &Figure| {
                // "…acknowledged within 2 hours" needs a sentence that says 2 hours of
                // acknowledging, not one that escalates after 2 hours: the nearest word on
                // each side of the figure that the passages use must stand beside it there.
                let near: Vec<&HashSet<String>> = beside
                    .iter()
                    .filter(|b| b.figure.stands_in(std::slice::from_ref(f)))
                    .flat_map(|b| {
                        let used =
                            |terms: &&HashSet<String>| terms.iter().any(|t| vocabulary.contains(t));
                        [b.before.iter().find(used), b.after.iter().find(used)]
                    })
                    .flatten()
                    .collect();
                let beside_it = |p: &Passage| {
                    near.iter()
                        .all(|terms| terms.iter().any(|t| p.words.contains(t)))
                };
                f.stands_in(&question_figures)
                    || numbers.iter().any(|&k| {
                        (items[k - 1].data.is_some() && f.stands_in(&result_figures[k - 1]))
                            || passages[k - 1].iter().any(|p| {
                                f.stands_in(&p.figures)
                                    && own.speaks_of(p)
                                    && beside_it(p)
                                    && own.holds_subject(p, &subject, &title_subjects[k - 1])
                                    && about_what_was_asked(p, k - 1)
                            })
                    })
            };
            if !stated.iter().all(said_of) {
                return false;
            }
        }
        // Likewise a name the sentence can only have copied ("dev、staging 和 prod [1]" citing
        // an on-call procedure that names no environment): the claim is not in what it cites.
        let copied = names(text);
        if !copied.is_empty() {
            let mut cited = question_lower.clone();
            for k in numbers {
                cited.push('\n');
                cited.push_str(&evidence_lower[k - 1]);
                if items[k - 1].data.is_some() {
                    // "根据 SQL 查询结果[1]，…" names what a query result is.
                    cited.push_str(" sql");
                }
            }
            // "10ms" stands in "10 ms".
            let squeezed: String = cited.chars().filter(|c| !c.is_whitespace()).collect();
            if !copied
                .iter()
                .all(|name| cited.contains(name.as_str()) || squeezed.contains(name.as_str()))
            {
                return false;
            }
        }
        true
    };
    // The words of each query result, as a claim's words are matched with it.
    let result_words: Vec<HashSet<String>> = items
        .iter()
        .map(|item| item.data.map(crate::text::prose_terms).unwrap_or_default())
        .collect();
    // The item a claim belongs to when its own markers do not hold it: one with a sentence (or
    // a query result) that uses every word of the claim but [`ATTRIBUTION_SLACK`] and holds
    // what it states. A reworded claim is no one's: it is cut, as an uncited claim always was.
    let attribute = |text: &str, not: &[usize]| -> Option<usize> {
        let words: HashSet<String> = crate::text::prose_terms(text)
            .into_iter()
            .filter(|w| !w.chars().all(|c| c.is_ascii_digit()))
            .collect();
        if words.is_empty() {
            return None;
        }
        let slack = if words.len() >= 6 {
            ATTRIBUTION_SLACK
        } else {
            0
        };
        let said_in =
            |have: &HashSet<String>| words.iter().filter(|w| !have.contains(*w)).count() <= slack;
        (1..=n)
            .filter(|k| !not.contains(k))
            .filter(|&k| {
                said_in(&result_words[k - 1]) || passages[k - 1].iter().any(|p| said_in(&p.words))
            })
            .find(|&k| holds(text, &[k]))
    };
    for drafted in attach_trailing_markers(answer, n) {
        let Drafted {
            original: sentence,
            mut clean,
            cited: mut numbers,
            line_end,
        } = drafted;
        let claim = states_something(&clean);
        if claim {
            // A whole sentence of an item, copied word for word, says only what the item says:
            // it is that item's, whatever it cites (small models copy the line that answers and
            // forget the marker, or cite its neighbour). A part of a sentence is not ("Memory
            // limit: 1Gi" is a cell of another service's row), nor is anything reworded.
            let key = quote_key(&unmarked(&clean));
            let quotes = |k: &usize| quotable[k - 1].contains(&key);
            if !numbers.iter().any(quotes)
                && let Some(k) = quotable.iter().position(|q| q.contains(&key))
            {
                clean = unmarked(&clean).replace(" .", ".").trim().to_string();
                append_markers(&mut clean, &format!("[{}]", k + 1));
                numbers = vec![k + 1];
            }
        }
        // What the sentence says, without its markers: every rule below reads it.
        let text = unmarked(&clean);
        if is_sql(&text) || restates(&text, question) || leaves_a_gap(&text) {
            out.cut.push(sentence.clone());
            continue;
        }
        let supported = if claim {
            !numbers.is_empty() && holds(&text, &numbers)
        } else {
            holds(&text, &numbers)
        };
        if !supported {
            // Attribution: a claim cited wrongly, or not at all, belongs to the item that
            // says it, when one does; it is cut only when none does.
            match claim.then(|| attribute(&text, &numbers)).flatten() {
                Some(k) => {
                    clean = unmarked(&clean).replace(" .", ".").trim().to_string();
                    append_markers(&mut clean, &format!("[{k}]"));
                    numbers = vec![k];
                }
                None => {
                    out.cut.push(sentence.clone());
                    continue;
                }
            }
        }
        // A sentence repeated verbatim (small models loop over their evidence) is said once.
        let words: String = text.split_whitespace().collect();
        if !words.is_empty() && !said.insert(words) {
            continue;
        }
        kept.push(Kept {
            clean,
            line_end,
            cited: numbers,
        });
    }
    for k in kept.iter().flat_map(|k| &k.cited) {
        if seen.insert(*k) {
            out.cited.push(*k);
        }
    }
    let sentences: Vec<(String, bool)> = kept.into_iter().map(|k| (k.clean, k.line_end)).collect();
    out.answer = join(&sentences);
    out.substantive = says_something(&unmarked(&out.answer));
    out
}

/// A sentence the check keeps: as kept, whether the draft broke the line after it, and what it
/// cites.
struct Kept {
    clean: String,
    line_end: bool,
    cited: Vec<usize>,
}

/// Whether a checked answer says anything in words: "[1]", "2 [1]" or a figure with its unit
/// alone ("2 hours [1]", "三个月 [1]") is not an answer. A small model writes those, and a bare
/// figure cannot be held to what its passage says it of: the runbook's "2 hours" is the
/// escalation of a SEV1, not its acknowledgement. A Chinese character counts as two letters.
fn says_something(text: &str) -> bool {
    let weight: usize = text
        .chars()
        .filter(|c| c.is_alphanumeric())
        .map(|c| if crate::lang::is_cjk(c) { 2 } else { 1 })
        .sum();
    weight >= 8
}

/// The sentences of `answer`, each with its text (valid markers only) and cited numbers. A
/// "sentence" that is only markers ("… for that year. [1]": models often cite a paragraph once,
/// after its last full stop) cites the sentences before it that cite nothing themselves, back
/// to the previous cited one.
///
/// A note that only names the sources ("This is stated in [1].", "证据来自 [1] 和 [4]。") is
/// read the same way, and is never a sentence of the answer itself. A list item's number
/// ("1.") stays with its item.
fn attach_trailing_markers(answer: &str, n: usize) -> Vec<Drafted> {
    let mut out: Vec<Drafted> = Vec::new();
    let mut number = String::new();
    let mut rest = answer;
    for sentence in sentences(answer) {
        // Where the draft broke the line after this sentence (a list's items), the checked
        // answer does too.
        let line_end = match rest.find(sentence.as_str()) {
            Some(at) => {
                rest = &rest[at + sentence.len()..];
                rest.trim_start_matches([' ', '\t', '\r']).starts_with('\n')
            }
            None => false,
        };
        if is_list_number(&sentence) {
            number = sentence;
            continue;
        }
        let sentence = if number.is_empty() {
            sentence
        } else {
            format!("{} {sentence}", std::mem::take(&mut number))
        };
        let (clean, numbers) = markers(&sentence, n);
        let clean = leading_markers_to_end(&clean);
        let text = unmarked(&clean);
        let note = !numbers.is_empty() && is_source_note(&text);
        let only_markers = !numbers.is_empty()
            && (note || !text.chars().any(char::is_alphanumeric))
            && out.last().is_some_and(|d| d.cited.is_empty());
        if note && !only_markers {
            // After a cited sentence (or first), a source note adds nothing.
            continue;
        }
        if !only_markers {
            out.push(Drafted {
                original: sentence,
                clean,
                cited: numbers,
                line_end,
            });
            continue;
        }
        let tail: String = numbers.iter().map(|k| format!("[{k}]")).collect();
        for Drafted {
            original,
            clean: text,
            cited,
            ..
        } in out.iter_mut().rev()
        {
            if !cited.is_empty() {
                break;
            }
            original.push(' ');
            original.push_str(sentence.trim());
            append_markers(text, &tail);
            cited.clone_from(&numbers);
        }
    }
    out
}

/// A sentence of a draft: as written, with its valid markers only, the evidence it cites, and
/// whether the draft broke the line after it.
struct Drafted {
    original: String,
    clean: String,
    cited: Vec<usize>,
    line_end: bool,
}

/// "[1] 30 天内" (a small model's markers used as list labels) as "30 天内 [1]": a sentence's
/// markers go after what they cite.
fn leading_markers_to_end(clean: &str) -> String {
    let mut rest = clean.trim_start();
    let mut lead = String::new();
    while let Some(after) = rest.strip_prefix('[') {
        match after.find(']') {
            Some(close) if close > 0 && after[..close].chars().all(|c| c.is_ascii_digit()) => {
                lead.push_str(&rest[..close + 2]);
                rest = after[close + 1..].trim_start();
            }
            _ => break,
        }
    }
    if lead.is_empty() || !rest.chars().any(char::is_alphanumeric) {
        return clean.to_string();
    }
    let mut text = rest.trim_end().to_string();
    append_markers(&mut text, &lead);
    text
}

/// Puts `markers` at the end of `text`: "…的试用期[1]。" in Chinese (before the full stop),
/// "… for that year. [1]" in English.
fn append_markers(text: &mut String, markers: &str) {
    match text.pop() {
        Some(end) if crate::lang::is_cjk_punct(end) => {
            text.push_str(markers);
            text.push(end);
        }
        end => {
            text.extend(end);
            text.push(' ');
            text.push_str(markers);
        }
    }
}

/// The values a sentence lists that can be told from its words around them (lowercased): of
/// three or more items separated by commas or 、, those after a colon or, without one, the
/// middle ones (the first carries the sentence's lead-in, the last its tail: "The projects are
/// A, B and C in prod").
fn listed_values(sentence: &str) -> Vec<String> {
    let (lead, list) = match sentence.rfind([':', '：']) {
        Some(at) => (false, &sentence[at..]),
        None => (true, sentence),
    };
    let list = list.trim_start_matches([':', '：']);
    let items: Vec<&str> = list.split([',', '，', '、']).collect();
    if items.len() < 3 {
        return Vec::new();
    }
    let start = usize::from(lead);
    let end = if lead { items.len() - 1 } else { items.len() };
    items[start..end]
        .iter()
        .map(|item| {
            let item = item.trim().trim_end_matches(['.', '。', ';', '；']).trim();
            let item = item.strip_prefix("and ").unwrap_or(item);
            let item = item.strip_prefix('和').unwrap_or(item);
            // Quoted or not, a name is the same name: "“周欣”、“郑凯”".
            item.trim_matches(|c: char| c.is_whitespace() || "\"'“”‘’「」《》".contains(c))
                .to_lowercase()
        })
        .filter(|item| !item.is_empty())
        .collect()
}

/// What a sentence says after an aside that opens it ("注意：生产环境（prod）的变更窗口为…";
/// the labels, "注意", "Note", are `asides` in `data/words.toml`):
/// the rest says all the sentence does, and writers copy it without the label. A label that
/// names a subject ("maxSurge: 25% — …", "Memory limit: 1Gi") is not an aside: without it,
/// the rest could be read as anything's.
fn after_aside(sentence: &str) -> Option<&str> {
    let (label, rest) = sentence.split_once(['：', ':'])?;
    let label = label.trim().to_lowercase();
    words().asides.contains(&label).then_some(rest.trim())
}

/// How a sentence is compared with the evidence's to tell a copy: without a list item's
/// number, its spacing and the punctuation that ends it ("…rollout." and "…rollout" are one).
fn quote_key(sentence: &str) -> String {
    let chars: Vec<char> = sentence.chars().collect();
    let start = list_marker_len(&chars);
    let mut key: String = chars[start..]
        .iter()
        .filter(|c| !c.is_whitespace())
        .collect();
    while key.ends_with(['.', '。', ';', '；', '!', '！']) {
        key.pop();
    }
    key
}

/// "1.", "2)", "3、": a list item's number that the sentence splitter cut from its item.
fn is_list_number(sentence: &str) -> bool {
    let chars: Vec<char> = sentence.trim().chars().collect();
    chars.len() >= 2
        && chars.len() <= 3
        && chars[..chars.len() - 1].iter().all(char::is_ascii_digit)
        && matches!(chars[chars.len() - 1], '.' | ')' | '、')
}

/// Whether `text` (markers removed) only says where the answer comes from: "This is stated
/// in", "This can be found in the Employee Handbook", "证据来自 和". Kept short: a sentence
/// that goes on to say something is a claim.
fn is_source_note(text: &str) -> bool {
    const NOTES: &[&str] = &[
        "this is stated in",
        "this is found in",
        "this can be found in",
        "this is mentioned in",
        "this is described in",
        "this is from",
        "this information is from",
        "this information comes from",
        "this information can be found in",
        "as stated in",
        "source:",
        "sources:",
        "evidence:",
        "reference:",
        "references:",
        "证据来自",
        "证据：",
        "来源：",
        "来源:",
        "信息来源",
        "出处",
        "参见",
        "详见",
        "以上信息来自",
        "以上内容来自",
        "参考资料",
    ];
    let lower = text.trim().trim_start_matches(['(', '（']).to_lowercase();
    lower.chars().count() <= 80 && NOTES.iter().any(|note| lower.starts_with(note))
}

/// Whether `sentence` (markers removed) ends where what it opens is missing: "…的脚本包括 。",
/// "The versions it runs are." (its last word is one of `open_endings` in `data/words.toml`).
fn leaves_a_gap(sentence: &str) -> bool {
    let body = sentence
        .trim_end()
        .trim_end_matches(['.', '。', '!', '！', ';', '；', '…'])
        .trim_end()
        .to_lowercase();
    words().open_endings.iter().any(|w| {
        body.strip_suffix(w.as_str()).is_some_and(|before| {
            // A whole word: in English after a space, in Chinese after anything.
            before.is_empty()
                || w.chars().any(crate::lang::is_cjk)
                || before.ends_with(|c: char| !c.is_alphanumeric())
        })
    })
}

/// Whether `text` is a SQL statement rather than an answer in words (a small model sometimes
/// replies with the query it was shown). An instruction that happens to start the same way
/// ("Select Annual leave from the list [1]", "With approval from your manager, …") is not:
/// a statement also has SQL's own marks (`*`, quoted names, `=`, a clause keyword).
fn is_sql(text: &str) -> bool {
    let lower = text.trim().to_lowercase();
    let shaped = (lower.starts_with("select ") && lower.contains(" from "))
        || (lower.starts_with("with ") && lower.contains(" as (") && lower.contains("select "));
    const MARKS: &[&str] = &[
        "*",
        "\"",
        "`",
        "=",
        " where ",
        " limit ",
        " join ",
        " group by ",
        " order by ",
        ";",
    ];
    shaped && MARKS.iter().any(|m| lower.contains(m))
}

/// Whether `a` and `b` say the same once citation markers and spacing are set aside: how a
/// front end tells that the check changed a streamed draft's words (a cut sentence, a dropped
/// source note), not merely moved its markers or broke its lines.
pub fn same_words(a: &str, b: &str) -> bool {
    let words = |text: &str| -> String {
        unmarked(&markers(text, usize::MAX).0)
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect()
    };
    words(a) == words(b)
}

/// Whether `a` and `b` cite the same evidence, wherever (and however often) their markers
/// stand: a check that gave a copied line its marker changed what the answer says it rests on.
pub fn same_citations(a: &str, b: &str) -> bool {
    let cited =
        |text: &str| -> BTreeSet<usize> { markers(text, usize::MAX).1.into_iter().collect() };
    cited(a) == cited(b)
}

/// The text without its `[n]` markers.
pub(crate) fn unmarked(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(open) = rest.find('[') {
        out.push_str(&rest[..open]);
        match rest[open..].find(']') {
            Some(close)
                if rest[open + 1..open + close]
                    .chars()
                    .all(|c| c.is_ascii_digit()) =>
            {
                rest = &rest[open + close + 1..];
            }
            _ => {
                out.push('[');
                rest = &rest[open + 1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// Removes markers naming no evidence (`[9]` of 3) and returns the valid numbers.
pub(crate) fn markers(sentence: &str, n: usize) -> (String, Vec<usize>) {
    let mut clean = String::new();
    let mut numbers = Vec::new();
    let mut rest = sentence;
    while let Some(open) = rest.find('[') {
        clean.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        match after.find(']') {
            Some(close) => {
                let inside = &after[..close];
                let nums: Vec<Option<usize>> = inside
                    .split([',', '，', ' '])
                    .filter(|s| !s.is_empty())
                    .map(|s| s.trim().parse::<usize>().ok())
                    .collect();
                if !nums.is_empty() && nums.iter().all(Option::is_some) {
                    let valid: Vec<usize> = nums
                        .into_iter()
                        .flatten()
                        .filter(|k| (1..=n).contains(k))
                        .collect();
                    for k in &valid {
                        clean.push_str(&format!("[{k}]"));
                    }
                    numbers.extend(valid);
                } else {
                    clean.push('[');
                    clean.push_str(inside);
                    clean.push(']');
                }
                rest = &after[close + 1..];
            }
            None => {
                clean.push_str(&rest[open..]);
                rest = "";
            }
        }
    }
    clean.push_str(rest);
    (clean, numbers)
}

/// A sentence as the figure check reads it: its figures, its words (figures aside), the words
/// that can name what a figure is of ([`subject_words`]) and its script.
struct Passage {
    figures: Vec<Figure>,
    words: HashSet<String>,
    subject: HashSet<String>,
    cjk: bool,
}

impl Passage {
    fn of(sentence: &str) -> Passage {
        Passage {
            figures: figures(sentence),
            words: crate::text::prose_terms(sentence)
                .into_iter()
                .filter(|w| !w.chars().all(|c| c.is_ascii_digit()))
                .collect(),
            subject: subject_words(sentence),
            cjk: Lang::detect(sentence) == Lang::Zh,
        }
    }

    /// Whether a sentence stating a figure of `source` says it of what the question asked
    /// about: of `subject` (the claim's words that the question also uses, see
    /// [`subject_words`]), at least [`SUBJECT_SHARE`] stands in `source` itself or in its
    /// document's `title`. "核心工作时间是 40 小时" citing "每周工作 40 小时" shares 工作 with
    /// it, but not 核心 or 时间: the figure is the week's, not the core hours'. The heading
    /// above `source` does not count: every sentence of its section has it.
    fn holds_subject(
        &self,
        source: &Passage,
        subject: &HashSet<String>,
        title: &HashSet<String>,
    ) -> bool {
        if subject.is_empty() || self.cjk != source.cjk {
            return true;
        }
        let held = subject
            .iter()
            .filter(|w| source.subject.contains(*w) || title.contains(*w))
            .count();
        held as f32 >= SUBJECT_SHARE * subject.len() as f32
    }

    /// Whether a sentence stating a figure of `source` speaks of what `source` does: a word
    /// in common, or no way to tell (a bare figure, "3 [1]"; a sentence in the other
    /// language than its source).
    fn speaks_of(&self, source: &Passage) -> bool {
        self.words.is_empty()
            || self.cjk != source.cjk
            || self.words.iter().any(|w| source.words.contains(w))
    }
}

/// The share of a claim's content words that the items it cites must use more than (see
/// `uses_its_words`): of two words, both.
const SUPPORT_SHARE: f32 = 0.5;

/// Words of a claim of six words or more that the sentence it is attributed to may lack (a
/// linking word the writer added); a shorter claim must use only the sentence's words.
const ATTRIBUTION_SLACK: usize = 1;

/// The share of a figure claim's subject (its words the question also uses) that the sentence
/// stating its figure must hold: see [`Passage::holds_subject`].
const SUBJECT_SHARE: f32 = 0.5;

/// The words of `text` that can name what a figure is of: English words (stemmed, as documents
/// are matched) other than stop words, figures and the words that only stand around a figure
/// (`not_beside` in `data/words.toml`: units, "within", "per"); Chinese words of two characters
/// or more as the index cuts them (jieba, compounds with their parts: 工作时间 is 工作, 时间 and
/// 工作时间) other than question words (`asking_zh`). Single Chinese characters are mostly
/// units or particles (天, 是).
fn subject_words(text: &str) -> HashSet<String> {
    let mut out: HashSet<String> = HashSet::new();
    let lower = text.to_lowercase();
    for token in lower.split(|c: char| !c.is_alphanumeric() || crate::lang::is_cjk(c)) {
        if token.is_empty()
            || token.starts_with(|c: char| c.is_ascii_digit())
            || words().not_beside.iter().any(|w| w == token)
        {
            continue;
        }
        out.extend(crate::text::prose_terms(token));
    }
    out.extend(knowhub_index::analyze(text).into_iter().filter(|w| {
        w.chars().count() >= 2
            && w.chars().all(crate::lang::is_cjk)
            && !words().asking_zh.contains(w)
    }));
    out
}

/// A figure an English sentence states, and the words on either side of it that may say what
/// it is of, nearest first (each as its `prose_terms`): neither figures nor `not_beside`.
struct Beside {
    figure: Figure,
    before: Vec<HashSet<String>>,
    after: Vec<HashSet<String>>,
}

fn words_beside_figures(sentence: &str) -> Vec<Beside> {
    let tokens: Vec<&str> = sentence
        .split(|c: char| !(c.is_alphanumeric() || matches!(c, '.' | ',' | '-' | '%')))
        .map(|t| t.trim_matches(|c: char| matches!(c, '.' | ',' | '-')))
        .filter(|t| !t.is_empty())
        .collect();
    let is_figure = |t: &str| t.starts_with(|c: char| c.is_ascii_digit());
    let terms = |t: &&str| -> Option<HashSet<String>> {
        if is_figure(t) || words().not_beside.contains(&t.to_lowercase()) {
            return None;
        }
        let terms = crate::text::prose_terms(t);
        (!terms.is_empty()).then_some(terms)
    };
    let mut out = Vec::new();
    for (i, token) in tokens.iter().enumerate() {
        if !is_figure(token) {
            continue;
        }
        let before: Vec<HashSet<String>> = tokens[..i].iter().rev().filter_map(terms).collect();
        let after: Vec<HashSet<String>> = tokens[i + 1..].iter().filter_map(terms).collect();
        for figure in figures(token) {
            out.push(Beside {
                figure,
                before: before.clone(),
                after: after.clone(),
            });
        }
    }
    out
}

/// A number as written: its value and how many decimals it was given with.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Figure {
    value: f64,
    decimals: i32,
}

impl Figure {
    /// Whether `known` holds this figure, or one that rounds to it at the decimals it was
    /// written with (a SQL average 4.4567 may be stated as 4.46).
    fn stands_in(&self, known: &[Figure]) -> bool {
        let scale = 10f64.powi(self.decimals);
        known.iter().any(|k| {
            (k.value - self.value).abs() < 1e-9
                || (k.decimals > self.decimals
                    && ((k.value * scale).round() - self.value * scale).abs() < 1e-6)
        })
    }
}

/// The numbers written in digits in `text` ("1,200,000" is one number, "2024-05-06" three;
/// full-width digits count), then those in Chinese numerals that count something (see
/// [`chinese_figures`]). A list's own numbering ("1. ", "2) ") is not a figure. English
/// number words ("three") are not read.
fn figures(text: &str) -> Vec<Figure> {
    let mut out = digit_figures(text);
    out.extend(chinese_figures(text));
    out
}

/// The numbers written in Chinese numerals in `text` that count something: a run of numerals
/// followed by a measure word or unit ("三个月", "两名", "十五天", "一百二十元", "二〇二四年";
/// the numerals and measure words are `chinese_numerals` and `figure_measures` in
/// `data/words.toml`).
/// Qwen writes "三个月" as often as "3 个月", and "这三个环境中有两个正在使用 [1]" must be held
/// to its passage like "2 个". Not read: an ordinal ("第三步"), a lone 一 (an article as often
/// as a number: "需要一个审批", "同一人"), a loose range ("三四天"), a run with 万 or 亿 (the
/// passage may say "50 万元", which reads as 50), and numerals in words ("三角", "十分").
fn chinese_figures(text: &str) -> Vec<Figure> {
    use chinese_number::{ChineseCountMethod, ChineseToNumber};
    let numerals = &words().chinese_numerals;
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if !numerals.contains(chars[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < chars.len() && numerals.contains(chars[i]) {
            i += 1;
        }
        let run: String = chars[start..i].iter().collect();
        let rest: String = chars[i..].iter().take(3).collect();
        let ordinal = start > 0 && chars[start - 1] == '第';
        let counts = words()
            .figure_measures
            .iter()
            .any(|m| rest.starts_with(m.as_str()));
        if ordinal || !counts || run == "一" || matches!(chars.get(i), Some('万' | '亿')) {
            continue;
        }
        let places = run.chars().any(|c| "十百千".contains(c));
        let value: Option<u64> = if places {
            run.to_number(ChineseCountMethod::TenThousand).ok()
        } else if run.chars().count() == 1 || run.chars().count() >= 3 {
            // One digit, or a year read digit by digit ("二〇二四"); two ("三四") are a range.
            run.to_number_naive().ok()
        } else {
            None
        };
        if let Some(value) = value {
            out.push(Figure {
                value: value as f64,
                decimals: 0,
            });
        }
    }
    out
}

/// The numbers written in digits in `text`: see [`figures`].
fn digit_figures(text: &str) -> Vec<Figure> {
    let chars: Vec<char> = text
        .chars()
        .map(|c| match c {
            '０'..='９' => char::from(b'0' + (c as u32 - '０' as u32) as u8),
            '．' => '.',
            _ => c,
        })
        .collect();
    let start = list_marker_len(&chars);
    let mut out = Vec::new();
    let mut i = start;
    while i < chars.len() {
        if !chars[i].is_ascii_digit() {
            i += 1;
            continue;
        }
        // Digits a name runs into ("SEV2", "v3", "p99", "cn-east-2") are the name's, which the
        // names rule checks: the runbook's SEV2 row holds no figure 2.
        let letter = |k: usize| chars.get(k).is_some_and(char::is_ascii_alphabetic);
        if i > 0 && (letter(i - 1) || (matches!(chars[i - 1], '-' | '_') && i > 1 && letter(i - 2)))
        {
            while i < chars.len() && chars[i].is_ascii_alphanumeric() {
                i += 1;
            }
            continue;
        }
        let mut digits = String::new();
        let mut decimals: Option<i32> = None;
        while i < chars.len() {
            let c = chars[i];
            let next_digits = || {
                chars[i + 1..]
                    .iter()
                    .take_while(|c| c.is_ascii_digit())
                    .count()
            };
            if c.is_ascii_digit() {
                digits.push(c);
                if let Some(d) = decimals.as_mut() {
                    *d += 1;
                }
            } else if c == ',' && decimals.is_none() && next_digits() == 3 {
                // A thousands separator: "1,200".
            } else if c == '.' && decimals.is_none() && next_digits() > 0 {
                digits.push('.');
                decimals = Some(0);
            } else {
                break;
            }
            i += 1;
        }
        if let Ok(value) = digits.parse::<f64>() {
            out.push(Figure {
                value,
                decimals: decimals.unwrap_or(0),
            });
        }
    }
    out
}

/// The words of `sentence` that a writer can only copy from its sources, never paraphrase:
/// identifiers ("x86", "eu-prod-1", "readOnly", "Q4_K_M": letters run into digits, an
/// underscore, a capital inside a word), key combinations ("Ctrl+Shift+A"), and words in the
/// other script than the sentence's own (English words in a Chinese sentence, "staging" or
/// "GitHub"; Chinese words in an English sentence, names such as "王芳"). Lowercased. Plain
/// words of the sentence's own script are not listed: a model may say what its source says in
/// other words.
fn names(sentence: &str) -> Vec<String> {
    let mostly_cjk = Lang::detect(sentence) == Lang::Zh;
    let mut out = Vec::new();
    let mut push = |word: &str| {
        let word = word.to_lowercase();
        if !out.contains(&word) {
            out.push(word);
        }
    };
    // Runs of ASCII letters, digits, '_' and inner '-' / '.' / '+', and runs of CJK characters.
    let chars: Vec<char> = sentence.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if crate::lang::is_cjk(c) {
            let start = i;
            while i < chars.len() && crate::lang::is_cjk(chars[i]) {
                i += 1;
            }
            if !mostly_cjk && i - start >= 2 {
                push(&chars[start..i].iter().collect::<String>());
            }
            continue;
        }
        if !(c.is_ascii_alphanumeric() || c == '_') {
            i += 1;
            continue;
        }
        let start = i;
        while i < chars.len() {
            let c = chars[i];
            let inner = matches!(c, '-' | '.' | '+')
                && chars.get(i + 1).is_some_and(char::is_ascii_alphanumeric)
                && i > start;
            if c.is_ascii_alphanumeric() || c == '_' || inner {
                i += 1;
            } else {
                break;
            }
        }
        let word: String = chars[start..i].iter().collect();
        let letters = word.chars().filter(char::is_ascii_alphabetic).count();
        if letters == 0 {
            continue; // a figure: checked as one
        }
        // A key combination ("Ctrl+Shift+A") is copied as it is written.
        let identifier = word.contains(['_', '+'])
            || word.chars().zip(word.chars().skip(1)).any(|(a, b)| {
                (a.is_ascii_alphabetic() && b.is_ascii_digit())
                    || (a.is_ascii_digit() && b.is_ascii_alphabetic())
                    || (a.is_ascii_lowercase() && b.is_ascii_uppercase())
            });
        if identifier || (mostly_cjk && letters >= 2) {
            push(&word);
        }
    }
    out
}

/// The length of a list item's numbering at the start of `chars` ("1. ", "2) ", "3、"), or 0.
fn list_marker_len(chars: &[char]) -> usize {
    let lead = chars.iter().take_while(|c| c.is_whitespace()).count();
    let digits = chars[lead..]
        .iter()
        .take_while(|c| c.is_ascii_digit())
        .count();
    if digits == 0 || digits > 2 {
        return 0;
    }
    match chars.get(lead + digits) {
        Some('、') => lead + digits + 1,
        Some('.' | ')')
            if chars
                .get(lead + digits + 1)
                .is_none_or(|c| c.is_whitespace()) =>
        {
            lead + digits + 1
        }
        _ => 0,
    }
}

/// Whether a sentence only says the question back: "projects started after 2024 [1]." for
/// "projects started after 2024" (the 0.5B wrote that, citing a query result, and it passed
/// as an answer). Every term of it (as documents are matched: stemmed words, CJK characters)
/// is the question's or filler, and it has at least one. A question asking yes or no is
/// answered in its own words ("Is the limit CNY 600?" — "The limit is CNY 600."), so it is
/// never read so; nor is a lead-in ("The projects started after 2024 are:"), which the lines
/// under it answer.
fn restates(sentence: &str, question: &str) -> bool {
    if sentence.trim_end().ends_with([':', '：']) {
        return false;
    }
    let lower = question.trim_start().to_lowercase();
    let first = lower
        .split(|c: char| !c.is_alphanumeric())
        .next()
        .unwrap_or("");
    let yes_no = matches!(
        first,
        "is" | "are"
            | "was"
            | "were"
            | "do"
            | "does"
            | "did"
            | "can"
            | "could"
            | "should"
            | "will"
            | "would"
            | "has"
            | "have"
            | "had"
            | "may"
            | "must"
    ) || ["吗", "是否", "有没有", "能否", "可否"]
        .iter()
        .any(|w| question.contains(w));
    if yes_no {
        return false;
    }
    // Words and single characters: a Chinese echo reorders the question's characters ("预算
    // 最高的项目" for "哪个项目的预算最高"), which makes bigrams of its own.
    // Words that carry no claim of their own ("According to the query result, …",
    // "根据查询结果，…"): `filler` in `data/words.toml`.
    let filler = word_terms(&words().filler);
    let asked = word_terms(question);
    let said: Vec<String> = word_terms(sentence)
        .into_iter()
        .filter(|t| !filler.contains(t))
        .collect();
    !said.is_empty() && said.iter().all(|t| asked.contains(t))
}

/// Whether a sentence makes a claim that needs a source (not a greeting, a heading-like
/// fragment or a statement about the sources themselves).
fn states_something(sentence: &str) -> bool {
    // A Chinese character weighs two letters: "公司有班车" states something.
    let letters: usize = sentence
        .chars()
        .filter(|c| c.is_alphanumeric())
        .map(|c| if crate::lang::is_cjk(c) { 2 } else { 1 })
        .sum();
    if letters < 8 {
        return false;
    }
    let lower = sentence.to_lowercase();
    const META: &[&str] = &[
        "according to the",
        "based on the",
        "from the material",
        "the evidence",
        "根据你有权访问的资料",
        "根据资料",
        "根据提供的",
        "以下是",
    ];
    !(META.iter().any(|m| lower.starts_with(m)) && (lower.ends_with(':') || lower.ends_with('：')))
}

/// The kept sentences as one text: on their own lines where the draft had them so, else run
/// together as prose.
fn join(sentences: &[(String, bool)]) -> String {
    let mut out = String::new();
    let mut new_line = false;
    for (s, line_end) in sentences {
        let cjk_end = out.chars().last().is_some_and(crate::lang::is_cjk_punct);
        if !out.is_empty() {
            if new_line {
                out.push('\n');
            } else if !cjk_end && !s.starts_with(|c: char| crate::lang::is_cjk(c)) {
                out.push(' ');
            }
        }
        out.push_str(s);
        new_line = *line_end;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sentence_that_says_the_question_back_is_no_answer() {
        for (sentence, question, want) in [
            (
                "projects started after 2024",
                "projects started after 2024",
                true,
            ),
            (
                "According to the query result, projects started after 2024",
                "projects started after 2024",
                true,
            ),
            (
                "The project started after 2024",
                "projects started after 2024",
                true,
            ),
            ("预算最高的项目", "哪个项目的预算最高？", true),
            ("根据查询结果，预算最高的项目", "哪个项目的预算最高？", true),
            // Anything the question did not say is an answer's.
            (
                "Singapore Region Rollout has the highest budget",
                "Which project has the highest budget?",
                false,
            ),
            ("新加坡区域上线的预算最高", "哪个项目的预算最高？", false),
            (
                "3 staff are on probation",
                "How many staff are on probation?",
                false,
            ),
            // Yes or no is answered in the question's words.
            (
                "The hotel limit in Shanghai is CNY 600",
                "Is the hotel limit in Shanghai CNY 600?",
                false,
            ),
            ("试用期是三个月", "试用期是三个月吗？", false),
            ("", "projects started after 2024", false),
            (
                "The projects started after 2024 are:",
                "projects started after 2024",
                false,
            ),
        ] {
            assert_eq!(
                restates(sentence, question),
                want,
                "{sentence:?} for {question:?}"
            );
        }
        // The check cuts it, and nothing is left to answer with.
        let items = [Shown {
            title: "SQL: projects.xlsx › Projects",
            text: "Project=Spare Parts Forecast, Start date=2025-01-06",
            data: Some("Project=Spare Parts Forecast, Start date=2025-01-06"),
        }];
        let checked = check_items(
            "projects started after 2024 [1].",
            &items,
            "projects started after 2024",
        );
        assert_eq!(checked.answer, "");
        assert_eq!(checked.cut.len(), 1);
    }

    #[test]
    fn uncited_claims_are_cut_and_bad_numbers_dropped() {
        let table: &[(&str, usize, &str, &[usize], usize)] = &[
            // (answer, evidence count, kept answer, cited, cut sentences)
            (
                "Leave is 15 days [1]. It rises to 20 days after five years [2].",
                2,
                "Leave is 15 days [1]. It rises to 20 days after five years [2].",
                &[1, 2],
                0,
            ),
            (
                "Leave is 15 days [1]. Everyone loves it a lot.",
                1,
                "Leave is 15 days [1].",
                &[1],
                1,
            ),
            // A marker past the evidence is dropped; the item that says it is cited instead.
            ("Leave is 15 days [3].", 1, "Leave is 15 days. [1]", &[1], 0),
            (
                "Leave is 15 days [1, 2].",
                2,
                "Leave is 15 days [1][2].",
                &[1, 2],
                0,
            ),
            (
                "试用期为三个月[1]。转正后可以申请年假。",
                1,
                "试用期为三个月[1]。",
                &[1],
                1,
            ),
            // A Chinese numeral is a figure like any other ("3 个月" holds 三个月, not 两个月).
            ("试用期为两个月[1]。", 1, "", &[], 1),
            ("Yes.", 1, "Yes.", &[], 0),
            (
                "Leave is 15 days [1]. Leave is 15 days [1]. It rises later [2].",
                2,
                "Leave is 15 days [1]. It rises later [2].",
                &[1, 2],
                0,
            ),
            // A paragraph cited once, after its last full stop.
            (
                "Leave is 15 days. It rises to 20 days after five years. [1]",
                1,
                "Leave is 15 days. [1] It rises to 20 days after five years. [1]",
                &[1],
                0,
            ),
            // … back to the previous cited sentence only.
            (
                "Leave is 15 days [2]. It rises to 20 days after five years. [1]",
                2,
                "Leave is 15 days [2]. It rises to 20 days after five years. [1]",
                &[2, 1],
                0,
            ),
            ("[1]", 1, "[1]", &[1], 0),
            (
                "试用期为三个月。延长不超过一个月。[1]",
                1,
                "试用期为三个月[1]。",
                &[1],
                1,
            ),
        ];
        for (answer, n, kept, cited, cut) in table {
            let evidence = vec![
                "Leave is 15 days, and 20 days after five years. 试用期为 3 个月。";
                *n
            ];
            let c = check(answer, &evidence, "How much leave?");
            assert_eq!(c.answer, *kept, "{answer}");
            assert_eq!(c.cited, *cited, "{answer}");
            assert_eq!(c.cut.len(), *cut, "{answer}");
        }
    }

    #[test]
    fn source_notes_cite_what_they_follow_and_are_not_answers() {
        let evidence = [
            "工作日延长工作时间：工资的 150%；休息日加班：工资的 200%。",
            "Hotel: up to CNY 600 per night in Shanghai.",
        ];
        let table: &[(&str, &str, &[usize])] = &[
            // (answer, kept answer, cited)
            (
                "The hotel limit in Shanghai is CNY 600 per night. This can be found in the Employee Handbook [2].",
                "The hotel limit in Shanghai is CNY 600 per night. [2]",
                &[2],
            ),
            // After a cited sentence the note says nothing more.
            (
                "The hotel limit is CNY 600 per night [2]. This is stated in [2].",
                "The hotel limit is CNY 600 per night [2].",
                &[2],
            ),
            // A note alone is no answer; nor is a note that cites the wrong item (its figure).
            ("This is stated in [1].", "", &[]),
            (
                "The hotel limit is CNY 600 per night. This is stated in [1].",
                "",
                &[],
            ),
            // List numbers stay with their items, and the note cites them all.
            (
                "加班费计算如下：\n1. 工作日延长工作时间：工资的 150%\n2. 休息日加班：工资的 200%\n证据来自 [1]。",
                "加班费计算如下[1]：\n1. 工作日延长工作时间：工资的 150% [1]\n2. 休息日加班：工资的 200% [1]",
                &[1],
            ),
            // Markers used as list labels go after what they cite.
            (
                "[1] 工作日延长工作时间：工资的 150%\n[2] 上海每晚 CNY 600。",
                "工作日延长工作时间：工资的 150% [1]\n上海每晚 CNY 600[2]。",
                &[1, 2],
            ),
            // The query itself is not an answer.
            (
                "SELECT \"Hotel\" FROM limits WHERE \"Per night\" = 600 [2]",
                "",
                &[],
            ),
            // An instruction that starts like one is an answer.
            (
                "Select the Shanghai rate from the list: CNY 600 per night [2].",
                "Select the Shanghai rate from the list: CNY 600 per night [2].",
                &[2],
            ),
            (
                "With approval from your manager, the limit is CNY 600 per night [2].",
                "With approval from your manager, the limit is CNY 600 per night [2].",
                &[2],
            ),
        ];
        for (answer, kept, cited) in table {
            let c = check(answer, &evidence, "");
            assert_eq!(c.answer, *kept, "{answer}");
            assert_eq!(c.cited, *cited, "{answer}");
        }
    }

    #[test]
    fn a_figure_must_be_said_of_what_its_passage_says_it_of() {
        let evidence = [
            "4.1 收到告警后的处理步骤\n1. 在告警工具中确认告警。\n6. 事故结束后记录结束时间，并在 3 个工作日内提交复盘草稿。",
            "所有新入职的正式员工均有 3 个月 的试用期。",
            "Years of service: less than 3 years (new employees included); annual leave: 10 working days",
            "COUNT(*)=3",
        ];
        let items: Vec<Shown<'_>> = evidence
            .iter()
            .enumerate()
            .map(|(i, text)| Shown {
                title: "",
                text,
                data: (i == 3).then_some(*text),
            })
            .collect();
        let table: &[(&str, &str)] = &[
            // (answer, kept answer)
            // A figure borrowed from a passage about something else.
            ("这些环境中有 3 个正在使用[1]。", ""),
            (
                "复盘草稿须在 3 个工作日内提交[1]。",
                "复盘草稿须在 3 个工作日内提交[1]。",
            ),
            (
                "新员工的试用期是 3 个月[2]。",
                "新员工的试用期是 3 个月[2]。",
            ),
            (
                "New employees get 10 days of annual leave [3].",
                "New employees get 10 days of annual leave [3].",
            ),
            ("The hotel limit is 10 dollars a night [3].", ""),
            // One word in common is enough: the check catches borrowed figures, not every
            // misreading.
            (
                "Parental leave lasts 10 weeks [3].",
                "Parental leave lasts 10 weeks [3].",
            ),
            // A bare figure, or one said in the other language, cannot be told apart.
            ("3 [1].", "3 [1]."),
            (
                "新员工每年有 10 个工作日年假[3]。",
                "新员工每年有 10 个工作日年假[3]。",
            ),
            // A query result may be called one, in either language.
            (
                "根据 SQL 查询结果，目前有 3 人在试用期[4]。",
                "根据 SQL 查询结果，目前有 3 人在试用期[4]。",
            ),
            ("根据 SQL 查询结果，试用期是 3 个月[2]。", ""),
            // A query result's figure needs no words around it.
            ("目前有 3 人在试用期[4]。", "目前有 3 人在试用期[4]。"),
            (
                "There are 3 staff on probation [4].",
                "There are 3 staff on probation [4].",
            ),
        ];
        for (answer, kept) in table {
            let c = check_items(answer, &items, "");
            assert_eq!(c.answer, *kept, "{answer}");
        }
    }

    #[test]
    fn a_marker_or_a_bare_number_is_not_an_answer() {
        let table: &[(&str, bool)] = &[
            ("[1]", false),
            ("2[1]", false),
            ("1.31.3 [1]", false),
            ("7 projects are in progress [1].", true),
            ("三个月[1]。", false),
            ("2 hours [1].", false),
            ("30 天内 [1]", false),
            ("试用期为三个月[1]。", true),
        ];
        for (answer, want) in table {
            let evidence =
                ["7 projects are in progress; 1.31 and 1.3 are versions; 2 runs. 试用期 3 个月。"];
            assert_eq!(check(answer, &evidence, "").substantive, *want, "{answer}");
        }
    }

    #[test]
    fn a_sentence_whose_slot_is_empty_says_nothing() {
        let table: &[(&str, bool)] = &[
            ("GIMP 2.6 可以运行的旧版本写的脚本包括 。", true),
            ("The versions it runs are.", true),
            ("It supports formats such as .", true),
            ("该功能是免费的。", false),
            ("The tool is free.", false),
            ("Both are included", false),
            ("Version 0.54.", false),
            ("Backups are kept for 35 days", false),
            ("The answer is 42.", false),
            ("发布于 1998 年。", false),
        ];
        for (sentence, gap) in table {
            assert_eq!(leaves_a_gap(sentence), *gap, "{sentence}");
        }
        // Cut from a draft; the rest stays.
        let checked = check(
            "The scripts it runs are [1]. Scripts written for GIMP 2.0 run [1].",
            &["Scripts written for GIMP 2.0 run in GIMP 2.6."],
            "Which scripts does GIMP 2.6 run?",
        );
        assert_eq!(checked.cut.len(), 1, "{checked:?}");
        assert!(checked.answer.starts_with("Scripts written"), "{checked:?}");
    }

    #[test]
    fn names_are_the_words_only_copying_gives() {
        let table: &[(&str, &[&str])] = &[
            // (sentence, names)
            (
                "目前支持的环境包括 dev、staging 和 prod[1]。",
                &["dev", "staging", "prod"],
            ),
            ("SEV1 须在 5 分钟内确认。", &["sev1"]),
            ("Set maxSurge to 25% on nw-prod-sh.", &["maxsurge"]),
            ("The model file is Q4_K_M.", &["q4_k_m"]),
            ("Its shortcut is Ctrl+Shift+A.", &["ctrl+shift+a"]),
            ("Press Alt + F4 to close it.", &["f4"]),
            // Plain words of the sentence's own script may paraphrase.
            ("New employees get 10 working days of leave.", &[]),
            // Hyphenated words are English too ("nw-prod-sh" above goes unchecked with them).
            (
                "A follow-up review is due within 24 hours, e.g. by e-mail.",
                &[],
            ),
            ("新员工每年有 10 个工作日年假。", &[]),
            // The other script's words: copied.
            ("The Fleet project is owned by 李娜.", &["李娜"]),
            ("请在 NorthDesk 中提交申请。", &["northdesk"]),
        ];
        for (sentence, want) in table {
            assert_eq!(names(sentence), *want, "{sentence}");
        }
    }

    #[test]
    fn a_copied_name_must_stand_in_what_the_sentence_cites() {
        let evidence = [
            "4.1 收到告警后的处理步骤 1. 在告警工具中确认告警：SEV1 须在 5 分钟内确认。",
            "Environment | Cluster: dev nw-dev-01; staging nw-stg-01; prod nw-prod-sh",
            "Leave is requested in NorthDesk. Latency 10 ms.",
        ];
        let table: &[(&str, &str, &str)] = &[
            // (answer, question, kept answer)
            // Names the cited item does not hold: a claim from elsewhere, or from nowhere.
            ("目前支持的环境包括 dev、staging 和 prod[1]。", "", ""),
            (
                "目前支持的环境包括 dev、staging 和 prod[2]。",
                "",
                "目前支持的环境包括 dev、staging 和 prod[2]。",
            ),
            (
                "SEV1 须在 5 分钟内确认[1]。",
                "",
                "SEV1 须在 5 分钟内确认[1]。",
            ),
            ("SEV2 须在 5 分钟内确认[1]。", "", ""),
            (
                "请在 NorthDesk 中提交请假申请[3]。",
                "",
                "请在 NorthDesk 中提交请假申请[3]。",
            ),
            ("请在 HRIS 中提交请假申请[3]。", "", ""),
            // The question's own words may be repeated; spacing aside ("10ms" for "10 ms").
            (
                "prod 环境的集群是 nw-prod-sh[2]。",
                "prod 环境用哪个集群？",
                "prod 环境的集群是 nw-prod-sh[2]。",
            ),
            (
                "The p50 latency is 10ms [3].",
                "What is the p50 latency?",
                "The p50 latency is 10ms [3].",
            ),
        ];
        for (answer, question, kept) in table {
            let c = check(answer, &evidence, question);
            assert_eq!(c.answer, *kept, "{answer}");
        }
        // A name the item's title holds is the item's own: the writer saw it listed so.
        let titled = [Shown {
            title: "Northwind Robotics Employee Handbook",
            text: "New employees get 10 working days of annual leave.",
            data: None,
        }];
        let answer = "根据 Employee Handbook，新员工每年有 10 个工作日年假[1]。";
        assert_eq!(check_items(answer, &titled, "").answer, answer);
        let untitled = [Shown {
            title: "",
            ..titled[0]
        }];
        assert_eq!(check_items(answer, &untitled, "").answer, "");
    }

    #[test]
    fn a_query_results_figures_are_its_rows_not_its_statement() {
        let items = [Shown {
            title: "SQL: projects.xlsx › Staff",
            text: "The query `SELECT COUNT(*) FROM \"staff\" WHERE \"On probation\" = 1 LIMIT 50` \
                   returned: COUNT(*)=3",
            data: Some("COUNT(*)=3"),
        }];
        let question = "目前有多少人在试用期？";
        for (answer, kept) in [
            ("目前有 3 人在试用期[1]。", true),
            ("根据 SQL 查询结果，目前有 3 人在试用期[1]。", true),
            // The statement's LIMIT and its filter's constant are not what the query found.
            ("目前有 50 人在试用期[1]。", false),
            ("目前有 1 人在试用期[1]。", false),
        ] {
            let c = check_items(answer, &items, question);
            assert_eq!(c.answer.is_empty(), !kept, "{answer}: {c:?}");
        }
    }

    #[test]
    fn a_figure_must_stand_beside_what_the_claim_says_it_of() {
        let evidence = [
            "Severity: SEV1; Acknowledge within: 5 minutes; Status updates: Every 30 minutes\n\
             Severity: SEV2; Acknowledge within: 15 minutes\n\
             A SEV1 that is not resolved within 2 hours is escalated to the CTO.",
            "Component: fleet-scheduler; Memory limit: 4Gi\n\
             Component: api-gateway; Memory limit: 1Gi\n\
             Years of service: Less than 3 years (including new employees); Annual leave per year: 10 working days",
            "name: fleet-scheduler\nreplicas: 4\nThe readiness probe runs every 5 seconds.",
        ];
        let table: &[(&str, bool)] = &[
            // (claim, kept)
            (
                "A SEV1 incident must be acknowledged within 5 minutes [1].",
                true,
            ),
            // The runbook's 2 hours is the escalation's, not the acknowledgement's.
            (
                "A SEV1 incident must be acknowledged within 2 hours [1].",
                false,
            ),
            (
                "A SEV1 that is not resolved within 2 hours goes to the CTO [1].",
                true,
            ),
            ("The memory limit of fleet-scheduler is 4Gi [2].", true),
            // 1Gi is the api-gateway's.
            ("The memory limit of fleet-scheduler is 1Gi [2].", false),
            (
                "New employees receive 10 working days of annual leave [2].",
                true,
            ),
            // Both sides count: the manifest's "replicas: 4" is fleet-scheduler's, and says
            // nothing of running.
            (
                "The api-gateway component runs 4 replicas in prod [3].",
                false,
            ),
            ("The manifest sets 4 replicas [3].", true),
            // Words beside a figure that are only its units or the words around it say nothing.
            ("Status updates come every 30 minutes [1].", true),
            // A word the passages never use ("lasts") says nothing either way.
            (
                "A SEV1 incident lasts 5 minutes until acknowledged [1].",
                true,
            ),
        ];
        for (claim, kept) in table {
            let c = check(claim, &evidence, "");
            assert_eq!(!c.answer.is_empty(), *kept, "{claim}: {c:?}");
        }
    }

    #[test]
    fn a_figure_must_be_said_of_what_the_question_asks_about() {
        let evidence = [
            "公司实行标准工时制，每周工作 40 小时，周一至周五，午休 1 小时。\
             公司支持弹性上班：上班时间可在 8:00 至 10:00 之间自行安排，但 10:00—16:00 为核心工作时间。",
            "Every new permanent employee starts with a probation period of 3 months.\n\
             Annual leave accrues from your first day, but you may take at most 3 days of it \
             before probation ends.",
            "On-call engineers receive an on-call allowance of CNY 300 per week of on-call duty.",
            "年假天数按司龄计算：\n司龄不满 3 年（含新员工）：每年 10 个工作日；\n\
             司龄满 3 年不满 6 年：每年 15 个工作日。",
            "maxSurge: 25%\nAnnual leave: 10 working days per year.",
        ];
        let table: &[(&str, &str, bool)] = &[
            // (question, claim, kept)
            // The week's 40 hours are not the core hours'.
            (
                "核心工作时间是几点到几点？",
                "核心工作时间是 40 小时 [1]。",
                false,
            ),
            (
                "核心工作时间是几点到几点？",
                "核心工作时间是 10:00—16:00 [1]。",
                true,
            ),
            // The 3 days are the leave one may take on probation, not the on-call allowance,
            // which another item states.
            (
                "What is the on-call allowance per week?",
                "The on-call allowance per week is 3 days [2].",
                false,
            ),
            (
                "What is the on-call allowance per week?",
                "The on-call allowance is CNY 300 per week [3].",
                true,
            ),
            (
                "How long is the probation period?",
                "The probation period is 3 months [2].",
                true,
            ),
            // The subject may be partly in the sentence before (年假 in the lead-in).
            (
                "新员工有多少天年假？",
                "新员工每年有 10 个工作日年假 [4]。",
                true,
            ),
            (
                "新员工有多少天年假？",
                "新员工每年有 15 个工作日年假 [4]。",
                false,
            ),
            // A word of the question no item uses ("vacation") cannot tell sentences apart.
            (
                "How many vacation days do I get?",
                "You get 10 vacation days per year [5].",
                true,
            ),
            (
                "What is the default maxSurge?",
                "The default maxSurge is 25% [5].",
                true,
            ),
        ];
        for (question, claim, kept) in table {
            let c = check(claim, &evidence, question);
            assert_eq!(!c.answer.is_empty(), *kept, "{question} {claim}: {c:?}");
        }
    }

    #[test]
    fn the_values_a_sentence_lists_from_a_query_result_are_its_rows() {
        let rows = "Project=Telemetry Ingest, 项目名称=遥测数据接入\n\
                    Project=Dock Charging Protocol, 项目名称=充电桩通信协议\n\
                    Project=Customer Portal, 项目名称=客户门户";
        let text = format!("The query `SELECT * FROM projects` returned: {rows}");
        let items = [Shown {
            title: "SQL: projects.xlsx › Projects",
            text: &text,
            data: Some(rows),
        }];
        let table: &[(&str, bool)] = &[
            (
                "项目名称包括: 遥测数据接入, 充电桩通信协议, 客户门户 [1]。",
                true,
            ),
            (
                "项目名称包括: 遥测数据接入, 检电充电协议, 客户门户 [1]。",
                false,
            ),
            (
                "The projects in prod are Telemetry Ingest, Dock Charging Protocol and Customer Portal [1].",
                true,
            ),
            (
                "The projects in prod are Telemetry Ingest, Dock Charger Protocol, and Customer Portal [1].",
                false,
            ),
            (
                "根据查询结果，\"遥测数据接入\"、“充电桩通信协议”和“客户门户”都在 prod [1]。",
                true,
            ),
            // Two items are not a list the words around them tell apart.
            ("遥测数据接入和客户门户都在 prod [1]。", true),
        ];
        for (answer, kept) in table {
            let c = check_items(answer, &items, "哪些项目在 prod 环境？");
            assert_eq!(!c.answer.is_empty(), *kept, "{answer}: {c:?}");
        }
    }

    #[test]
    fn a_claim_without_figures_is_made_of_its_items_words() {
        let evidence = [
            "司龄不满 3 年（含新员工）：每年 10 个工作日；",
            "公司支持弹性上班：上班时间可在 8:00 至 10:00 之间自行安排。",
            "Unused days beyond that are not paid out, except on leaving the company.",
            "Backups are encrypted at rest and kept for 35 days.",
        ];
        let table: &[(&str, &str, &str)] = &[
            // (claim, question, kept)
            ("公司有班车 [2]。", "公司有班车吗？", ""),
            ("公司有健身房 [1]。", "公司有健身房吗？", ""),
            (
                "There is a company shuttle bus [3].",
                "Is there a company shuttle bus?",
                "",
            ),
            (
                "Backups are encrypted [4].",
                "Are backups encrypted?",
                "Backups are encrypted [4].",
            ),
            (
                "公司支持弹性上班 [2]。",
                "可以弹性上班吗？",
                "公司支持弹性上班 [2]。",
            ),
        ];
        for (claim, question, kept) in table {
            let c = check(claim, &evidence, question);
            assert_eq!(c.answer, *kept, "{claim}: {c:?}");
        }
    }

    #[test]
    fn a_figure_comes_from_the_sentence_about_what_was_asked() {
        let evidence = [
            "Component: api-gateway; Namespace: edge; Memory limit: 512Mi",
            "Component: fleet-scheduler; Namespace: fleet; Memory limit: 4Gi",
            "上海每晚 CNY 600。",
        ];
        let question = "What is the memory limit of fleet-scheduler?";
        let table: &[(&str, &str)] = &[
            // The other component's row, cited or attributed, is cut.
            ("Memory limit: 512Mi [1].", ""),
            ("The memory limit is 512Mi.", ""),
            // The asked component's row holds the figure.
            (
                "The memory limit of fleet-scheduler is 4Gi [2].",
                "The memory limit of fleet-scheduler is 4Gi [2].",
            ),
            // A sentence in the other language is compared only with its own language's.
            ("上海每晚 CNY 600 [3]。", "上海每晚 CNY 600 [3]。"),
        ];
        for (answer, kept) in table {
            let c = check(answer, &evidence, question);
            assert_eq!(c.answer, *kept, "{answer}: {c:?}");
        }
    }

    #[test]
    fn a_sentence_copied_whole_is_its_items_without_a_marker() {
        let evidence = [
            "3. Rolling updates\nmaxSurge: 25% — at most a quarter of extra pods are created during a rollout.\n\
             Service: api-gateway; CPU limit: 2; Memory limit: 1Gi",
            "2.1 步骤\n1. 在告警工具中确认告警：SEV1 须在 5 分钟内确认。\n2. 打开事件频道。",
            "注意：生产环境（prod）的变更窗口为每周二、周四 14:00–17:00（北京时间）。",
        ];
        let question = "What is the default maxSurge?";
        let table: &[(&str, &str, &[usize])] = &[
            // (draft, kept, cited)
            (
                "maxSurge: 25% — at most a quarter of extra pods are created during a rollout.",
                "maxSurge: 25% — at most a quarter of extra pods are created during a rollout. [1]",
                &[1],
            ),
            // Spacing, the end's punctuation and a list item's number do not make it another
            // sentence.
            (
                "1. 在告警工具中确认告警：SEV1 须在 5 分钟内确认",
                "1. 在告警工具中确认告警：SEV1 须在 5 分钟内确认 [2]",
                &[2],
            ),
            // Copied whole but cited to an item that does not hold it: the holder's.
            (
                "maxSurge: 25% — at most a quarter of extra pods are created during a rollout [2].",
                "maxSurge: 25% — at most a quarter of extra pods are created during a rollout. [1]",
                &[1],
            ),
            // Without an aside that opens it, a sentence says the same.
            (
                "生产环境（prod）的变更窗口为每周二、周四 14:00–17:00（北京时间）。",
                "生产环境（prod）的变更窗口为每周二、周四 14:00–17:00（北京时间）[3]。",
                &[3],
            ),
            // A rewording with a word the sentence does not use is still an uncited claim;
            // and a figure from a sentence about something other than what was asked (the
            // memory limit, asked for maxSurge) is no answer, however it is written.
            ("The memory limit is 1Gi for every service.", "", &[]),
            ("Memory limit: 1Gi", "", &[]),
            (
                "25% — at most a quarter of extra pods are created during a rollout.",
                "25% — at most a quarter of extra pods are created during a rollout. [1]",
                &[1],
            ),
            (
                "maxSurge is 25%, so at most a quarter of extra pods are created.",
                "maxSurge is 25%, so at most a quarter of extra pods are created. [1]",
                &[1],
            ),
            // Beside a sentence the check cuts, a copy stands on its own: what was shown of a
            // streamed answer is never taken back.
            (
                "报销单要在 30 天内提交。在告警工具中确认告警：SEV1 须在 5 分钟内确认。",
                "在告警工具中确认告警：SEV1 须在 5 分钟内确认[2]。",
                &[2],
            ),
            (
                "在告警工具中确认告警：SEV1 须在 5 分钟内确认。maxSurge is 25% [1].",
                "在告警工具中确认告警：SEV1 须在 5 分钟内确认[2]。maxSurge is 25% [1].",
                &[2, 1],
            ),
        ];
        for (draft, kept, cited) in table {
            let c = check(draft, &evidence, question);
            assert_eq!(c.answer, *kept, "{draft}: {c:?}");
            assert_eq!(c.cited, *cited, "{draft}");
        }
    }

    #[test]
    fn moved_markers_and_spacing_are_the_same_words() {
        let table: &[(&str, &str, bool)] = &[
            (
                "Leave is 15 days. It rises later. [1]",
                "Leave is 15 days. [1] It rises later. [1]",
                true,
            ),
            ("试用期为三个月。[1]", "试用期为三个月[1]。", true),
            ("A.\n1. B [1, 2]", "A. 1. B [1][2]", true),
            (
                "Leave is 15 days. This is stated in [1].",
                "Leave is 15 days. [1]",
                false,
            ),
            (
                "Leave is 15 days [1]. It rises.",
                "Leave is 15 days [1].",
                false,
            ),
            ("See [the table] [1].", "See [the table] [1].", true),
            ("See [the table].", "See .", false),
        ];
        for (streamed, checked, same) in table {
            assert_eq!(same_words(streamed, checked), *same, "{streamed}");
        }
        // Moved or repeated markers cite the same; a marker the check added does not.
        assert!(same_citations(
            "Leave is 15 days. It rises later. [1]",
            "Leave is 15 days. [1] It rises later. [1]"
        ));
        assert!(!same_citations(
            "maxSurge: 25% — at most a quarter of extra pods.",
            "maxSurge: 25% — at most a quarter of extra pods. [1]"
        ));
    }

    #[test]
    fn figures_are_read_as_written() {
        let table: &[(&str, &[(f64, i32)])] = &[
            ("10 working days", &[(10.0, 0)]),
            ("Budget: 1,200,000 yuan", &[(1_200_000.0, 0)]),
            ("started 2024-05-06", &[(2024.0, 0), (5.0, 0), (6.0, 0)]),
            ("avg 4.4567 ms.", &[(4.4567, 4)]),
            ("ends at 10.", &[(10.0, 0)]),
            ("1. New staff get 10 days", &[(10.0, 0)]),
            ("3、试用期 3 个月", &[(3.0, 0)]),
            ("均有３个月", &[(3.0, 0)]),
            ("10,20 and 30", &[(10.0, 0), (20.0, 0), (30.0, 0)]),
            // Chinese numerals that count something.
            ("三个月", &[(3.0, 0)]),
            ("这三个环境中有两个正在使用", &[(3.0, 0), (2.0, 0)]),
            ("每年十五天，最多一百二十元", &[(15.0, 0), (120.0, 0)]),
            ("二〇二四年起", &[(2024.0, 0)]),
            ("试用期 3 个月，可延长两次", &[(3.0, 0), (2.0, 0)]),
            // Not counts: an ordinal, a lone 一, a range, a magnitude, words, a weekday.
            ("第三步：需要一个审批，同一人不可", &[]),
            ("三四天内", &[]),
            ("五十万元", &[]),
            ("三角形十分重要，周三下午", &[]),
            // A name's digits are the name's.
            ("SEV2 within 15 minutes", &[(15.0, 0)]),
            ("p99 latency in cn-east-2, v3", &[]),
            ("1Gi and 500m", &[(1.0, 0), (500.0, 0)]),
        ];
        for (text, want) in table {
            let got: Vec<(f64, i32)> = figures(text)
                .iter()
                .map(|f| (f.value, f.decimals))
                .collect();
            assert_eq!(got, *want, "{text}");
        }
    }

    #[test]
    fn a_figure_must_stand_in_what_the_sentence_cites() {
        let evidence = [
            "New employees get 10 working days per year.",
            "Secondary caregivers receive 20 working days of paid leave.",
            "The query `SELECT AVG(Total) FROM Invoice` returned: AVG(Total)=5.651941747572815",
        ];
        let table: &[(&str, &str, &str)] = &[
            // (answer, question, kept answer)
            (
                "New employees get 10 working days [1].",
                "",
                "New employees get 10 working days [1].",
            ),
            // The right figure cited to the wrong item: attributed to the item that says it.
            (
                "New employees get 10 working days [2].",
                "",
                "New employees get 10 working days. [1]",
            ),
            // A figure from nowhere.
            ("New employees get 2 weeks of leave [1].", "", ""),
            // Either cited item may hold it.
            (
                "New employees get 10 working days [1][2].",
                "",
                "New employees get 10 working days [1][2].",
            ),
            // Rounded from the result.
            (
                "The average invoice total is 5.65 [3].",
                "",
                "The average invoice total is 5.65 [3].",
            ),
            ("The average invoice total is 5.70 [3].", "", ""),
            // Restating the question's own figure is not a claim from nowhere.
            (
                "No: new employees get 10 working days, not 15 [1].",
                "Do new employees get 15 days?",
                "No: new employees get 10 working days, not 15 [1].",
            ),
            (
                "新员工每年有 10 个工作日年假[1]。",
                "",
                "新员工每年有 10 个工作日年假[1]。",
            ),
            ("新员工每年有 12 个工作日年假[1]。", "", ""),
        ];
        for (answer, question, kept) in table {
            let c = check(answer, &evidence, question);
            assert_eq!(c.answer, *kept, "{answer}");
        }
    }
}
