//! Agent memory (seeds 001, 003): what users say about themselves in conversations —
//! preferences, habits, background, constraints — kept as the user's own `user_profile`
//! knowledge items (so they share the items' storage, visibility, versions and search: not a
//! second system), addressable as `ctx://user/{user}/memories/...` nodes with an L0 abstract,
//! an L1 overview and the L2 content, listable and deletable by their owner, and loaded as the
//! user's profile when a conversation starts.
//!
//! Extraction here is by rules for explicit first-person statements in English and Chinese
//! ("I prefer…", "我习惯…"); a candidate close to an existing memory of the same kind confirms
//! it (confidence grows) instead of creating a duplicate.

use std::collections::BTreeMap;

use knowhub_authz::RequestContext;
use serde::Serialize;

use crate::knowledge::{
    KnowledgeItem, KnowledgeListOptions, KnowledgeUpdate, NewKnowledge, jaccard, shingle_set,
};
use crate::{Engine, EngineError, Result};

/// The kinds of memory the rules extract.
pub const MEMORY_KINDS: &[&str] = &["preference", "habit", "background", "constraint"];
/// The knowledge type memories are stored as (seed 001's special `user_profile`).
const PROFILE_TYPE: &str = "user_profile";
/// The tag holding a memory's kind.
const KIND_TAG: &str = "memory";
/// Confidence of a new memory, and what each confirmation adds (up to 1).
const NEW_CONFIDENCE: f64 = 0.6;
const CONFIRM_STEP: f64 = 0.15;
/// Character-3-gram Jaccard above which a candidate restates an existing memory.
const SAME_MEMORY: f64 = 0.55;
/// Longest statement kept as a memory (characters).
const MAX_STATEMENT: usize = 240;

/// A memory found in a text, not yet stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MemoryCandidate {
    /// One of [`MEMORY_KINDS`].
    pub kind: &'static str,
    /// The user's statement, as they made it.
    pub statement: String,
}

/// What committing a conversation did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct MemoryCommit {
    /// Candidates found in the user's messages.
    pub candidates: usize,
    /// New memories.
    pub created: Vec<MemoryNode>,
    /// Existing memories the conversation confirmed (confidence raised).
    pub confirmed: Vec<MemoryNode>,
}

/// A memory as an addressable node (seed 003 §4).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MemoryNode {
    /// `ctx://user/{user}/memories/preferences/{id}` (preferences, habits, constraints) or
    /// `ctx://user/{user}/memories/entities/{id}` (background).
    pub uri: String,
    /// The knowledge item behind it.
    pub id: String,
    pub kind: String,
    /// L0: one line (≤ 80 characters).
    pub abstract_text: String,
    /// L1: the kind, confidence and how often it was confirmed.
    pub overview: String,
    /// L2: the full statement.
    pub content: String,
    pub confidence: f64,
    /// Times a later conversation restated it.
    pub confirmations: u32,
    pub updated_at_ms: i64,
}

/// Rules for explicit first-person statements: (kind, phrases that start the claim).
/// English phrases are matched lower-cased at the start of a sentence; Chinese ones anywhere
/// in the first few characters (Chinese sentences often open with a time or place).
const EN_RULES: &[(&str, &[&str])] = &[
    (
        "constraint",
        &[
            "i can't ",
            "i cannot ",
            "i'm not allowed",
            "i am not allowed",
            "please don't ",
            "please do not ",
            "never give me",
            "never use",
            "don't use",
            "do not use",
            "i'm allergic",
            "i am allergic",
        ],
    ),
    (
        "preference",
        &[
            "i prefer ",
            "i'd prefer ",
            "i would prefer ",
            "i like ",
            "i love ",
            "i'd rather ",
            "please always ",
            "always answer",
            "always reply",
            "i want answers",
            "my preferred ",
            "my favourite ",
            "my favorite ",
        ],
    ),
    (
        "habit",
        &[
            "i usually ",
            "i always ",
            "i normally ",
            "i tend to ",
            "i often ",
            "i typically ",
            "every morning i ",
            "every week i ",
        ],
    ),
    (
        "background",
        &[
            "i am a ",
            "i'm a ",
            "i am an ",
            "i'm an ",
            "i work as ",
            "i work at ",
            "i work in ",
            "i work on ",
            "i work for ",
            "my role is ",
            "my background is ",
            "my job is ",
            "i'm responsible for ",
            "i am responsible for ",
            "i manage ",
            "i lead ",
            "i'm based in ",
            "i am based in ",
        ],
    ),
];

