//! Knowledge items (seeds 001/002): save, search, update (feedback, score, evolve), batch
//! feedback, list, slim (merge near-duplicates), get, delete — inside the same permission
//! model as documents.
//!
//! * **Visibility**: an item's read scopes are its `scopes` ∪ `user:<owner>`. A USER sees an
//!   item when those intersect their visible scopes (`user:me`, `agent:<a>` when acting
//!   through an agent, their teams/projects/orgs, `public`); ADMIN sees the account, ROOT
//!   everything. The condition is part of the store query ([`KnowledgeFilter`]), and search
//!   turns its result into the allow-list pushed into both scans: an item the caller may not
//!   see is never a candidate, so it cannot displace or influence anything they get.
//! * **Not found, never forbidden** for items the caller cannot see; `Forbidden` only for
//!   visible items they may not change (owner-only writes: the owner, ADMIN, ROOT).
//! * **Search** has seed 002's two stages: (1) relevance candidates (2·k) from a BM25 index of
//!   the items (task as title, types and tag values as heading, content as body; the
//!   bilingual `knowhub` analyzer, so Chinese works without a model) fused with embedding
//!   similarity when an embedder is loaded; the type, tag, scope, `min_score` and
//!   `quality ≥ 0` conditions run inside the scan too; (2) quality ranking
//!   `score + helpful − 2·harmful`, ties broken by scope priority ([`Scope::priority`]: user >
//!   project > agent > team > org > public, seed 001), then relevance.
//! * **The item index is derived**: an in-memory tantivy index keyed by the item's row number,
//!   synced from the store whenever the store's trigger-maintained `knowledge_version`
//!   moved (only items whose text revision changed are re-indexed), so writes of another
//!   process are seen by the next search and nothing needs repair after a crash. Item vectors
//!   are persisted in the store per model and text revision (like chunk vectors).
//! * **Batch feedback is per item**: each entry is applied (and committed) on its own and gets
//!   its own outcome; one unknown or forbidden id does not undo the others (seed 002's batch
//!   is an agent reporting which items helped in a task: independent facts).
//! * **Slim** groups near-duplicates the caller may write — cosine similarity of item
//!   embeddings, or without an embedder Jaccard similarity of character 3-gram sets (works for
//!   Chinese and English alike) — only among items with the same owner and scopes (their read
//!   scopes are equal, so a merge never changes who can read a text), keeps the best item (quality, score, confidence, recency),
//!   merges the content with the [`Rewriter`] or else appends the others' sentences it lacks,
//!   sums the feedback counts and histories, unions types, resources and source URLs, and
//!   keeps every absorbed item in full as a version of the kept one.
//! * Knowledge lives in the store and this derived index only, so its writes do not need the
//!   documents' index writer: they work while another process (the app, the daemon) holds it.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::{Mutex, MutexGuard};

use knowhub_authz::{Role, Scope, ScopeSet};
use knowhub_index::{ChunkEntry, DocFilter, SearchRequest, TantivyIndex, TextIndex};
use knowhub_store::{FeedbackCase, KnowledgeEval, KnowledgeFilter, KnowledgeSource};
use serde::{Deserialize, Serialize};

use crate::permissions::Access;
use crate::queue::now_ms;
use crate::{Engine, EngineError, RequestContext, Result};

pub use knowhub_store::KnowledgeRecord as KnowledgeItem;
pub use knowhub_store::KnowledgeVersion;

/// The knowledge types of seed 002, and `group_memory`: a group space's shared memory
/// (seed 003 §13; written by the memory commit, writable by the group's members).
pub const KNOWLEDGE_TYPES: &[&str] = &[
    "user_profile",
    "strategy",
    "tool",
    "usecase",
    "definition",
    "plan",
    "group_memory",
];

/// Default similarity thresholds of [`Engine::knowledge_slim`].
pub const SLIM_COSINE_THRESHOLD: f64 = 0.92;
pub const SLIM_JACCARD_THRESHOLD: f64 = 0.5;

/// Most items one list call returns.
const MAX_LIST: usize = 1000;

/// Rewrites knowledge content with a language model. The engine has no LLM of its own: the
/// copilot crate implements this over its `Llm` (and tests with a fake).
pub trait Rewriter: Send + Sync {
    /// The item's content rewritten to take `feedback` (and its recorded helpful/harmful
    /// cases) into account.
    fn evolve(&self, item: &KnowledgeItem, feedback: &str) -> std::result::Result<String, String>;
    /// One content that says everything the near-duplicate `items` say (the first is the one
    /// kept).
    fn merge(&self, items: &[&KnowledgeItem]) -> std::result::Result<String, String>;
}

/// A new item. The owner is the caller; `source.agent_id` comes from the context when it names
/// an agent; `source.timestamp` is set here.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct NewKnowledge {
    pub task: String,
    pub content: String,
    pub types: Vec<String>,
    pub tags: BTreeMap<String, String>,
    /// Default: `user:<caller>`. A user may only share with scopes they belong to.
    pub scopes: Vec<String>,
    pub message_id: String,
    pub resource_ids: Vec<String>,
    pub source: KnowledgeSource,
    /// 1–5, default 3.
    pub score: Option<u8>,
    /// 0–1, default 0.5.
    pub confidence: Option<f64>,
}

/// Changes to an item (seed 002 `PUT /api/knowledge/{id}` plus edits). Owner-only.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct KnowledgeUpdate {
    pub add_helpful_case: Option<FeedbackCase>,
    pub add_harmful_case: Option<FeedbackCase>,
    pub update_score: Option<u8>,
    pub confidence: Option<f64>,
    pub task: Option<String>,
    pub content: Option<String>,
    pub types: Option<Vec<String>>,
    pub tags: Option<BTreeMap<String, String>>,
    pub scopes: Option<Vec<String>>,
    pub resource_ids: Option<Vec<String>>,
    /// Rewrite the content with the [`Rewriter`] from this feedback (previous version kept).
    pub evolve_feedback: Option<String>,
}

