//! A question over this computer's knowledge base and the team's at once. The local copilot
//! answers: it searches this computer's engine and, with the user's key, the team server's
//! search, and cites both. Conversations and traces stay on this computer; nothing local is
//! sent to the server, only the question's searches. The server checks the user's permissions
//! on every search, as it does for the window's other team reads.

use std::sync::{Arc, Mutex};

use knowhub_agent::{Caller, EngineKnowledge, KnowledgeBase};
use knowhub_client::{SearchMode, SearchRequest};
use knowhub_engine::{
    ChunkId, DocumentId, DocumentMeta, EngineError, QueryableData, Retrieval, RetrievalMode,
    RetrievalTrace, SearchHit, SearchOptions, SessionRecord, SessionSummary, TraceRecord,
    TurnRecord,
};

use crate::team::TeamLink;

/// Evidence ids of passages the team server returned start with this, so that an answer's
/// citations (new or replayed from its trace) open in the team base.
pub(crate) const TEAM_EVIDENCE: &str = "team:";

/// Rank fusion constant (reciprocal rank fusion, as the engine fuses keyword and dense lists).
const FUSION_K: f32 = 60.0;

type Result<T> = std::result::Result<T, EngineError>;

/// This computer's engine session and the team server's search, as one knowledge base.
pub(crate) struct BothKnowledge<'e> {
    local: EngineKnowledge<'e>,
    team: Arc<TeamLink>,
    /// Why the team base could not be searched (the answer then rests on this computer's).
    team_error: Mutex<Option<String>>,
    /// Whether this computer's documents are searched too (else the team's only).
    local_documents: bool,
}