const ZH_RULES: &[(&str, &[&str])] = &[
    (
        "constraint",
        &[
            "我不能",
            "我不吃",
            "我无法",
            "请不要",
            "不要用",
            "别用",
            "我对",
        ],
    ),
    (
        "preference",
        &[
            "我喜欢",
            "我更喜欢",
            "我偏好",
            "我倾向于",
            "我希望",
            "请总是",
            "请用",
            "我爱",
        ],
    ),
    (
        "habit",
        &[
            "我习惯",
            "我通常",
            "我一般",
            "我经常",
            "我总是",
            "我每天",
            "我平时",
        ],
    ),
    (
        "background",
        &[
            "我是",
            "我负责",
            "我的工作是",
            "我的背景是",
            "我从事",
            "我在",
            "我的职位是",
        ],
    ),
];

/// Words that make a Chinese sentence a question rather than a statement.
const ZH_QUESTION_ENDS: &[char] = &['吗', '呢', '么', '？', '?'];

/// Explicit first-person statements about the user in `text` (English and Chinese).
pub fn extract_explicit_memories(text: &str) -> Vec<MemoryCandidate> {
    let mut out: Vec<MemoryCandidate> = Vec::new();
    for sentence in split_sentences(text) {
        let statement = sentence.trim();
        if statement.is_empty() || is_question(statement) {
            continue;
        }
        if let Some(kind) = classify(statement) {
            let statement: String = statement.chars().take(MAX_STATEMENT).collect();
            if !out.iter().any(|c| c.statement == statement) {
                out.push(MemoryCandidate { kind, statement });
            }
        }
    }
    out
}

fn classify(statement: &str) -> Option<&'static str> {
    let lower = statement.to_lowercase();
    // Polite openers do not change what is said ("Just so you know, I prefer …").
    let lower = [
        "just so you know, ",
        "fyi, ",
        "by the way, ",
        "btw, ",
        "note: ",
        "also, ",
    ]
    .iter()
    .find_map(|p| lower.strip_prefix(p))
    .unwrap_or(&lower)
    .to_owned();
    for (kind, phrases) in EN_RULES {
        if phrases.iter().any(|p| lower.starts_with(p)) {
            return Some(kind);
        }
    }
    let head: String = statement.chars().take(12).collect();
    for (kind, phrases) in ZH_RULES {
        for p in *phrases {
            if let Some(pos) = head.find(p) {
                let after = &statement[pos + p.len()..];
                if zh_rule_holds(p, after) {
                    return Some(kind);
                }
            }
        }
    }
    None
}

/// Guards for the broad Chinese openers: "我是" must describe (not "我是不是"), "我在" must
/// say where one works (not "我在哪里"), "我对" must state an allergy or dislike.
fn zh_rule_holds(phrase: &str, after: &str) -> bool {
    match phrase {
        "我是" => !after.starts_with('不') && after.chars().count() >= 2,
        "我在" => ["工作", "部门", "团队", "负责", "公司", "组"]
            .iter()
            .any(|w| after.contains(w)),
        "我对" => ["过敏", "不感兴趣", "不喜欢"]
            .iter()
            .any(|w| after.contains(w)),
        _ => true,
    }
}

fn is_question(statement: &str) -> bool {
    let trimmed = statement.trim_end_matches(['.', '。', '!', '！', ' ']);
    if trimmed.ends_with(ZH_QUESTION_ENDS) {
        return true;
    }
    let lower = trimmed.to_lowercase();
    [
        "do i ",
        "am i ",
        "can i ",
        "should i ",
        "how ",
        "what ",
        "why ",
        "when ",
        "where ",
        "which ",
        "who ",
    ]
    .iter()
    .any(|q| lower.starts_with(q))
}