impl KnowledgeUpdate {
    /// Only adds helpful/harmful cases (what readers may do).
    pub fn is_feedback_only(&self) -> bool {
        let KnowledgeUpdate {
            add_helpful_case,
            add_harmful_case,
            update_score,
            confidence,
            task,
            content,
            types,
            tags,
            scopes,
            resource_ids,
            evolve_feedback,
        } = self;
        (add_helpful_case.is_some() || add_harmful_case.is_some())
            && update_score.is_none()
            && confidence.is_none()
            && task.is_none()
            && content.is_none()
            && types.is_none()
            && tags.is_none()
            && scopes.is_none()
            && resource_ids.is_none()
            && evolve_feedback.is_none()
    }
}

/// What to search for besides the text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct KnowledgeQuery {
    /// Any of these types (empty: any).
    pub types: Vec<String>,
    /// All of these tags.
    pub tags: BTreeMap<String, String>,
    /// Only items carrying one of these scopes (narrows; never widens what is visible).
    pub scopes: Vec<String>,
    /// `top_k` (default 5, at most 100).
    pub limit: usize,
    /// Items scored below are dropped (default 3).
    pub min_score: u8,
}

impl Default for KnowledgeQuery {
    fn default() -> Self {
        KnowledgeQuery {
            types: Vec::new(),
            tags: BTreeMap::new(),
            scopes: Vec::new(),
            limit: 5,
            min_score: 3,
        }
    }
}

/// One search result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KnowledgeHit {
    #[serde(flatten)]
    pub item: KnowledgeItem,
    /// `score + helpful − 2·harmful`: the ranking key.
    pub quality_score: f64,
    /// The stage-1 relevance (BM25, or the fused keyword/embedding score).
    pub relevance: f32,
    /// The best priority among the item's scopes the caller matched (0 = user … 5 = public).
    pub scope_priority: Option<u8>,
}

/// Filters of [`Engine::knowledge_list`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct KnowledgeListOptions {
    pub types: Vec<String>,
    pub scopes: Vec<String>,
    pub tags: BTreeMap<String, String>,
    pub owner: Option<String>,
    /// Default 10, at most 1000.
    pub limit: usize,
    pub offset: usize,
}

impl Default for KnowledgeListOptions {
    fn default() -> Self {
        KnowledgeListOptions {
            types: Vec::new(),
            scopes: Vec::new(),
            tags: BTreeMap::new(),
            owner: None,
            limit: 10,
            offset: 0,
        }
    }
}

/// The outcome of one entry of [`Engine::knowledge_batch_update`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BatchOutcome {
    pub id: String,
    pub ok: bool,
    /// Why it was not applied (the same words as the single update's error).
    pub error: Option<String>,
    pub item: Option<KnowledgeItem>,
}

/// Options of [`Engine::knowledge_slim`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SlimOptions {
    /// Similarity at or above which two items are near-duplicates (default
    /// [`SLIM_COSINE_THRESHOLD`] with an embedder, [`SLIM_JACCARD_THRESHOLD`] without).
    pub threshold: Option<f64>,
    /// Only show the plan.
    pub dry_run: bool,
}

/// How similarity was measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SlimMethod {
    /// Cosine similarity of item embeddings.
    Embedding,
    /// Jaccard similarity of character 3-gram sets (no embedder).
    Lexical,
}

/// One group of near-duplicates.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SlimGroup {
    /// The item that stays (and receives the merge).
    pub keep: String,
    /// The items merged into it (deleted; kept in full as versions of `keep`).
    pub merge: Vec<String>,
    /// Similarity of each of `merge` to its nearest group member.
    pub similarity: Vec<f64>,
    /// `llm` or `extractive` (applied plans only).
    pub merged_by: Option<String>,
    /// Why the language model was not used for this group, when it failed.
    pub note: Option<String>,
    /// The merged item (applied plans only).
    pub result: Option<KnowledgeItem>,
}

/// What [`Engine::knowledge_slim`] found (and did).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SlimPlan {
    pub method: SlimMethod,
    pub threshold: f64,
    /// Items the caller may write that were compared.
    pub items_considered: usize,
    pub groups: Vec<SlimGroup>,
    pub applied: bool,
}

/// The derived in-memory index of items (see the module docs).
#[derive(Default)]
pub(crate) struct KnowledgeIndex {
    state: Mutex<Option<IndexState>>,
}

struct IndexState {
    /// The store's `knowledge_version` this state reflects.
    version: i64,
    index: TantivyIndex,
    /// Indexed text revision per item.
    revs: HashMap<i64, i64>,
    /// Embedding per item: (text revision, unit vector).
    vectors: HashMap<i64, (i64, Vec<f32>)>,
    vectors_loaded: bool,
}

impl Engine {
    // ----- save / get / delete --------------------------------------------------------------

    /// Saves a new item owned by the caller.
    pub fn knowledge_save(&self, ctx: &RequestContext, new: NewKnowledge) -> Result<KnowledgeItem> {
        let access = self.authorize(ctx)?;
        let content = new.content.trim().to_owned();
        if content.is_empty() {
            return Err(EngineError::InvalidInput(
                "knowledge content is empty".into(),
            ));
        }
        let scopes = if new.scopes.is_empty() {
            vec![Scope::User(access.ctx.user.clone()).to_string()]
        } else {
            self.grantable_scopes(&access, &new.scopes, "knowledge")?
        };
        let score = new.score.unwrap_or(3);
        check_score(score)?;
        let confidence = new.confidence.unwrap_or(0.5);
        check_confidence(confidence)?;
        let mut source = new.source;
        if let Some(agent) = &access.ctx.agent {
            source.agent_id = agent.as_str().to_owned();
        }
        if source.submitted_by.trim().is_empty() {
            source.submitted_by = access.ctx.user.as_str().to_owned();
        }
        if source.message_id.is_empty() {
            source.message_id = new.message_id.clone();
        }
        source.timestamp = rfc3339_now();
        let record = KnowledgeItem {
            seq: 0,
            id: new_knowledge_id()?,
            message_id: new.message_id,
            types: check_types(&new.types)?,
            task: new.task.trim().to_owned(),
            tags: new.tags,
            scopes,
            owner: access.ctx.user.as_str().to_owned(),
            content,
            resource_ids: dedup(new.resource_ids),
            source,
            eval: KnowledgeEval {
                score,
                helpful: 0,
                harmful: 0,
                confidence,
                helpful_history: Vec::new(),
                harmful_history: Vec::new(),
            },
            rev: 0,
            created_at_ms: 0,
            updated_at_ms: 0,
        };
        let stored = self.store().insert_knowledge(&record)?;
        self.audit_write(&access, "knowledge.save", &stored.id, true)?;
        Ok(stored)
    }

