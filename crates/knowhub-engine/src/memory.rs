//! Agent memory (seeds 001, 003): what users say about themselves in conversations —
//! preferences, habits, background, constraints — kept as the user's own `user_profile`
//! knowledge items (so they share the items' storage, visibility, versions and search: not a
//! second system), addressable as `ctx://user/{user}/memories/...` nodes with an L0 abstract,
//! an L1 overview and the L2 content, listable and deletable by their owner, and loaded as the
//! user's profile when a conversation starts.
//!
//! Extraction is by rules for explicit first-person statements in English and Chinese
//! ("I prefer…", "我习惯…") and, when the front end hands the commit a [`MemoryModel`], by a
//! language model too: it finds what the rules cannot ("Long paragraphs are hard to read on my
//! phone") and strategies from completed tasks (`case` memories, stored as the user's
//! `strategy` knowledge items under `ctx://agent/{agent}/memories/cases/`). Its proposals
//! must be grounded in what was said (see `memory_model.rs`). A candidate close to an existing
//! memory of the same kind confirms it (confidence grows) instead of creating a duplicate; when
//! it adds something and a model is there, the model merges the two statements (the previous
//! version is kept, as for every knowledge edit). A commit may name a project: its memories
//! apply to that project's conversations only (plus everything general).
//!
//! Group spaces (seed 003 §13.5–13.6): a commit made *with a group* also finds shared
//! conclusions ("We decided…", "我们决定…": decision / consensus / group_knowledge) and routes
//! each candidate by its category — personal ones to the committer's private memories (only
//! what the committer said themself: another speaker's preferences are theirs to commit),
//! shared ones to the group's space (`group_memory` items scoped `group:<id>`, visible to its
//! members, written by members who may write), `ask` ones back to the caller unwritten.
//! Searches may span the private and the group space.

use std::collections::BTreeMap;

use knowhub_authz::{GroupId, RequestContext};
use knowhub_store::GroupSpaceRecord;
use serde::{Deserialize, Serialize};

use crate::knowledge::{
    KnowledgeItem, KnowledgeListOptions, KnowledgeUpdate, NewKnowledge, jaccard, shingle_set,
};
use crate::memory_model::{CASE_KIND, MemoryModel, Rejection, containment, ground, restates};
use crate::{Access, Engine, EngineError, Result};

/// The kinds of personal memory the rules extract.
pub const MEMORY_KINDS: &[&str] = &["preference", "habit", "background", "constraint"];
/// The kinds of shared memory the rules extract from group conversations (seed 003 §13.5.1's
/// group categories; `shared_entity` is accepted in options, the rules do not produce it).
pub const GROUP_MEMORY_KINDS: &[&str] = &["decision", "consensus", "group_knowledge"];
/// The knowledge type memories are stored as (seed 001's special `user_profile`).
const PROFILE_TYPE: &str = "user_profile";
/// The knowledge type of a task case (seed 002's `strategy`: searchable as experience).
const CASE_TYPE: &str = "strategy";
/// The tag naming the agent a case was learned by (the request's agent, else `copilot`).
const AGENT_TAG: &str = "agent";
/// The tag naming the project a memory applies to.
const PROJECT_TAG: &str = "project";
/// A merged statement is used only when this share of it comes from the two it merges.
const MERGE_GROUNDED: f64 = 0.6;
/// The knowledge type of a group space's shared memories.
pub(crate) const GROUP_MEMORY_TYPE: &str = "group_memory";
/// The tag naming the group a shared memory belongs to.
const GROUP_TAG: &str = "group";
/// The tag holding a memory's kind.
const KIND_TAG: &str = "memory";
/// Confidence of a new memory, and what each confirmation adds (up to 1).
const NEW_CONFIDENCE: f64 = 0.6;
const CONFIRM_STEP: f64 = 0.15;
/// Character-3-gram Jaccard above which a candidate restates an existing memory.
const SAME_MEMORY: f64 = 0.55;
/// Longest statement kept as a memory (characters).
pub(crate) const MAX_STATEMENT: usize = 240;

/// A memory found in a text, not yet stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MemoryCandidate {
    /// One of [`MEMORY_KINDS`] or [`GROUP_MEMORY_KINDS`].
    pub kind: &'static str,
    /// The statement, as it was made.
    pub statement: String,
}

/// One message of a conversation to commit.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct CommitMessage {
    pub content: String,
    /// Who said it, in a group conversation; `None` = the caller.
    #[serde(default)]
    pub user_id: Option<String>,
    /// `user` (default) or `assistant`. The assistant's words are context for the model
    /// (what task was done), never a person's memory.
    #[serde(default)]
    pub role: Option<String>,
}