impl<'e> BothKnowledge<'e> {
    pub(crate) fn new(local: EngineKnowledge<'e>, team: Arc<TeamLink>) -> BothKnowledge<'e> {
        BothKnowledge {
            local,
            team,
            team_error: Mutex::new(None),
            local_documents: true,
        }
    }

    /// The team's search only: this computer's copilot answers from the team's documents
    /// (the SQL tool gets no local data either); conversations still stay on this computer.
    pub(crate) fn team_only(local: EngineKnowledge<'e>, team: Arc<TeamLink>) -> BothKnowledge<'e> {
        BothKnowledge {
            local_documents: false,
            ..BothKnowledge::new(local, team)
        }
    }

    /// Why the team base was left out of the answer, if it was.
    pub(crate) fn team_error(&self) -> Option<String> {
        self.team_error
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    fn team_hits(&self, query: &str, options: &SearchOptions) -> Vec<SearchHit> {
        let request = SearchRequest {
            query: query.to_string(),
            limit: Some(options.limit.clamp(1, 100)),
            max_per_document: Some(options.max_per_document.max(1)),
            mode: match options.mode {
                RetrievalMode::Hybrid => SearchMode::Hybrid,
                RetrievalMode::Keyword => SearchMode::Keyword,
                RetrievalMode::Semantic => SearchMode::Semantic,
            },
            from: options.meta.from.clone(),
            since: options.meta.since.map(|d| d.to_string()),
            until: options.meta.until.map(|d| d.to_string()),
        };
        match self.team.client.search(&request) {
            Ok(hits) => hits.into_iter().map(team_hit).collect(),
            Err(e) => {
                *self.team_error.lock().unwrap_or_else(|p| p.into_inner()) = Some(e.to_string());
                Vec::new()
            }
        }
    }
}

/// A passage from the team server as a hit of this knowledge base.
fn team_hit(hit: knowhub_client::SearchHit) -> SearchHit {
    SearchHit {
        rank: hit.rank,
        evidence_id: format!("{TEAM_EVIDENCE}{}", hit.evidence_id),
        score: hit.score,
        keyword_rank: None,
        semantic_rank: None,
        chunk_id: ChunkId(hit.chunk_id),
        document_id: DocumentId(hit.document_id),
        path: hit.path,
        title: hit.title,
        kind: hit.kind,
        page_start: hit.page_start,
        page_end: hit.page_end,
        heading_path: hit.heading_path,
        snippet: hit.snippet,
        highlights: Vec::new(),
        char_start: 0,
        char_end: hit.text.chars().count(),
        text: hit.text,
        url: hit.url,
        meta: DocumentMeta {
            authors: hit.meta.authors,
            recipients: hit.meta.recipients,
            date: hit.meta.date,
        },
    }
}

/// Both lists in one order by reciprocal rank fusion (this computer's first among equals),
/// at most `limit`; each hit keeps its own score.
fn fuse(local: Vec<SearchHit>, team: Vec<SearchHit>, limit: usize) -> Vec<SearchHit> {
    let mut all: Vec<(f32, usize, SearchHit)> = local
        .into_iter()
        .enumerate()
        .map(|(i, h)| (1.0 / (FUSION_K + i as f32 + 1.0), 0, h))
        .chain(
            team.into_iter()
                .enumerate()
                .map(|(i, h)| (1.0 / (FUSION_K + i as f32 + 1.0), 1, h)),
        )
        .collect();
    all.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    all.into_iter()
        .take(limit)
        .zip(1..)
        .map(|((_, _, mut hit), rank)| {
            hit.rank = rank;
            hit
        })
        .collect()
}

impl KnowledgeBase for BothKnowledge<'_> {
    fn caller(&self) -> Caller {
        self.local.caller()
    }

    fn retrieve(&self, query: &str, options: &SearchOptions) -> Result<Retrieval> {
        if !self.local_documents {
            let hits = fuse(
                Vec::new(),
                self.team_hits(query, options),
                options.limit.max(1),
            );
            return Ok(Retrieval {
                trace: RetrievalTrace {
                    mode: options.mode,
                    fused: hits.len(),
                    skipped: vec!["this computer's documents (the team's only)".into()],
                    // The server checked the user's permissions on its own snapshot.
                    permission_snapshot: format!("team:{}", self.team.setting.server),
                    ..RetrievalTrace::default()
                },
                hits,
            });
        }
        let mut local = self.local.retrieve(query, options)?;
        // A search narrowed to some of this computer's documents is not the team's to answer.
        if options.filter.is_some() {
            return Ok(local);
        }
        let team = self.team_hits(query, options);
        local.hits = fuse(local.hits, team, options.limit.max(1));
        Ok(local)
    }

    // The SQL tool, the user's profile and the conversation are this computer's.
    fn queryable_data(&self) -> Result<QueryableData> {
        let mut data = self.local.queryable_data()?;
        if !self.local_documents {
            data.tables.clear();
            data.sources.clear();
        }
        Ok(data)
    }

    fn org_ids(&self) -> Result<Vec<String>> {
        self.local.org_ids()
    }

    fn user_profile(&self, project: Option<&str>, limit: usize) -> Result<Vec<String>> {
        self.local.user_profile(project, limit)
    }

    fn create_conversation(&self, title: &str) -> Result<SessionRecord> {
        self.local.create_conversation(title)
    }

    fn turns(&self, conversation: &str, limit: usize) -> Result<Vec<TurnRecord>> {
        self.local.turns(conversation, limit)
    }

    fn turns_between(
        &self,
        conversation: &str,
        range: (i64, i64),
        limit: usize,
    ) -> Result<Vec<TurnRecord>> {
        self.local.turns_between(conversation, range, limit)
    }

    fn summary(&self, conversation: &str) -> Result<Option<SessionSummary>> {
        self.local.summary(conversation)
    }

    fn set_summary(&self, conversation: &str, summary: &SessionSummary) -> Result<()> {
        self.local.set_summary(conversation, summary)
    }

    fn record_turn(&self, turn: &TurnRecord) -> Result<i64> {
        self.local.record_turn(turn)
    }

    fn record_trace(&self, trace: &TraceRecord) -> Result<()> {
        self.local.record_trace(trace)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hit(evidence: &str) -> SearchHit {
        SearchHit {
            rank: 0,
            evidence_id: evidence.into(),
            score: 0.5,
            keyword_rank: None,
            semantic_rank: None,
            chunk_id: ChunkId(1),
            document_id: DocumentId(1),
            path: String::new(),
            title: String::new(),
            kind: None,
            page_start: None,
            page_end: None,
            heading_path: Vec::new(),
            snippet: String::new(),
            highlights: Vec::new(),
            text: String::new(),
            char_start: 0,
            char_end: 0,
            url: None,
            meta: DocumentMeta::default(),
        }
    }

    #[test]
    fn both_lists_interleave_by_rank_this_computer_first_among_equals() {
        let local = vec![hit("l1"), hit("l2"), hit("l3")];
        let team = vec![hit("team:t1"), hit("team:t2")];
        let fused = fuse(local, team, 4);
        let order: Vec<(&str, usize)> = fused
            .iter()
            .map(|h| (h.evidence_id.as_str(), h.rank))
            .collect();
        assert_eq!(
            order,
            [("l1", 1), ("team:t1", 2), ("l2", 3), ("team:t2", 4)]
        );
        assert_eq!(fuse(Vec::new(), vec![hit("team:t1")], 3).len(), 1);
    }
}