    /// One item — `NotFound` when it does not exist or the caller may not see it.
    pub fn knowledge_get(&self, ctx: &RequestContext, id: &str) -> Result<KnowledgeItem> {
        let access = self.authorize(ctx)?;
        let item = self.visible_item(&access, id);
        let outcome = if item.is_ok() { "ok" } else { "not_found" };
        self.audit(
            &access,
            ("knowledge.get", id, outcome),
            u64::from(item.is_ok()),
            0,
            serde_json::Value::Null,
        )?;
        item
    }

    /// The previous states of an item the caller may see, oldest first.
    pub fn knowledge_versions(
        &self,
        ctx: &RequestContext,
        id: &str,
    ) -> Result<Vec<KnowledgeVersion>> {
        let access = self.authorize(ctx)?;
        self.visible_item(&access, id)?;
        Ok(self.store().knowledge_versions(id)?)
    }

    /// Deletes an item (with its versions). Owner or administrators.
    pub fn knowledge_delete(&self, ctx: &RequestContext, id: &str) -> Result<()> {
        let access = self.authorize(ctx)?;
        let item = self.visible_item(&access, id)?;
        // Deleting a group memory is for its author and the group's owners/admins, not for
        // every member who may add to it.
        let group_manager = self
            .group_role_for_item(&access, &item)?
            .is_some_and(|r| r.can_manage(knowhub_authz::GroupRole::Member));
        if !self.may_write(&access, Some(&item.owner)) && !group_manager {
            return Err(EngineError::Forbidden(format!(
                "only the owner of knowledge item {id} or an administrator can delete it"
            )));
        }
        if !self.store().delete_knowledge(&item.id)? {
            return Err(not_found(id));
        }
        self.audit_write(&access, "knowledge.delete", id, true)
    }

    // ----- list / search --------------------------------------------------------------------

    /// Items the caller may see, newest first, with type/scope/tag/owner filters.
    pub fn knowledge_list(
        &self,
        ctx: &RequestContext,
        options: &KnowledgeListOptions,
    ) -> Result<Vec<KnowledgeItem>> {
        self.knowledge_list_as(&self.authorize(ctx)?, options)
    }

    /// [`Engine::knowledge_list`] with permissions already resolved.
    pub(crate) fn knowledge_list_as(
        &self,
        access: &Access,
        options: &KnowledgeListOptions,
    ) -> Result<Vec<KnowledgeItem>> {
        let filter = KnowledgeFilter {
            reader: self.reader(access),
            types: options.types.clone(),
            scopes: canonical_scopes(&options.scopes)?,
            tags: options.tags.clone(),
            owner: options.owner.clone(),
            ..Default::default()
        };
        let limit = if options.limit == 0 {
            10
        } else {
            options.limit.min(MAX_LIST)
        };
        let items = self
            .store()
            .list_knowledge(&filter, limit, options.offset)?;
        self.audit(
            access,
            ("knowledge.list", "", "ok"),
            items.len() as u64,
            0,
            serde_json::Value::Null,
        )?;
        Ok(items)
    }

    /// Seed 002's two-stage search (see the module docs), within the caller's visible scopes.
    pub fn knowledge_search(
        &self,
        ctx: &RequestContext,
        query: &str,
        options: &KnowledgeQuery,
    ) -> Result<Vec<KnowledgeHit>> {
        let access = self.authorize(ctx)?;
        if query.trim().is_empty() {
            return Err(EngineError::InvalidInput("the query is empty".into()));
        }
        let limit = if options.limit == 0 {
            5
        } else {
            options.limit.min(100)
        };
        let filter = KnowledgeFilter {
            reader: self.reader(&access),
            types: options.types.clone(),
            scopes: canonical_scopes(&options.scopes)?,
            tags: options.tags.clone(),
            owner: None,
            min_score: Some(options.min_score),
            min_quality: Some(0.0),
        };
        // Stage 1's allow-list: visibility and the quality floor, decided by the store.
        let allowed: HashSet<u64> = self
            .store()
            .knowledge_seqs(&filter)?
            .into_iter()
            .map(|s| s as u64)
            .collect();
        let want = limit * 2;
        let candidates = self.knowledge_candidates(query, &allowed, want)?;
        let seqs: Vec<i64> = candidates.iter().map(|(s, _)| *s as i64).collect();
        let relevance: HashMap<i64, f32> =
            candidates.iter().map(|(s, r)| (*s as i64, *r)).collect();
        let records = self.store().knowledge_by_seqs(&seqs)?;
        let mut hits: Vec<KnowledgeHit> = records
            .into_iter()
            // Belt and braces: the allow-list already held only these.
            .filter(|r| allowed.contains(&(r.seq as u64)))
            .map(|item| {
                let scopes = parse_scope_set(&item.scopes);
                let scope_priority = access
                    .visible
                    .matched_priority(&scopes)
                    .or_else(|| scopes.best_priority());
                KnowledgeHit {
                    quality_score: item.eval.quality(),
                    relevance: relevance.get(&item.seq).copied().unwrap_or(0.0),
                    scope_priority,
                    item,
                }
            })
            .collect();
        rank_hits(&mut hits);
        hits.truncate(limit);
        let evidence: Vec<&str> = hits.iter().map(|h| h.item.id.as_str()).collect();
        self.audit(
            &access,
            ("knowledge.search", query, "ok"),
            hits.len() as u64,
            0,
            serde_json::json!(evidence),
        )?;
        Ok(hits)
    }