impl CommitMessage {
    /// A message the caller wrote.
    pub fn mine(content: impl Into<String>) -> Self {
        CommitMessage {
            content: content.into(),
            ..CommitMessage::default()
        }
    }

    /// A message of the assistant.
    pub fn assistant(content: impl Into<String>) -> Self {
        CommitMessage {
            content: content.into(),
            role: Some("assistant".into()),
            ..CommitMessage::default()
        }
    }

    pub fn is_assistant(&self) -> bool {
        self.role.as_deref() == Some("assistant")
    }
}

/// How one commit extracts and where it writes (all optional).
#[derive(Clone, Copy, Default)]
pub struct CommitWith<'a> {
    /// Route shared conclusions to this group (seed 003 §13.5).
    pub group: Option<&'a GroupCommitOptions>,
    /// The memories apply within this project (the caller must belong to it).
    pub project: Option<&'a str>,
    /// A language model that proposes memories beyond the rules and merges restatements.
    pub model: Option<&'a dyn MemoryModel>,
}

impl std::fmt::Debug for CommitWith<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CommitWith")
            .field("group", &self.group)
            .field("project", &self.project)
            .field("model", &self.model.is_some())
            .finish()
    }
}

/// Seed 003 §13.5.1 `GroupCommitOptions`: which categories go where.
#[derive(Debug, Clone, Deserialize)]
pub struct GroupCommitOptions {
    pub group_id: String,
    /// Categories kept private. `profile` stands for background, habit and constraint.
    #[serde(default = "default_private_categories")]
    pub private_categories: Vec<String>,
    /// Categories written to the group space.
    #[serde(default = "default_group_categories")]
    pub group_categories: Vec<String>,
    /// Where a category in neither list goes: `private` (default), `group`, or `ask` (not
    /// written; returned for the caller to decide).
    #[serde(default = "default_scope")]
    pub default_scope: String,
}

fn default_private_categories() -> Vec<String> {
    ["profile", "preference", "personal_entity"]
        .map(String::from)
        .to_vec()
}

fn default_group_categories() -> Vec<String> {
    ["group_knowledge", "shared_entity", "decision", "consensus"]
        .map(String::from)
        .to_vec()
}

fn default_scope() -> String {
    "private".into()
}

impl GroupCommitOptions {
    /// The seed's defaults for `group_id`.
    pub fn new(group_id: &str) -> Self {
        GroupCommitOptions {
            group_id: group_id.to_owned(),
            private_categories: default_private_categories(),
            group_categories: default_group_categories(),
            default_scope: default_scope(),
        }
    }

    fn lists(list: &[String], kind: &str) -> bool {
        list.iter().any(|c| {
            c == kind
                || (c == "profile" && ["background", "habit", "constraint"].contains(&kind))
                || (c == "personal_entity" && kind == "background")
        })
    }

    /// `private`, `group` or `ask` for a candidate of `kind`.
    fn target(&self, kind: &str) -> &str {
        if Self::lists(&self.group_categories, kind) {
            "group"
        } else if Self::lists(&self.private_categories, kind) {
            "private"
        } else {
            self.default_scope.as_str()
        }
    }
}

/// A candidate a commit did not write, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SkippedCandidate {
    pub kind: String,
    pub statement: String,
    /// `ask` (the options asked for confirmation), `other_speaker`, `no_group`, or for a
    /// model's proposal `ungrounded` (nobody said it), `question` (it rests on a question),
    /// `unconfirmed` (a task case the user did not say worked), `unknown_kind`.
    pub reason: String,
}

/// What committing a conversation did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct MemoryCommit {
    /// Candidates found in the messages.
    pub candidates: usize,
    /// New memories.
    pub created: Vec<MemoryNode>,
    /// Existing memories the conversation confirmed (confidence raised).
    pub confirmed: Vec<MemoryNode>,
    /// Existing memories a restatement added to (merged by the model; counted in
    /// `confirmed` too).
    pub merged: Vec<String>,
    /// Candidates not written.
    pub skipped: Vec<SkippedCandidate>,
    /// Proposals the model made (before grounding), when one was given.
    pub model_proposals: usize,
    /// Why the model could not be used (the rules' candidates were still committed).
    pub model_error: Option<String>,
}

/// Which spaces a memory search covers.
#[derive(Debug, Clone, Default)]
pub struct MemorySpaces {
    /// Also search this group's shared memories (members and administrators).
    pub group_id: Option<String>,
    /// Leave the caller's private memories out (only meaningful with a group).
    pub exclude_private: bool,
}