/// Sentences of a message (ASCII and CJK terminators, and line breaks).
fn split_sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        current.push(c);
        let ends = match c {
            '。' | '！' | '？' | '!' | '?' | '；' | ';' | '\n' => true,
            // A full stop ends a sentence when a space or the end follows (not "e.g.", "3.5").
            '.' => chars.peek().is_none_or(|n| n.is_whitespace()),
            _ => false,
        };
        if ends {
            let s = current.trim().to_owned();
            if !s.is_empty() {
                out.push(s);
            }
            current.clear();
        }
    }
    let s = current.trim().to_owned();
    if !s.is_empty() {
        out.push(s);
    }
    out
}

fn node(item: &KnowledgeItem) -> MemoryNode {
    let kind = item
        .tags
        .get(KIND_TAG)
        .cloned()
        .unwrap_or_else(|| "preference".into());
    let folder = if kind == "background" {
        "entities"
    } else {
        "preferences"
    };
    let mut abstract_text: String = item.content.chars().take(80).collect();
    if item.content.chars().count() > 80 {
        abstract_text.push('…');
    }
    MemoryNode {
        uri: format!("ctx://user/{}/memories/{folder}/{}", item.owner, item.id),
        id: item.id.clone(),
        overview: format!(
            "{kind} · confidence {:.2} · confirmed {} time(s)",
            item.eval.confidence, item.eval.helpful
        ),
        abstract_text,
        content: item.content.clone(),
        confidence: item.eval.confidence,
        confirmations: item.eval.helpful,
        updated_at_ms: item.updated_at_ms,
        kind,
    }
}

impl Engine {
    /// The caller's memories, most confident first.
    pub fn memories(&self, ctx: &RequestContext) -> Result<Vec<MemoryNode>> {
        let mut nodes: Vec<MemoryNode> = self.own_memory_items(ctx)?.iter().map(node).collect();
        nodes.sort_by(|a, b| {
            b.confidence
                .total_cmp(&a.confidence)
                .then(b.updated_at_ms.cmp(&a.updated_at_ms))
        });
        Ok(nodes)
    }

    /// Memory items the caller owns (memories are never shared, even with administrators'
    /// lists: each user's profile is their own).
    fn own_memory_items(&self, ctx: &RequestContext) -> Result<Vec<KnowledgeItem>> {
        let options = KnowledgeListOptions {
            types: vec![PROFILE_TYPE.into()],
            owner: Some(ctx.user.to_string()),
            limit: 1000,
            ..KnowledgeListOptions::default()
        };
        Ok(self
            .knowledge_list(ctx, &options)?
            .into_iter()
            .filter(|i| i.owner == ctx.user.as_str() && i.tags.contains_key(KIND_TAG))
            .collect())
    }

    /// One memory by its `ctx://` URI or item id (the caller's own only).
    pub fn memory_node(&self, ctx: &RequestContext, uri_or_id: &str) -> Result<MemoryNode> {
        let id = uri_or_id.rsplit('/').next().unwrap_or(uri_or_id);
        self.own_memory_items(ctx)?
            .iter()
            .find(|i| i.id == id)
            .map(node)
            .ok_or_else(|| EngineError::NotFound(format!("memory {uri_or_id}")))
    }

    /// Forgets one of the caller's memories.
    pub fn memory_delete(&self, ctx: &RequestContext, uri_or_id: &str) -> Result<()> {
        let found = self.memory_node(ctx, uri_or_id)?;
        self.knowledge_delete(ctx, &found.id)
    }