    /// Stage 1: up to `want` (item seq, relevance) among `allowed`, best first.
    fn knowledge_candidates(
        &self,
        query: &str,
        allowed: &HashSet<u64>,
        want: usize,
    ) -> Result<Vec<(u64, f32)>> {
        if allowed.is_empty() {
            return Ok(Vec::new());
        }
        let guard = self.synced_knowledge_index()?;
        let Some(state) = guard.as_ref() else {
            return Ok(Vec::new());
        };
        let set = allowed.clone();
        let request = SearchRequest::new(query, want)
            .with_filter(DocFilter::new(move |id| set.contains(&id)));
        let keyword = match state.index.search(&request) {
            Ok(hits) => hits.into_iter().map(|h| (h.doc_id, h.score)).collect(),
            // A query of only stop characters may still mean something to an embedder.
            Err(knowhub_index::IndexError::EmptyQuery) if self.semantic.is_some() => Vec::new(),
            Err(knowhub_index::IndexError::EmptyQuery) => {
                return Err(EngineError::InvalidInput(
                    "the query has no searchable words".into(),
                ));
            }
            Err(e) => return Err(e.into()),
        };
        let Some(sem) = &self.semantic else {
            return Ok(keyword);
        };
        let q = sem
            .embedder
            .embed_query(query)
            .map_err(|e| EngineError::Model(e.to_string()))?;
        let q = unit(q);
        let mut dense: Vec<(u64, f32)> = state
            .vectors
            .iter()
            .filter(|(seq, _)| allowed.contains(&(**seq as u64)))
            .map(|(seq, (_, v))| (*seq as u64, dot(&q, v)))
            .collect();
        dense.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        dense.truncate(want);
        Ok(fuse(&keyword, &dense, want))
    }

    // ----- update ---------------------------------------------------------------------------

    /// Applies `update` to an item the caller owns (or administers). `NotFound` for items they
    /// cannot see, `Forbidden` for visible items they may not change. `evolve_feedback` needs a
    /// `rewriter`.
    pub fn knowledge_update(
        &self,
        ctx: &RequestContext,
        id: &str,
        update: &KnowledgeUpdate,
        rewriter: Option<&dyn Rewriter>,
    ) -> Result<KnowledgeItem> {
        let access = self.authorize(ctx)?;
        self.update_one(&access, id, update, rewriter)
    }

    /// Applies each update on its own (see the module docs): one outcome per entry, in order.
    pub fn knowledge_batch_update(
        &self,
        ctx: &RequestContext,
        updates: &[(String, KnowledgeUpdate)],
        rewriter: Option<&dyn Rewriter>,
    ) -> Result<Vec<BatchOutcome>> {
        let access = self.authorize(ctx)?;
        let mut out = Vec::with_capacity(updates.len());
        for (id, update) in updates {
            out.push(match self.update_one(&access, id, update, rewriter) {
                Ok(item) => BatchOutcome {
                    id: id.clone(),
                    ok: true,
                    error: None,
                    item: Some(item),
                },
                // Storage failures are not per-item facts: stop and report them.
                Err(e @ (EngineError::Store(_) | EngineError::Index(_))) => return Err(e),
                Err(e) => BatchOutcome {
                    id: id.clone(),
                    ok: false,
                    error: Some(e.to_string()),
                    item: None,
                },
            });
        }
        Ok(out)
    }

    fn update_one(
        &self,
        access: &Access,
        id: &str,
        update: &KnowledgeUpdate,
        rewriter: Option<&dyn Rewriter>,
    ) -> Result<KnowledgeItem> {
        // Reporting that an item helped or hurt is open to everyone who can read it (seed 002:
        // the agents that used it report back; otherwise only the owner's own use would ever
        // move its quality); changing what it says, its score or who sees it is the owner's.
        let item = if update.is_feedback_only() {
            self.visible_item(access, id)?
        } else {
            self.writable_item(access, id)?
        };
        if update.scopes.is_some() && !self.may_write(access, Some(&item.owner)) {
            return Err(EngineError::Forbidden(format!(
                "only the owner of knowledge item {id} or an administrator can change who sees it"
            )));
        }
        let scopes = match &update.scopes {
            Some(s) if s.is_empty() => Some(vec![Scope::User(access.ctx.user.clone()).to_string()]),
            Some(s) => Some(self.grantable_scopes(access, s, "knowledge")?),
            None => None,
        };
        let mut next = apply_update(item.clone(), update, scopes)?;
        let mut reason =
            (next.content != item.content || next.task != item.task).then_some("update");
        if let Some(feedback) = update.evolve_feedback.as_deref() {
            if feedback.trim().is_empty() {
                return Err(EngineError::InvalidInput("evolve_feedback is empty".into()));
            }
            let rewriter = rewriter.ok_or_else(|| {
                EngineError::InvalidInput(
                    "evolve_feedback needs a language model (none is configured)".into(),
                )
            })?;
            let content = rewriter
                .evolve(&next, feedback)
                .map_err(EngineError::Model)?;
            let content = content.trim();
            if content.is_empty() {
                return Err(EngineError::Model(
                    "the language model returned no content".into(),
                ));
            }
            next.content = content.to_owned();
            reason = Some("evolve");
        }
        let stored = self
            .store()
            .update_knowledge(&next, reason)?
            .ok_or_else(|| not_found(id))?;
        self.audit_write(access, "knowledge.update", id, true)?;
        Ok(stored)
    }

    // ----- slim -----------------------------------------------------------------------------