/// A memory as an addressable node (seed 003 §4).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MemoryNode {
    /// `ctx://user/{user}/memories/preferences/{id}` (preferences, habits, constraints),
    /// `ctx://user/{user}/memories/entities/{id}` (background), a task case
    /// `ctx://agent/{agent}/memories/cases/{id}`, or for a group's shared memories
    /// `ctx://group/{space}/memories/{kind}/{id}`.
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
    /// The group space it belongs to; `None` for a private memory.
    pub group_id: Option<String>,
    /// Who recorded it.
    pub owner: String,
    /// The project it applies to; `None` = everywhere.
    pub project: Option<String>,
    /// `rule` (an explicit statement) or `llm` (proposed by a language model, grounded).
    pub found_by: String,
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

/// Shared conclusions of a group conversation (checked before the personal rules: a sentence
/// that opens with "we decided" is the group's, whatever follows).
const GROUP_EN_RULES: &[(&str, &[&str])] = &[
    (
        "decision",
        &[
            "we decided ",
            "we've decided ",
            "we have decided ",
            "we will go with ",
            "we'll go with ",
            "we are going with ",
            "we're going with ",
            "let's go with ",
            "the team decided ",
            "it was decided ",
            "decision: ",
            "decided: ",
            "final decision: ",
        ],
    ),
    (
        "consensus",
        &[
            "we agreed ",
            "we've agreed ",
            "we have agreed ",
            "we all agree ",
            "we agree ",
            "everyone agreed ",
            "everyone agrees ",
            "the team agreed ",
            "agreed: ",
            "consensus: ",
        ],
    ),
    (
        "group_knowledge",
        &[
            "conclusion: ",
            "for the record, ",
            "the deadline is ",
            "our deadline is ",
            "the release date is ",
            "the launch date is ",
            "our team uses ",
            "the project uses ",
            "our standard is ",
        ],
    ),
];

const GROUP_ZH_RULES: &[(&str, &[&str])] = &[
    (
        "decision",
        &[
            "我们决定",
            "大家决定",
            "团队决定",
            "最终决定",
            "决定：",
            "决定:",
            "决议：",
            "就这么定了",
            "定下来了",
        ],
    ),
    (
        "consensus",
        &[
            "我们同意",
            "大家同意",
            "一致同意",
            "达成共识",
            "共识：",
            "共识:",
        ],
    ),
    (
        "group_knowledge",
        &[
            "结论：",
            "结论:",
            "结论是",
            "截止日期是",
            "截止时间是",
            "上线时间是",
            "发布日期是",
            "我们团队用",
            "项目使用",
        ],
    ),
];

/// Words that make a Chinese sentence a question rather than a statement.
const ZH_QUESTION_ENDS: &[char] = &['吗', '呢', '么', '？', '?'];

/// Explicit first-person statements about the user in `text` (English and Chinese).
pub fn extract_explicit_memories(text: &str) -> Vec<MemoryCandidate> {
    extract(text, false)
}

/// Like [`extract_explicit_memories`], plus the shared conclusions of a group conversation
/// ([`GROUP_MEMORY_KINDS`]).
pub fn extract_group_conversation_memories(text: &str) -> Vec<MemoryCandidate> {
    extract(text, true)
}

fn extract(text: &str, group: bool) -> Vec<MemoryCandidate> {
    let mut out: Vec<MemoryCandidate> = Vec::new();
    for sentence in split_sentences(text) {
        let statement = sentence.trim();
        if statement.is_empty() || is_question(statement) {
            continue;
        }
        let kind = if group {
            classify_with(statement, GROUP_EN_RULES, GROUP_ZH_RULES)
                .or_else(|| classify_with(statement, EN_RULES, ZH_RULES))
        } else {
            classify_with(statement, EN_RULES, ZH_RULES)
        };
        if let Some(kind) = kind {
            let statement: String = statement.chars().take(MAX_STATEMENT).collect();
            if !out.iter().any(|c| c.statement == statement) {
                out.push(MemoryCandidate { kind, statement });
            }
        }
    }
    out
}