    /// Stores what the caller said about themself in `messages` (their own words only):
    /// a statement close to an existing memory of the same kind confirms it, others become
    /// new memories private to the caller. `origin` names the conversation (provenance).
    pub fn memory_commit(
        &self,
        ctx: &RequestContext,
        messages: &[String],
        origin: &str,
    ) -> Result<MemoryCommit> {
        let mut existing = self.own_memory_items(ctx)?;
        let mut report = MemoryCommit::default();
        for message in messages {
            for candidate in extract_explicit_memories(message) {
                report.candidates += 1;
                let shingles = shingle_set(&candidate.statement);
                let same = existing
                    .iter()
                    .filter(|i| i.tags.get(KIND_TAG).map(String::as_str) == Some(candidate.kind))
                    .map(|i| (jaccard(&shingles, &shingle_set(&i.content)), i))
                    .filter(|(sim, _)| *sim >= SAME_MEMORY)
                    .max_by(|a, b| a.0.total_cmp(&b.0))
                    .map(|(_, i)| i.id.clone());
                if let Some(id) = same {
                    let Some(current) = existing.iter().find(|i| i.id == id) else {
                        continue;
                    };
                    let update = KnowledgeUpdate {
                        confidence: Some((current.eval.confidence + CONFIRM_STEP).min(1.0)),
                        add_helpful_case: Some(knowhub_store::FeedbackCase {
                            task: "restated in a conversation".into(),
                            outcome: "confirmed".into(),
                            reason: candidate.statement.clone(),
                            timestamp: String::new(),
                            message_id: origin.to_owned(),
                        }),
                        ..KnowledgeUpdate::default()
                    };
                    let updated = self.knowledge_update(ctx, &id, &update, None)?;
                    existing.retain(|i| i.id != id);
                    report.confirmed.retain(|n| n.id != id);
                    report.confirmed.push(node(&updated));
                    existing.push(updated);
                } else {
                    let mut tags = BTreeMap::new();
                    tags.insert(KIND_TAG.to_owned(), candidate.kind.to_owned());
                    tags.insert("origin".to_owned(), "rule".to_owned());
                    let saved = self.knowledge_save(
                        ctx,
                        NewKnowledge {
                            task: format!("about the user: {}", candidate.kind),
                            content: candidate.statement.clone(),
                            types: vec![PROFILE_TYPE.into()],
                            tags,
                            scopes: Vec::new(),
                            message_id: origin.to_owned(),
                            confidence: Some(NEW_CONFIDENCE),
                            ..NewKnowledge::default()
                        },
                    )?;
                    report.created.push(node(&saved));
                    existing.push(saved);
                }
            }
        }
        Ok(report)
    }

    /// Commits the user's messages of one of their conversations.
    pub fn memory_commit_session(
        &self,
        ctx: &RequestContext,
        session_id: &str,
    ) -> Result<MemoryCommit> {
        let turns = self.session_turns(ctx, session_id, 1000)?;
        let messages: Vec<String> = turns.into_iter().map(|t| t.question).collect();
        self.memory_commit(ctx, &messages, session_id)
    }

    /// The caller's memories most like `query` (character 3-grams, so Chinese and English
    /// both work; a memory containing the query outright ranks first), optionally of some
    /// kinds only. Each with its similarity in 0–1.
    pub fn memory_search(
        &self,
        ctx: &RequestContext,
        query: &str,
        kinds: &[String],
        top_k: usize,
    ) -> Result<Vec<(MemoryNode, f64)>> {
        let q = shingle_set(query);
        let needle = query.trim().to_lowercase();
        let mut hits: Vec<(MemoryNode, f64)> = self
            .memories(ctx)?
            .into_iter()
            .filter(|n| kinds.is_empty() || kinds.contains(&n.kind))
            .map(|n| {
                let overlap = jaccard(&q, &shingle_set(&n.content));
                let contains = !needle.is_empty() && n.content.to_lowercase().contains(&needle);
                let score = if contains { 1.0 } else { overlap };
                (n, score)
            })
            .filter(|(_, score)| *score > 0.0)
            .collect();
        hits.sort_by(|a, b| {
            b.1.total_cmp(&a.1)
                .then(b.0.confidence.total_cmp(&a.0.confidence))
        });
        hits.truncate(top_k.clamp(1, 100));
        Ok(hits)
    }

    /// The caller's profile for the agent: their memories' statements, most confident first
    /// (at most `limit`).
    pub fn user_profile(&self, ctx: &RequestContext, limit: usize) -> Result<Vec<String>> {
        Ok(self
            .memories(ctx)?
            .into_iter()
            .take(limit)
            .map(|n| n.content)
            .collect())
    }
}

#[cfg(test)]
#[path = "memory_tests.rs"]
mod tests;