    /// Finds (and unless `dry_run`, merges) near-duplicate items the caller may write.
    pub fn knowledge_slim(
        &self,
        ctx: &RequestContext,
        options: &SlimOptions,
        rewriter: Option<&dyn Rewriter>,
    ) -> Result<SlimPlan> {
        let access = self.authorize(ctx)?;
        let method = if self.semantic.is_some() {
            SlimMethod::Embedding
        } else {
            SlimMethod::Lexical
        };
        let threshold = options.threshold.unwrap_or(match method {
            SlimMethod::Embedding => SLIM_COSINE_THRESHOLD,
            SlimMethod::Lexical => SLIM_JACCARD_THRESHOLD,
        });
        if threshold.is_nan() || threshold <= 0.0 || threshold > 1.0 {
            return Err(EngineError::InvalidInput(format!(
                "slim threshold {threshold} must be in (0, 1]"
            )));
        }
        let filter = KnowledgeFilter {
            reader: self.reader(&access),
            // An administrator may write everything visible; a user only what they own.
            owner: (!self.is_account_admin(&access)).then(|| access.ctx.user.as_str().to_owned()),
            ..Default::default()
        };
        let seqs = self.store().knowledge_seqs(&filter)?;
        let items: Vec<KnowledgeItem> = self
            .store()
            .knowledge_by_seqs(&seqs)?
            .into_iter()
            .filter(|i| self.may_write(&access, Some(&i.owner)))
            .collect();
        let vectors: HashMap<i64, Vec<f32>> = match method {
            SlimMethod::Embedding => {
                let guard = self.synced_knowledge_index()?;
                guard
                    .as_ref()
                    .map(|s| {
                        s.vectors
                            .iter()
                            .map(|(seq, (_, v))| (*seq, v.clone()))
                            .collect()
                    })
                    .unwrap_or_default()
            }
            SlimMethod::Lexical => HashMap::new(),
        };
        let shingles: Vec<HashSet<String>> = match method {
            SlimMethod::Lexical => items.iter().map(|i| shingle_set(&i.content)).collect(),
            SlimMethod::Embedding => Vec::new(),
        };
        let similarity = |a: usize, b: usize| -> Option<f64> {
            match method {
                SlimMethod::Embedding => {
                    let (va, vb) = (vectors.get(&items[a].seq)?, vectors.get(&items[b].seq)?);
                    Some(f64::from(dot(va, vb)))
                }
                SlimMethod::Lexical => Some(jaccard(&shingles[a], &shingles[b])),
            }
        };
        let groups = group_near_duplicates(&items, threshold, similarity);
        let mut plan = SlimPlan {
            method,
            threshold,
            items_considered: items.len(),
            groups: Vec::new(),
            applied: !options.dry_run,
        };
        for (members, sims) in groups {
            let mut members: Vec<&KnowledgeItem> = members.iter().map(|&i| &items[i]).collect();
            let mut order: Vec<usize> = (0..members.len()).collect();
            order.sort_by(|&a, &b| better(members[a], members[b]));
            let sims: Vec<f64> = order.iter().skip(1).map(|&i| sims[i]).collect();
            members = order.iter().map(|&i| members[i]).collect();
            let mut group = SlimGroup {
                keep: members[0].id.clone(),
                merge: members[1..].iter().map(|m| m.id.clone()).collect(),
                similarity: sims,
                merged_by: None,
                note: None,
                result: None,
            };
            if !options.dry_run {
                let (content, by, note) = match rewriter.map(|r| r.merge(&members)) {
                    Some(Ok(text)) if !text.trim().is_empty() => {
                        (text.trim().to_owned(), "llm", None)
                    }
                    Some(Ok(_)) => (
                        extractive_merge(&members),
                        "extractive",
                        Some("the language model returned no content".to_owned()),
                    ),
                    Some(Err(e)) => (extractive_merge(&members), "extractive", Some(e)),
                    None => (extractive_merge(&members), "extractive", None),
                };
                let merged = merge_records(&members, content);
                let stored = self
                    .store()
                    .merge_knowledge(&merged, &group.merge)?
                    .ok_or_else(|| not_found(&group.keep))?;
                let target = format!("{} <- {}", group.keep, group.merge.join(","));
                self.audit_write(&access, "knowledge.slim", &target, true)?;
                group.merged_by = Some(by.to_owned());
                group.note = note;
                group.result = Some(stored);
            }
            plan.groups.push(group);
        }
        if options.dry_run {
            self.audit(
                &access,
                ("knowledge.slim", "dry-run", "ok"),
                plan.groups.len() as u64,
                0,
                serde_json::Value::Null,
            )?;
        }
        Ok(plan)
    }

    // ----- helpers --------------------------------------------------------------------------

    /// The store-side visibility condition for `access` (`None`: the whole account) — shared
    /// by knowledge items and resources, which have the same read rule.
    pub(crate) fn reader(&self, access: &Access) -> Option<(Vec<String>, String)> {
        let same_account = access.ctx.account == self.account;
        if access.ctx.role == Role::Root || (access.ctx.role == Role::Admin && same_account) {
            return None;
        }
        if !same_account {
            // Nothing of another account is visible; an empty owner matches no item.
            return Some((Vec::new(), String::new()));
        }
        Some((
            access
                .visible
                .scopes()
                .iter()
                .map(ToString::to_string)
                .collect(),
            access.ctx.user.as_str().to_owned(),
        ))
    }

    fn is_account_admin(&self, access: &Access) -> bool {
        self.require_admin(access, "").is_ok()
    }

    /// The item, when `access` may see it (same rule as [`Engine::reader`]); else `NotFound`.
    fn visible_item(&self, access: &Access, id: &str) -> Result<KnowledgeItem> {
        let item = self.store().knowledge(id)?.ok_or_else(|| not_found(id))?;
        let visible = match self.reader(access) {
            None => true,
            Some((visible, me)) => {
                item.owner == me || item.scopes.iter().any(|s| visible.contains(s))
            }
        };
        if visible {
            Ok(item)
        } else {
            Err(not_found(id))
        }
    }

    /// The item, when `access` may change it: `NotFound` if invisible, `Forbidden` if only
    /// visible.
    fn writable_item(&self, access: &Access, id: &str) -> Result<KnowledgeItem> {
        let item = self.visible_item(access, id)?;
        if !self.may_write(access, Some(&item.owner)) && !self.group_writer(access, &item)? {
            return Err(EngineError::Forbidden(format!(
                "only the owner of knowledge item {id} or an administrator can change it"
            )));
        }
        Ok(item)
    }

    /// The caller's role in the group space a group memory lives in (`None` for any other
    /// item, or when the caller is not a member of every group it is scoped to).
    fn group_role_for_item(
        &self,
        access: &Access,
        item: &KnowledgeItem,
    ) -> Result<Option<knowhub_authz::GroupRole>> {
        if !item
            .types
            .iter()
            .any(|t| t == crate::memory::GROUP_MEMORY_TYPE)
            || item.scopes.is_empty()
        {
            return Ok(None);
        }
        let mut weakest: Option<knowhub_authz::GroupRole> = None;
        for scope in parse_scopes(&item.scopes)?.iter() {
            let Scope::Group(group) = scope else {
                return Ok(None);
            };
            let Some(role) = self.group_role_of(access, group)? else {
                return Ok(None);
            };
            // Roles order owner < admin < member < readonly: the weakest is the largest.
            weakest = Some(weakest.map_or(role, |w| w.max(role)));
        }
        Ok(weakest)
    }