fn classify_with(
    statement: &str,
    en_rules: &'static [(&'static str, &'static [&'static str])],
    zh_rules: &'static [(&'static str, &'static [&'static str])],
) -> Option<&'static str> {
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
    for (kind, phrases) in en_rules {
        if phrases.iter().any(|p| lower.starts_with(p)) {
            return Some(kind);
        }
    }
    let head: String = statement.chars().take(12).collect();
    for (kind, phrases) in zh_rules {
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

pub(crate) fn is_question(statement: &str) -> bool {
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
pub(crate) fn split_sentences(text: &str) -> Vec<String> {
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

fn node(account: &str, item: &KnowledgeItem) -> MemoryNode {
    let kind = item
        .tags
        .get(KIND_TAG)
        .cloned()
        .unwrap_or_else(|| "preference".into());
    let group_id = item
        .types
        .iter()
        .any(|t| t == GROUP_MEMORY_TYPE)
        .then(|| item.tags.get(GROUP_TAG).cloned())
        .flatten();
    let folder = if kind == "background" {
        "entities"
    } else {
        "preferences"
    };
    let uri = match &group_id {
        Some(group) => format!(
            "ctx://group/{}/memories/{kind}/{}",
            crate::groups::group_space_name(account, group),
            item.id
        ),
        None if kind == CASE_KIND => format!(
            "ctx://agent/{}/memories/cases/{}",
            item.tags.get(AGENT_TAG).map_or("copilot", String::as_str),
            item.id
        ),
        None => format!("ctx://user/{}/memories/{folder}/{}", item.owner, item.id),
    };
    let mut abstract_text: String = item.content.chars().take(80).collect();
    if item.content.chars().count() > 80 {
        abstract_text.push('…');
    }
    MemoryNode {
        uri,
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
        group_id,
        owner: item.owner.clone(),
        project: item.tags.get(PROJECT_TAG).cloned(),
        found_by: item
            .tags
            .get("origin")
            .cloned()
            .unwrap_or_else(|| "rule".into()),
    }
}

impl Engine {
    fn memory_node_of(&self, item: &KnowledgeItem) -> MemoryNode {
        node(self.account.as_str(), item)
    }

    /// The caller's memories, most confident first.
    pub fn memories(&self, ctx: &RequestContext) -> Result<Vec<MemoryNode>> {
        self.memories_as(&self.authorize(ctx)?)
    }

    /// [`Engine::memories`] with permissions already resolved.
    pub(crate) fn memories_as(&self, access: &Access) -> Result<Vec<MemoryNode>> {
        let mut nodes: Vec<MemoryNode> = self
            .own_memory_items_as(access)?
            .iter()
            .map(|i| self.memory_node_of(i))
            .collect();
        sort_nodes(&mut nodes);
        Ok(nodes)
    }

    /// A group's shared memories, most confident first (members and administrators; anyone
    /// else gets `NotFound`).
    pub fn group_memories(&self, ctx: &RequestContext, group_id: &str) -> Result<Vec<MemoryNode>> {
        let access = self.authorize(ctx)?;
        let (group, _) = self.visible_group(&access, group_id)?;
        self.group_memory_nodes(ctx, &group.id)
    }

    /// The shared memories of a group the caller was checked to see, most confident first.
    fn group_memory_nodes(&self, ctx: &RequestContext, group: &GroupId) -> Result<Vec<MemoryNode>> {
        let mut nodes: Vec<MemoryNode> = self
            .group_memory_items(ctx, group)?
            .iter()
            .map(|i| self.memory_node_of(i))
            .collect();
        sort_nodes(&mut nodes);
        Ok(nodes)
    }

    /// Memory items the caller owns (memories are never shared, even with administrators'
    /// lists: each user's profile is their own).
    fn own_memory_items(&self, ctx: &RequestContext) -> Result<Vec<KnowledgeItem>> {
        self.own_memory_items_as(&self.authorize(ctx)?)
    }

    fn own_memory_items_as(&self, access: &Access) -> Result<Vec<KnowledgeItem>> {
        let ctx = &access.ctx;
        let options = KnowledgeListOptions {
            types: vec![PROFILE_TYPE.into(), CASE_TYPE.into()],
            owner: Some(ctx.user.to_string()),
            limit: 1000,
            ..KnowledgeListOptions::default()
        };
        // A strategy item is a memory only when a commit wrote it as a case (others are
        // knowledge the user saved).
        Ok(self
            .knowledge_list_as(access, &options)?
            .into_iter()
            .filter(|i| i.owner == ctx.user.as_str())
            .filter(|i| match i.tags.get(KIND_TAG) {
                Some(kind) => {
                    i.types.iter().any(|t| t == PROFILE_TYPE) || kind.as_str() == CASE_KIND
                }
                None => false,
            })
            .collect())
    }

    /// The shared memory items of a group the caller may see (the knowledge list applies the
    /// visibility rule: members, administrators).
    fn group_memory_items(
        &self,
        ctx: &RequestContext,
        group: &GroupId,
    ) -> Result<Vec<KnowledgeItem>> {
        let mut tags = BTreeMap::new();
        tags.insert(GROUP_TAG.to_owned(), group.to_string());
        let options = KnowledgeListOptions {
            types: vec![GROUP_MEMORY_TYPE.into()],
            scopes: vec![format!("group:{group}")],
            tags,
            limit: 1000,
            ..KnowledgeListOptions::default()
        };
        Ok(self
            .knowledge_list(ctx, &options)?
            .into_iter()
            .filter(|i| i.tags.contains_key(KIND_TAG))
            .collect())
    }

    /// Deletes every shared memory of a group (used when the group is deleted).
    pub(crate) fn delete_group_memories(&self, group: &GroupId) -> Result<usize> {
        let mut store = self.store();
        let mut tags = BTreeMap::new();
        tags.insert(GROUP_TAG.to_owned(), group.to_string());
        let filter = knowhub_store::KnowledgeFilter {
            types: vec![GROUP_MEMORY_TYPE.into()],
            scopes: vec![format!("group:{group}")],
            tags,
            ..knowhub_store::KnowledgeFilter::default()
        };
        let items = store.list_knowledge(&filter, usize::MAX, 0)?;
        let mut n = 0;
        for item in items {
            if store.delete_knowledge(&item.id)? {
                n += 1;
            }
        }
        Ok(n)
    }

    /// One memory by its `ctx://` URI or item id: the caller's own, or a shared memory of a
    /// group they may see.
    pub fn memory_node(&self, ctx: &RequestContext, uri_or_id: &str) -> Result<MemoryNode> {
        let id = uri_or_id.rsplit('/').next().unwrap_or(uri_or_id);
        let missing = || EngineError::NotFound(format!("memory {uri_or_id}"));
        if let Some(group) = self.group_of_uri(ctx, uri_or_id)? {
            return self
                .group_memory_items(ctx, &group.id)?
                .iter()
                .find(|i| i.id == id)
                .map(|i| self.memory_node_of(i))
                .ok_or_else(missing);
        }
        if uri_or_id.starts_with("ctx://")
            && !uri_or_id.starts_with("ctx://user/")
            && !uri_or_id.starts_with("ctx://agent/")
        {
            return Err(missing());
        }
        if let Some(found) = self.own_memory_items(ctx)?.iter().find(|i| i.id == id) {
            return Ok(self.memory_node_of(found));
        }
        // A bare id may name a group memory the caller can see.
        if !uri_or_id.starts_with("ctx://") {
            let access = self.authorize(ctx)?;
            let groups = self.store().group_spaces(Some(&access.ctx.user))?;
            for g in groups {
                if let Some(found) = self
                    .group_memory_items(ctx, &g.id)?
                    .iter()
                    .find(|i| i.id == id)
                {
                    return Ok(self.memory_node_of(found));
                }
            }
        }
        Err(missing())
    }

    /// The group a `ctx://group/{space}/…` URI names, when the caller may see it (else
    /// `NotFound`); `None` for any other URI.
    fn group_of_uri(&self, ctx: &RequestContext, uri: &str) -> Result<Option<GroupSpaceRecord>> {
        let Some(rest) = uri.strip_prefix("ctx://group/") else {
            return Ok(None);
        };
        let space = rest.split('/').next().unwrap_or_default();
        let missing = || EngineError::NotFound(format!("memory space {uri}"));
        let group = self
            .store()
            .group_space_by_name(space)?
            .ok_or_else(missing)?;
        let access = self.authorize(ctx)?;
        self.visible_group(&access, group.id.as_str())
            .map_err(|_| missing())?;
        Ok(Some(group))
    }

    /// The memory nodes below a folder URI: `ctx://user/{me}/memories[/preferences|/entities]`
    /// or `ctx://group/{space}/memories[/{kind}]`. Another user's space, or a group the caller
    /// may not see, is `NotFound`.
    pub fn memory_children(&self, ctx: &RequestContext, uri: &str) -> Result<Vec<MemoryNode>> {
        let prefix = uri.trim_end_matches('/');
        let missing = || EngineError::NotFound(format!("memory folder {uri}"));
        let nodes = if let Some(group) = self.group_of_uri(ctx, prefix)? {
            let own = format!("ctx://group/{}/memories", group.space);
            if !(prefix == own || prefix.starts_with(&format!("{own}/"))) {
                return Err(missing());
            }
            self.group_memory_nodes(ctx, &group.id)?
        } else {
            let own = format!("ctx://user/{}/memories", ctx.user);
            // Case folders are named by agent; only the caller's own cases are listed.
            let agent_folder = prefix
                .strip_prefix("ctx://agent/")
                .and_then(|rest| rest.split_once('/'))
                .is_some_and(|(agent, rest)| {
                    !agent.is_empty() && (rest == "memories" || rest.starts_with("memories/"))
                });
            if !(prefix == own || prefix.starts_with(&format!("{own}/")) || agent_folder) {
                return Err(missing());
            }
            self.memories(ctx)?
        };
        Ok(nodes
            .into_iter()
            .filter(|n| n.uri.starts_with(&format!("{prefix}/")))
            .collect())
    }

    /// Forgets a memory: one of the caller's own, or a group memory they recorded or manage
    /// (group owners/admins, account administrators).
    pub fn memory_delete(&self, ctx: &RequestContext, uri_or_id: &str) -> Result<()> {
        let found = self.memory_node(ctx, uri_or_id)?;
        self.knowledge_delete(ctx, &found.id)
    }

    /// Stores what the caller said about themself in `messages` (their own words only), by
    /// the rules alone: a statement close to an existing memory of the same kind confirms
    /// it, others become new memories private to the caller. `origin` names the conversation
    /// (provenance).
    pub fn memory_commit(
        &self,
        ctx: &RequestContext,
        messages: &[String],
        origin: &str,
    ) -> Result<MemoryCommit> {
        let messages: Vec<CommitMessage> = messages.iter().map(CommitMessage::mine).collect();
        self.memory_commit_with(ctx, &messages, origin, &CommitWith::default())
    }

    /// Commits a conversation (see the module docs): the rules' candidates, then the model's
    /// grounded proposals that say something new; each goes to the caller's private
    /// memories, to the group's space, to the caller's task cases, or back unwritten (`ask`,
    /// another speaker's personal statement, a shared conclusion without a group, a proposal
    /// nobody said). Committing into a group needs membership with a role that writes; a
    /// project needs membership of it. A model that fails leaves the rules' result standing
    /// (`model_error` says why).
    pub fn memory_commit_with(
        &self,
        ctx: &RequestContext,
        messages: &[CommitMessage],
        origin: &str,
        with: &CommitWith<'_>,
    ) -> Result<MemoryCommit> {
        let group = with.group;
        let access = self.authorize(ctx)?;
        let group_id = match group {
            None => None,
            Some(options) => {
                if !["private", "group", "ask"].contains(&options.default_scope.as_str()) {
                    return Err(EngineError::InvalidInput(format!(
                        "default_scope is private, group or ask, not {:?}",
                        options.default_scope
                    )));
                }
                let (g, role) = self.visible_group(&access, &options.group_id)?;
                if !role.is_some_and(knowhub_authz::GroupRole::can_write) {
                    return Err(EngineError::Forbidden(format!(
                        "only members of group {} who may write can commit to it",
                        options.group_id
                    )));
                }
                Some(g.id)
            }
        };
        let project = match with.project {
            None => None,
            Some(p) => {
                let id = knowhub_authz::ProjectId::new(p)
                    .map_err(|e| EngineError::InvalidInput(format!("project {p:?}: {e}")))?;
                let member = access
                    .visible
                    .scopes()
                    .contains(&knowhub_authz::Scope::Project(id.clone()));
                if !member && !access.is_admin() {
                    return Err(EngineError::Forbidden(format!(
                        "you are not a member of project {p}"
                    )));
                }
                Some(id.to_string())
            }
        };

        // Candidates: (candidate, the message it rests on, extracted by).
        let mut found: Vec<(MemoryCandidate, Option<usize>, &'static str)> = Vec::new();
        for (i, message) in messages.iter().enumerate() {
            if message.is_assistant() {
                continue;
            }
            // Shared conclusions are found without a group too, to say why they were not
            // kept (they are not facts about the user).
            for candidate in extract_group_conversation_memories(&message.content) {
                found.push((candidate, Some(i), "rule"));
            }
        }
        let mut report = MemoryCommit::default();
        if let Some(model) = with.model {
            match model.propose(messages, group.is_some()) {
                Ok(proposals) => {
                    report.model_proposals = proposals.len();
                    for proposal in proposals {
                        match ground(&proposal, messages, group.is_some()) {
                            Ok(g) => {
                                let known = found.iter().any(|(c, _, _)| {
                                    c.kind == g.kind && restates(&c.statement, &g.statement)
                                });
                                if !known {
                                    let candidate = MemoryCandidate {
                                        kind: g.kind,
                                        statement: g.statement,
                                    };
                                    found.push((candidate, g.message, "llm"));
                                }
                            }
                            Err(why) => report.skipped.push(SkippedCandidate {
                                kind: proposal.kind,
                                statement: proposal.statement,
                                reason: match why {
                                    Rejection::Ungrounded => "ungrounded",
                                    Rejection::UnknownKind => "unknown_kind",
                                    Rejection::Question => "question",
                                    Rejection::Unconfirmed => "unconfirmed",
                                }
                                .into(),
                            }),
                        }
                    }
                }
                Err(e) => {
                    tracing::warn!("memory model failed, rules only: {e}");
                    report.model_error = Some(e);
                }
            }
        }

        let mut private = self.own_memory_items(ctx)?;
        let mut shared = match &group_id {
            Some(g) => self.group_memory_items(ctx, g)?,
            None => Vec::new(),
        };
        let agent = ctx
            .agent
            .as_ref()
            .map_or_else(|| "copilot".to_owned(), ToString::to_string);
        for (candidate, message, extracted_by) in found {
            report.candidates += 1;
            let speaker = message.and_then(|i| messages[i].user_id.as_deref());
            let speaker_is_me = speaker.is_none_or(|u| u == ctx.user.as_str());
            let target = if candidate.kind == CASE_KIND {
                "case"
            } else {
                match group {
                    Some(options) => options.target(candidate.kind),
                    None if GROUP_MEMORY_KINDS.contains(&candidate.kind) => "no_group",
                    None => "private",
                }
            };
            let skip = |reason: &str| SkippedCandidate {
                kind: candidate.kind.to_owned(),
                statement: candidate.statement.clone(),
                reason: reason.to_owned(),
            };
            let mut write = |space: Space<'_>, existing: &mut Vec<KnowledgeItem>| {
                self.commit_candidate(
                    ctx,
                    &candidate,
                    &Placement {
                        origin,
                        extracted_by,
                        project: project.as_deref(),
                        space,
                    },
                    with.model,
                    existing,
                    &mut report,
                )
            };
            match (target, &group_id) {
                ("case", _) => write(Space::Cases(&agent), &mut private)?,
                ("group", Some(g)) => write(Space::Group(g, speaker), &mut shared)?,
                ("private", _) if speaker_is_me => write(Space::Private, &mut private)?,
                ("private", _) => report.skipped.push(skip("other_speaker")),
                ("ask", _) => report.skipped.push(skip("ask")),
                _ => report.skipped.push(skip("no_group")),
            }
        }
        Ok(report)
    }

    /// Confirms the existing memory `candidate` restates (same kind, close wording) — merged
    /// with it by the model when it adds something — or creates one where `placement` says.
    fn commit_candidate(
        &self,
        ctx: &RequestContext,
        candidate: &MemoryCandidate,
        placement: &Placement<'_>,
        model: Option<&dyn MemoryModel>,
        existing: &mut Vec<KnowledgeItem>,
        report: &mut MemoryCommit,
    ) -> Result<()> {
        let shingles = shingle_set(&candidate.statement);
        let same = existing
            .iter()
            .filter(|i| i.tags.get(KIND_TAG).map(String::as_str) == Some(candidate.kind))
            .map(|i| (jaccard(&shingles, &shingle_set(&i.content)), i))
            .filter(|(sim, _)| *sim >= SAME_MEMORY)
            .max_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(_, i)| (i.id.clone(), i.eval.confidence, i.content.clone()));
        if let Some((id, confidence, content)) = same {
            let merged = match model {
                // Only when the restatement adds something; a merge that is not made of the
                // two statements is not used.
                Some(model) if containment(&candidate.statement, &content) < 0.8 => model
                    .merge(&content, &candidate.statement)
                    .ok()
                    .map(|m| m.trim().chars().take(MAX_STATEMENT).collect::<String>())
                    .filter(|m| {
                        !m.is_empty()
                            && containment(m, &format!("{content}\n{}", candidate.statement))
                                >= MERGE_GROUNDED
                    }),
                _ => None,
            };
            let update = KnowledgeUpdate {
                confidence: Some((confidence + CONFIRM_STEP).min(1.0)),
                content: merged.clone(),
                add_helpful_case: Some(knowhub_store::FeedbackCase {
                    task: "restated in a conversation".into(),
                    outcome: if merged.is_some() {
                        "merged"
                    } else {
                        "confirmed"
                    }
                    .into(),
                    reason: candidate.statement.clone(),
                    timestamp: String::new(),
                    message_id: placement.origin.to_owned(),
                }),
                ..KnowledgeUpdate::default()
            };
            let updated = self.knowledge_update(ctx, &id, &update, None)?;
            existing.retain(|i| i.id != id);
            report.confirmed.retain(|n| n.id != id);
            report.confirmed.push(self.memory_node_of(&updated));
            if merged.is_some() && !report.merged.contains(&id) {
                report.merged.push(id);
            }
            existing.push(updated);
            return Ok(());
        }
        let mut tags = BTreeMap::new();
        tags.insert(KIND_TAG.to_owned(), candidate.kind.to_owned());
        tags.insert("origin".to_owned(), placement.extracted_by.to_owned());
        if let Some(project) = placement.project {
            tags.insert(PROJECT_TAG.to_owned(), project.to_owned());
        }
        let base = NewKnowledge {
            content: candidate.statement.clone(),
            message_id: placement.origin.to_owned(),
            confidence: Some(NEW_CONFIDENCE),
            ..NewKnowledge::default()
        };
        let new = match placement.space {
            Space::Group(g, speaker) => {
                tags.insert(GROUP_TAG.to_owned(), g.to_string());
                if let Some(speaker) = speaker {
                    tags.insert("speaker".to_owned(), speaker.to_owned());
                }
                NewKnowledge {
                    task: format!("shared in group {g}: {}", candidate.kind),
                    types: vec![GROUP_MEMORY_TYPE.into()],
                    tags,
                    scopes: vec![format!("group:{g}")],
                    ..base
                }
            }
            Space::Cases(agent) => {
                tags.insert(AGENT_TAG.to_owned(), agent.to_owned());
                NewKnowledge {
                    task: "a task completed in a conversation".into(),
                    types: vec![CASE_TYPE.into()],
                    tags,
                    ..base
                }
            }
            Space::Private => NewKnowledge {
                task: format!("about the user: {}", candidate.kind),
                types: vec![PROFILE_TYPE.into()],
                tags,
                ..base
            },
        };
        let saved = self.knowledge_save(ctx, new)?;
        report.created.push(self.memory_node_of(&saved));
        existing.push(saved);
        Ok(())
    }

    /// Commits one of the caller's conversations: their questions and the answers they got
    /// (the answers only tell a model what task was done; they never become the user's
    /// memories).
    pub fn memory_commit_session(
        &self,
        ctx: &RequestContext,
        session_id: &str,
        with: &CommitWith<'_>,
    ) -> Result<MemoryCommit> {
        let turns = self.session_turns(ctx, session_id, 1000)?;
        let mut messages = Vec::with_capacity(turns.len() * 2);
        for turn in turns {
            messages.push(CommitMessage::mine(turn.question));
            if !turn.answer.trim().is_empty() {
                messages.push(CommitMessage::assistant(turn.answer));
            }
        }
        self.memory_commit_with(ctx, &messages, session_id, with)
    }

    /// The caller's memories most like `query` (see [`Engine::memory_search_in`]).
    pub fn memory_search(
        &self,
        ctx: &RequestContext,
        query: &str,
        kinds: &[String],
        top_k: usize,
    ) -> Result<Vec<(MemoryNode, f64)>> {
        self.memory_search_in(ctx, query, kinds, top_k, &MemorySpaces::default())
    }

    /// Memories most like `query` (character 3-grams, so Chinese and English both work; a
    /// memory containing the query outright ranks first) in the caller's private space
    /// and/or a group's space (seed 003 §13.6: one merged ranking), optionally of some kinds
    /// only. Each with its similarity in 0–1.
    pub fn memory_search_in(
        &self,
        ctx: &RequestContext,
        query: &str,
        kinds: &[String],
        top_k: usize,
        spaces: &MemorySpaces,
    ) -> Result<Vec<(MemoryNode, f64)>> {
        let mut nodes = Vec::new();
        if !spaces.exclude_private || spaces.group_id.is_none() {
            nodes.extend(self.memories(ctx)?);
        }
        if let Some(group) = &spaces.group_id {
            nodes.extend(self.group_memories(ctx, group)?);
        }
        let q = shingle_set(query);
        let needle = query.trim().to_lowercase();
        let mut hits: Vec<(MemoryNode, f64)> = nodes
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
    ///
    /// Only what is about the person (not task cases), and of project memories only those of
    /// `project`: a conversation about another project is not steered by them.
    pub fn user_profile(
        &self,
        ctx: &RequestContext,
        project: Option<&str>,
        limit: usize,
    ) -> Result<Vec<String>> {
        self.user_profile_as(&self.authorize(ctx)?, project, limit)
    }

    /// [`Engine::user_profile`] with permissions already resolved.
    pub(crate) fn user_profile_as(
        &self,
        access: &Access,
        project: Option<&str>,
        limit: usize,
    ) -> Result<Vec<String>> {
        Ok(self
            .memories_as(access)?
            .into_iter()
            .filter(|n| MEMORY_KINDS.contains(&n.kind.as_str()))
            .filter(|n| n.project.is_none() || n.project.as_deref() == project)
            .take(limit)
            .map(|n| n.content)
            .collect())
    }
}

/// Where a new memory goes.
#[derive(Debug, Clone, Copy)]
enum Space<'a> {
    /// The caller's own memories.
    Private,
    /// A group's space, with who said it.
    Group(&'a GroupId, Option<&'a str>),
    /// The caller's task cases, learned by this agent.
    Cases(&'a str),
}

/// A new memory's provenance and place.
#[derive(Debug, Clone, Copy)]
struct Placement<'a> {
    /// The conversation it came from.
    origin: &'a str,
    /// `rule` or `llm`.
    extracted_by: &'static str,
    project: Option<&'a str>,
    space: Space<'a>,
}

fn sort_nodes(nodes: &mut [MemoryNode]) {
    nodes.sort_by(|a, b| {
        b.confidence
            .total_cmp(&a.confidence)
            .then(b.updated_at_ms.cmp(&a.updated_at_ms))
    });
}

#[cfg(test)]
#[path = "memory_tests.rs"]
mod tests;