    /// Seed 003 §13: a group's shared memories are read and written by all its members who
    /// may write (not only the member who first recorded them).
    fn group_writer(&self, access: &Access, item: &KnowledgeItem) -> Result<bool> {
        Ok(self
            .group_role_for_item(access, item)?
            .is_some_and(knowhub_authz::GroupRole::can_write))
    }

    /// Validated, canonical scopes the caller may grant to `what` (knowledge, resources): their
    /// own visible scopes (users), anything (administrators of the account, ROOT).
    pub(crate) fn grantable_scopes(
        &self,
        access: &Access,
        scopes: &[String],
        what: &str,
    ) -> Result<Vec<String>> {
        let set = parse_scopes(scopes)?;
        if !self.is_account_admin(access) {
            let foreign: Vec<String> = set
                .iter()
                .filter(|s| !access.visible.scopes().contains(s))
                .map(ToString::to_string)
                .collect();
            if !foreign.is_empty() {
                return Err(EngineError::Forbidden(format!(
                    "you can only share {what} with scopes you belong to (not {})",
                    foreign.join(", ")
                )));
            }
            // Reading a group space needs membership; writing into it a role that writes.
            for scope in &set {
                if let Scope::Group(group) = scope
                    && !self
                        .group_role_of(access, group)?
                        .is_some_and(knowhub_authz::GroupRole::can_write)
                {
                    return Err(EngineError::Forbidden(format!(
                        "you are a read-only member of group {group}: you cannot share {what} there"
                    )));
                }
            }
        }
        Ok(set.iter().map(ToString::to_string).collect())
    }

    /// The item index, brought in line with the store (see the module docs).
    fn synced_knowledge_index(&self) -> Result<MutexGuard<'_, Option<IndexState>>> {
        let mut guard = self
            .knowledge
            .state
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        // Read the version before the rows: a write in between leaves the state one version
        // behind, which the next call syncs.
        let version = self.store().knowledge_version()?;
        if guard.as_ref().is_some_and(|s| s.version == version) {
            return Ok(guard);
        }
        if guard.is_none() {
            *guard = Some(IndexState {
                version: -1,
                index: TantivyIndex::in_memory()?,
                revs: HashMap::new(),
                vectors: HashMap::new(),
                vectors_loaded: false,
            });
        }
        let Some(state) = guard.as_mut() else {
            return Ok(guard);
        };
        let current: HashMap<i64, i64> = self.store().knowledge_revs()?.into_iter().collect();
        let stale: Vec<i64> = current
            .iter()
            .filter(|(seq, rev)| state.revs.get(*seq) != Some(*rev))
            .map(|(seq, _)| *seq)
            .collect();
        for seq in state.revs.keys().filter(|s| !current.contains_key(*s)) {
            state.index.delete_document(*seq as u64)?;
        }
        let records = self.store().knowledge_by_seqs(&stale)?;
        for r in &records {
            let heading = index_heading(r);
            state.index.replace_document(
                r.seq as u64,
                &[ChunkEntry {
                    chunk_id: r.seq as u64,
                    title: &r.task,
                    heading: &heading,
                    body: &r.content,
                }],
            )?;
        }
        state.index.commit()?;
        state.revs = current;
        state.vectors.retain(|seq, _| state.revs.contains_key(seq));
        if let Some(sem) = &self.semantic {
            let model = sem.embedder.model_id().to_owned();
            if !state.vectors_loaded {
                state.vectors = self
                    .store()
                    .knowledge_vectors(&model)?
                    .into_iter()
                    .filter(|(seq, (rev, _))| state.revs.get(seq) == Some(rev))
                    .map(|(seq, (rev, v))| (seq, (rev, unit(v))))
                    .collect();
                state.vectors_loaded = true;
            }
            let missing: Vec<i64> = state
                .revs
                .iter()
                .filter(|(seq, rev)| state.vectors.get(*seq).map(|(r, _)| r) != Some(*rev))
                .map(|(seq, _)| *seq)
                .collect();
            for batch in missing.chunks(64) {
                let records = self.store().knowledge_by_seqs(batch)?;
                let texts: Vec<String> = records.iter().map(embedding_text).collect();
                let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
                let embedded = sem
                    .embedder
                    .embed_passages(&refs)
                    .map_err(|e| EngineError::Model(e.to_string()))?;
                for (r, v) in records.iter().zip(embedded) {
                    // The stored vector is a cache: failing to persist it costs a re-embed
                    // later, not a wrong answer.
                    if let Err(e) = self.store().put_knowledge_vector(r.seq, &model, r.rev, &v) {
                        tracing::warn!("cannot store the vector of {}: {e}", r.id);
                    }
                    state.vectors.insert(r.seq, (r.rev, unit(v)));
                }
            }
        }
        state.version = version;
        Ok(guard)
    }
}

// ----- pure helpers (tested directly) ---------------------------------------------------------

/// Stage 2: quality first, then scope priority (most personal first), then relevance, then id
/// (a stable order for equal items).
pub(crate) fn rank_hits(hits: &mut [KnowledgeHit]) {
    hits.sort_by(|a, b| {
        b.quality_score
            .total_cmp(&a.quality_score)
            .then(
                a.scope_priority
                    .unwrap_or(u8::MAX)
                    .cmp(&b.scope_priority.unwrap_or(u8::MAX)),
            )
            .then(b.relevance.total_cmp(&a.relevance))
            .then(a.item.id.cmp(&b.item.id))
    });
}

/// Applies the non-LLM part of an update (validated).
fn apply_update(
    mut item: KnowledgeItem,
    update: &KnowledgeUpdate,
    scopes: Option<Vec<String>>,
) -> Result<KnowledgeItem> {
    if let Some(score) = update.update_score {
        check_score(score)?;
        item.eval.score = score;
    }
    if let Some(c) = update.confidence {
        check_confidence(c)?;
        item.eval.confidence = c;
    }
    if let Some(case) = &update.add_helpful_case {
        item.eval.helpful = item.eval.helpful.saturating_add(1);
        item.eval.helpful_history.push(stamped(case));
    }
    if let Some(case) = &update.add_harmful_case {
        item.eval.harmful = item.eval.harmful.saturating_add(1);
        item.eval.harmful_history.push(stamped(case));
    }
    if let Some(task) = &update.task {
        item.task = task.trim().to_owned();
    }
    if let Some(content) = &update.content {
        let content = content.trim();
        if content.is_empty() {
            return Err(EngineError::InvalidInput(
                "knowledge content is empty".into(),
            ));
        }
        item.content = content.to_owned();
    }
    if let Some(types) = &update.types {
        item.types = check_types(types)?;
    }
    if let Some(tags) = &update.tags {
        item.tags = tags.clone();
    }
    if let Some(scopes) = scopes {
        item.scopes = scopes;
    }
    if let Some(ids) = &update.resource_ids {
        item.resource_ids = dedup(ids.clone());
    }
    Ok(item)
}

fn stamped(case: &FeedbackCase) -> FeedbackCase {
    let mut case = case.clone();
    if case.timestamp.trim().is_empty() {
        case.timestamp = rfc3339_now();
    }
    case
}

fn check_score(score: u8) -> Result<()> {
    if (1..=5).contains(&score) {
        Ok(())
    } else {
        Err(EngineError::InvalidInput(format!(
            "score {score} must be between 1 and 5"
        )))
    }
}

fn check_confidence(c: f64) -> Result<()> {
    if (0.0..=1.0).contains(&c) {
        Ok(())
    } else {
        Err(EngineError::InvalidInput(format!(
            "confidence {c} must be between 0 and 1"
        )))
    }
}

fn check_types(types: &[String]) -> Result<Vec<String>> {
    let types = dedup(types.iter().map(|t| t.trim().to_owned()).collect());
    if types.is_empty() {
        return Err(EngineError::InvalidInput(format!(
            "a knowledge item needs at least one type ({})",
            KNOWLEDGE_TYPES.join(", ")
        )));
    }
    if let Some(bad) = types
        .iter()
        .find(|t| !KNOWLEDGE_TYPES.contains(&t.as_str()))
    {
        return Err(EngineError::InvalidInput(format!(
            "unknown knowledge type {bad:?} (expected {})",
            KNOWLEDGE_TYPES.join(", ")
        )));
    }
    Ok(types)
}

pub(crate) fn parse_scopes(scopes: &[String]) -> Result<ScopeSet> {
    scopes
        .iter()
        .map(|s| {
            s.trim()
                .parse::<Scope>()
                .map_err(|e| EngineError::InvalidInput(e.to_string()))
        })
        .collect()
}

fn canonical_scopes(scopes: &[String]) -> Result<Vec<String>> {
    Ok(parse_scopes(scopes)?
        .iter()
        .map(ToString::to_string)
        .collect())
}

/// Stored scopes as a set (a stored string that no longer parses grants nothing).
fn parse_scope_set(scopes: &[String]) -> ScopeSet {
    scopes.iter().filter_map(|s| s.parse().ok()).collect()
}

/// Keeps the first of each value, in order, dropping empty ones.
fn dedup(values: Vec<String>) -> Vec<String> {
    let mut seen = HashSet::new();
    values
        .into_iter()
        .filter(|v| !v.trim().is_empty() && seen.insert(v.clone()))
        .collect()
}

fn not_found(id: &str) -> EngineError {
    EngineError::NotFound(format!("no knowledge item {id}"))
}

/// `knowledge-{unix_ms}-{12 random hex digits}`.
pub(crate) fn new_knowledge_id() -> Result<String> {
    let mut bytes = [0u8; 6];
    getrandom::fill(&mut bytes)
        .map_err(|e| EngineError::InvalidInput(format!("no randomness for an id: {e}")))?;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    Ok(format!("knowledge-{}-{hex}", now_ms()))
}

/// The current UTC time as RFC 3339 (seconds).
fn rfc3339_now() -> String {
    rfc3339(now_ms() / 1000)
}

/// Unix seconds → `YYYY-MM-DDTHH:MM:SSZ`.
pub(crate) fn rfc3339(secs: i64) -> String {
    chrono::DateTime::from_timestamp(secs, 0)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
        .unwrap_or_default()
}

/// What the index's heading field holds: types and tag values, so `tool` or `coding_style`
/// find items too.
fn index_heading(r: &KnowledgeItem) -> String {
    let mut parts: Vec<&str> = r.types.iter().map(String::as_str).collect();
    parts.extend(r.tags.values().map(String::as_str));
    parts.join(" ")
}

fn embedding_text(r: &KnowledgeItem) -> String {
    if r.task.is_empty() {
        r.content.clone()
    } else {
        format!("{}\n{}", r.task, r.content)
    }
}

fn unit(mut v: Vec<f32>) -> Vec<f32> {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if n > 0.0 {
        v.iter_mut().for_each(|x| *x /= n);
    }
    v
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Normalised weighted sum (½ keyword, ½ embedding; each min–max scaled) of two candidate
/// lists, best first, at most `want`.
fn fuse(keyword: &[(u64, f32)], dense: &[(u64, f32)], want: usize) -> Vec<(u64, f32)> {
    let scaled = |xs: &[(u64, f32)]| -> HashMap<u64, f32> {
        let lo = xs.iter().map(|x| x.1).fold(f32::INFINITY, f32::min);
        let hi = xs.iter().map(|x| x.1).fold(f32::NEG_INFINITY, f32::max);
        xs.iter()
            .map(|(id, s)| (*id, if hi > lo { (s - lo) / (hi - lo) } else { 1.0 }))
            .collect()
    };
    let (k, d) = (scaled(keyword), scaled(dense));
    let ids: BTreeSet<u64> = k.keys().chain(d.keys()).copied().collect();
    let mut out: Vec<(u64, f32)> = ids
        .into_iter()
        .map(|id| {
            let score =
                0.5 * k.get(&id).copied().unwrap_or(0.0) + 0.5 * d.get(&id).copied().unwrap_or(0.0);
            (id, score)
        })
        .collect();
    out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    out.truncate(want);
    out
}

/// Text reduced to what near-duplicate detection compares: lower-case letters and digits of
/// any script (punctuation and spacing differences do not matter).
fn normalise(text: &str) -> Vec<char> {
    text.chars()
        .flat_map(char::to_lowercase)
        .filter(|c| c.is_alphanumeric())
        .collect()
}

/// Character 3-grams of the normalised text (the whole text when shorter). Characters, not
/// words: Chinese has no spaces, and near-duplicates share most 3-grams in either language.
pub(crate) fn shingle_set(text: &str) -> HashSet<String> {
    let chars = normalise(text);
    if chars.len() < 3 {
        return std::iter::once(chars.iter().collect::<String>())
            .filter(|s| !s.is_empty())
            .collect();
    }
    chars.windows(3).map(|w| w.iter().collect()).collect()
}

pub(crate) fn jaccard(a: &HashSet<String>, b: &HashSet<String>) -> f64 {
    if a.is_empty() && b.is_empty() {
        return 0.0;
    }
    let inter = a.intersection(b).count();
    let union = a.len() + b.len() - inter;
    inter as f64 / union as f64
}

/// Connected components of "similar at or above `threshold`" among items with the same owner
/// and scopes.
/// Returns (member indexes, each member's best similarity to another member), for groups of
/// two or more, in a stable order.
fn group_near_duplicates(
    items: &[KnowledgeItem],
    threshold: f64,
    similarity: impl Fn(usize, usize) -> Option<f64>,
) -> Vec<(Vec<usize>, Vec<f64>)> {
    let mut parent: Vec<usize> = (0..items.len()).collect();
    fn find(parent: &mut [usize], mut i: usize) -> usize {
        while parent[i] != i {
            parent[i] = parent[parent[i]];
            i = parent[i];
        }
        i
    }
    let mut best = vec![0.0f64; items.len()];
    // Same owner and scopes = same readers (read scopes are `scopes` ∪ `user:<owner>`).
    let readers: Vec<(&str, BTreeSet<&str>)> = items
        .iter()
        .map(|i| {
            (
                i.owner.as_str(),
                i.scopes.iter().map(String::as_str).collect(),
            )
        })
        .collect();
    for a in 0..items.len() {
        for b in a + 1..items.len() {
            if readers[a] != readers[b] {
                continue;
            }
            let Some(s) = similarity(a, b) else { continue };
            if s >= threshold {
                best[a] = best[a].max(s);
                best[b] = best[b].max(s);
                let (ra, rb) = (find(&mut parent, a), find(&mut parent, b));
                if ra != rb {
                    parent[rb.max(ra)] = ra.min(rb);
                }
            }
        }
    }
    let mut groups: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for i in 0..items.len() {
        let root = find(&mut parent, i);
        groups.entry(root).or_default().push(i);
    }
    groups
        .into_values()
        .filter(|g| g.len() > 1)
        .map(|g| {
            let sims = g.iter().map(|&i| best[i]).collect();
            (g, sims)
        })
        .collect()
}

/// The order in which a group's items are preferred as the one kept.
fn better(a: &KnowledgeItem, b: &KnowledgeItem) -> std::cmp::Ordering {
    b.eval
        .quality()
        .total_cmp(&a.eval.quality())
        .then(b.eval.score.cmp(&a.eval.score))
        .then(b.eval.confidence.total_cmp(&a.eval.confidence))
        .then(b.updated_at_ms.cmp(&a.updated_at_ms))
        .then(a.id.cmp(&b.id))
}

/// Sentences with their closing punctuation (Chinese and English).
fn sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for c in text.chars() {
        cur.push(c);
        if matches!(c, '。' | '！' | '？' | '；' | '!' | '?' | ';' | '\n')
            || (c == '.'
                && !cur
                    .trim_end_matches('.')
                    .ends_with(|d: char| d.is_ascii_digit()))
        {
            if !cur.trim().is_empty() {
                out.push(cur.trim().to_owned());
            }
            cur.clear();
        }
    }
    if !cur.trim().is_empty() {
        out.push(cur.trim().to_owned());
    }
    out
}

/// The no-LLM merge: the kept item's content, then every sentence of the others it does not
/// already say (compared normalised).
pub(crate) fn extractive_merge(members: &[&KnowledgeItem]) -> String {
    let Some(first) = members.first() else {
        return String::new();
    };
    let mut content = first.content.trim().to_owned();
    let mut said: HashSet<String> = sentences(&content)
        .iter()
        .map(|s| normalise(s).into_iter().collect())
        .collect();
    let whole: String = normalise(&content).into_iter().collect();
    for other in &members[1..] {
        for s in sentences(&other.content) {
            let key: String = normalise(&s).into_iter().collect();
            if key.is_empty() || said.contains(&key) || whole.contains(&key) {
                continue;
            }
            let ascii_join = content.chars().last().is_some_and(|c| c.is_ascii())
                || s.chars().next().is_some_and(|c| c.is_ascii_alphanumeric());
            if !content.is_empty() && ascii_join {
                content.push(' ');
            }
            content.push_str(&s);
            said.insert(key);
        }
    }
    content
}

/// The kept item after a merge: `content`, summed feedback, unions of types, tags (the kept
/// item's values win), resources and source URLs, the best score and confidence.
fn merge_records(members: &[&KnowledgeItem], content: String) -> KnowledgeItem {
    let mut kept = members[0].clone();
    kept.content = content;
    for other in &members[1..] {
        kept.types.extend(other.types.iter().cloned());
        for (k, v) in &other.tags {
            kept.tags.entry(k.clone()).or_insert_with(|| v.clone());
        }
        kept.resource_ids.extend(other.resource_ids.iter().cloned());
        kept.source.urls.extend(other.source.urls.iter().cloned());
        kept.eval.helpful = kept.eval.helpful.saturating_add(other.eval.helpful);
        kept.eval.harmful = kept.eval.harmful.saturating_add(other.eval.harmful);
        kept.eval.score = kept.eval.score.max(other.eval.score);
        kept.eval.confidence = kept.eval.confidence.max(other.eval.confidence);
        kept.eval
            .helpful_history
            .extend(other.eval.helpful_history.iter().cloned());
        kept.eval
            .harmful_history
            .extend(other.eval.harmful_history.iter().cloned());
    }
    kept.types = dedup(kept.types);
    kept.resource_ids = dedup(kept.resource_ids);
    kept.source.urls = dedup(kept.source.urls);
    kept
}
