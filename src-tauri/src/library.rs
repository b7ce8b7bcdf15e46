//! What the window reads and asks, behind one trait: [`Library`], implemented by this
//! computer's knowledge base ([`LocalLibrary`], the engine and the local copilot) and by the
//! joined team server ([`crate::team::TeamLibrary`], its client). Commands pick one by the
//! window's [`Base`], so the UI code is the same for both and never forks.

use std::path::PathBuf;

use knowhub_agent::{
    Agent, AgentEvent, AgentOptions, AgentState, AskRequest, CancelFlag, EngineKnowledge,
};
use knowhub_engine::{DocRef, DocumentId};

use crate::dto::*;
use crate::error::{CmdResult, CommandError};
use crate::state::{AppState, Signed};

/// The read paths of a knowledge base, as the window uses them.
pub(crate) trait Library {
    /// A cited answer; `on_event` sees the steps and the text as it is written.
    fn ask(
        &self,
        question: String,
        session: Option<String>,
        brief: bool,
        cancel: &CancelFlag,
        on_event: &mut dyn FnMut(ChatEvent),
    ) -> CmdResult<Answer>;
    fn conversations(&self) -> CmdResult<Vec<Conversation>>;
    fn conversation(&self, id: &str) -> CmdResult<Vec<Answer>>;
    fn delete_conversation(&self, id: &str) -> CmdResult<()>;
    fn trace(&self, trace_id: &str) -> CmdResult<TraceView>;
    fn send_feedback(&self, trace_id: &str, helpful: bool, note: &str) -> CmdResult<()>;
    fn open_document(&self, id: i64) -> CmdResult<DocumentPreview>;
    /// A file on this computer holding the document (the original, or a downloaded copy).
    fn local_file(&self, id: i64) -> CmdResult<PathBuf>;
    fn sources(&self, filter: Option<&str>) -> CmdResult<SourcesView>;
    /// What the copilot remembers about the user in this knowledge base, most confident
    /// first (theirs alone: administrators do not see it).
    fn memories(&self) -> CmdResult<Vec<MemoryRow>>;
    fn forget_memory(&self, uri: &str) -> CmdResult<()>;
    /// Remembers what the user said about themself in one of their conversations (and a task
    /// it completed), with the answer model of whoever answered it.
    fn remember(&self, conversation: &str) -> CmdResult<RememberReport>;
}

/// A memory as the Memory pane lists it.
pub(crate) fn memory_row(n: knowhub_engine::MemoryNode) -> MemoryRow {
    MemoryRow {
        uri: n.uri,
        kind: n.kind,
        content: n.content,
        confidence: n.confidence,
        confirmations: n.confirmations,
        project: n.project,
        found_by: n.found_by,
        updated_at_ms: n.updated_at_ms as f64,
    }
}

/// This computer's knowledge base, as the signed-in user.
pub(crate) struct LocalLibrary<'a> {
    pub state: &'a AppState,
    pub signed: Signed,
    /// Set: questions search the team base too (see [`crate::both`]).
    pub team: Option<std::sync::Arc<crate::team::TeamLink>>,
    /// With `team`: questions search the team only, not this computer's documents (the team
    /// base answered by this computer's copilot, see [`crate::team_here`]).
    pub team_only: bool,
}

pub(crate) fn answer_of(
    state: &AgentState,
    session_id: Option<String>,
    total_ms: u64,
    helpful: Option<bool>,
) -> Answer {
    let evidence = |id: &str| state.evidence_items.iter().find(|e| e.evidence_id == id);
    let sources = state
        .output
        .rendered_sources
        .iter()
        .map(|r| {
            let e = evidence(&r.evidence_id);
            Source {
                // A question over both bases cites the team's passages too.
                base: if r.evidence_id.starts_with(crate::both::TEAM_EVIDENCE) {
                    Base::Team
                } else {
                    Base::Local
                },
                number: n32(r.number),
                evidence_id: r.evidence_id.clone(),
                kind: e.map(|e| e.kind.clone()).unwrap_or_default(),
                title: r.title.clone(),
                page: r.page,
                heading: r.heading.clone(),
                uri: r.uri.clone(),
                text: r.text.clone(),
                document_id: e.and_then(|e| e.source.doc_id),
                chunk_id: e.and_then(|e| e.source.chunk_id),
                sql: e.and_then(|e| e.source.sql.clone()),
                authors: r.meta.authors.clone(),
                date: r.meta.date.clone(),
            }
        })
        .collect();
    Answer {
        base: Base::Local,
        session_id,
        trace_id: state.trace_id.clone(),
        question: state.input.query.clone(),
        text: state.output.final_answer.clone(),
        stop_reason: state.output.stop_reason.as_str().to_string(),
        route: state.plan.route.as_str().to_string(),
        sources,
        total_ms: n32(total_ms),
        written_by: state.draft.written_by.clone(),
        model: state.llm.clone(),
        helpful,
        notice: None,
    }
}

fn stored_state(s: &Signed, trace_id: &str) -> CmdResult<(AgentState, u64)> {
    let record = s.engine.trace(&s.ctx, trace_id)?;
    let state = serde_json::from_str::<AgentState>(&record.state).map_err(|e| {
        CommandError::new("internal", format!("the stored trace is unreadable: {e}"))
    })?;
    Ok((state, record.total_ms))
}

pub(crate) fn file_name(path: &str) -> String {
    std::path::Path::new(path)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.to_string())
}

fn queue_of(s: &Signed) -> CmdResult<QueueView> {
    let q = s.engine.queue(&s.ctx, 200)?;
    Ok(QueueView {
        queued: n32(q.counts.queued),
        running: n32(q.counts.running),
        failed: n32(q.counts.failed),
        done: n32(q.counts.done),
        paused: q.counts.paused,
        failures: q
            .jobs
            .iter()
            .filter(|j| j.error.is_some() && j.state == knowhub_engine::JobState::Failed)
            .map(|j| JobFailure {
                path: j.path.clone(),
                error: j.error.clone().unwrap_or_default(),
            })
            .collect(),
    })
}

impl LocalLibrary<'_> {
    /// Every conversation stored on this computer (the newest 200).
    pub(crate) fn all_conversations(&self) -> CmdResult<Vec<Conversation>> {
        let s = &self.signed;
        Ok(s.engine
            .sessions(&s.ctx, 200)?
            .into_iter()
            .map(|c| Conversation {
                id: c.id,
                title: c.title,
                updated_at_ms: c.updated_at_ms as f64,
            })
            .collect())
    }
}

impl Library for LocalLibrary<'_> {
    fn ask(
        &self,
        question: String,
        session: Option<String>,
        brief: bool,
        cancel: &CancelFlag,
        on_event: &mut dyn FnMut(ChatEvent),
    ) -> CmdResult<Answer> {
        let s = &self.signed;
        let llm = self.state.llm()?;
        let options = AgentOptions {
            brief_answers: brief,
            ..AgentOptions::default()
        };
        let agent =
            Agent::new(s.engine.clone(), llm, options).with_schemas(self.state.schemas.clone());
        let request = AskRequest {
            question,
            session,
            ephemeral: false,
            project: None,
            cancel: cancel.clone(),
        };
        let mut events = |e: &AgentEvent| {
            on_event(match e {
                AgentEvent::Step {
                    node,
                    status,
                    timing_ms,
                } => ChatEvent::Step {
                    node: node.clone(),
                    status: status.clone(),
                    timing_ms: n32(*timing_ms),
                },
                AgentEvent::Token(t) => ChatEvent::Token { text: t.clone() },
                AgentEvent::Replace(t) => ChatEvent::Replace { text: t.clone() },
            });
        };
        // Each question its own trace: the signed-in context lives as long as the sign-in.
        let ctx = knowhub_engine::RequestContext {
            trace_id: knowhub_engine::new_trace_id(),
            ..s.ctx.clone()
        };
        let (outcome, notice) = match &self.team {
            None => (agent.ask(&ctx, &request, &mut events)?, None),
            Some(team) => {
                let local = EngineKnowledge::new(s.engine.session(&ctx)?);
                let kb = if self.team_only {
                    crate::both::BothKnowledge::team_only(local, team.clone())
                } else {
                    crate::both::BothKnowledge::new(local, team.clone())
                };
                let outcome = agent.ask_in(&kb, &ctx.trace_id, &request, &mut events)?;
                let notice = kb.team_error().map(|e| {
                    if self.team_only {
                        format!("the team knowledge base could not be searched ({e}): this answer has no evidence from it")
                    } else {
                        format!("the team knowledge base could not be searched ({e}): this answer uses this computer's documents only")
                    }
                });
                (outcome, notice)
            }
        };
        // A new answer has no verdict yet.
        let mut answer = answer_of(
            &outcome.state,
            outcome.session_id.clone(),
            outcome.total_ms,
            None,
        );
        answer.notice = notice;
        Ok(answer)
    }

    /// This computer's conversations, except those over the team's documents (listed under
    /// the team base).
    fn conversations(&self) -> CmdResult<Vec<Conversation>> {
        let team = crate::team_here::AnsweredHere::of(&self.state.data_dir).all();
        let mut all = self.all_conversations()?;
        all.retain(|c| !team.contains(&c.id));
        Ok(all)
    }

    fn conversation(&self, id: &str) -> CmdResult<Vec<Answer>> {
        let s = &self.signed;
        let turns = s.engine.session_turns(&s.ctx, id, 500)?;
        Ok(turns
            .into_iter()
            .map(|t| {
                let stored = s
                    .engine
                    .trace(&s.ctx, &t.trace_id)
                    .ok()
                    .and_then(|r| serde_json::from_str::<AgentState>(&r.state).ok());
                match stored {
                    Some(st) => {
                        let helpful = s
                            .engine
                            .feedback(&s.ctx, &st.trace_id)
                            .ok()
                            .and_then(|v| {
                                v.into_iter()
                                    .rev()
                                    .find(|f| f.user_id == s.ctx.user.as_str())
                            })
                            .map(|f| f.helpful);
                        answer_of(&st, Some(id.to_owned()), 0, helpful)
                    }
                    // A trace that cannot be read still shows the words.
                    None => Answer {
                        base: Base::Local,
                        session_id: Some(id.to_owned()),
                        trace_id: t.trace_id,
                        question: t.question,
                        text: t.answer,
                        stop_reason: t.stop_reason,
                        route: String::new(),
                        sources: Vec::new(),
                        total_ms: 0,
                        written_by: String::new(),
                        model: None,
                        helpful: None,
                        notice: None,
                    },
                }
            })
            .collect())
    }

    fn delete_conversation(&self, id: &str) -> CmdResult<()> {
        let s = &self.signed;
        s.engine.delete_session(&s.ctx, id)?;
        Ok(())
    }

    fn trace(&self, trace_id: &str) -> CmdResult<TraceView> {
        let (st, total_ms) = stored_state(&self.signed, trace_id)?;
        let cited: Vec<&str> = st
            .output
            .final_citations
            .iter()
            .map(|c| c.evidence_id.as_str())
            .collect();
        Ok(TraceView {
            trace_id: st.trace_id.clone(),
            question: st.input.query.clone(),
            standalone_question: st.input.standalone_query.clone(),
            conversation_summary: st.input.conversation_summary.clone(),
            language: st.input.language.clone(),
            route: st.plan.route.as_str().into(),
            routed_by: st.plan.routed_by.clone(),
            stop_reason: st.output.stop_reason.as_str().into(),
            perm_snapshot_id: st.authz.perm_snapshot_id.clone(),
            total_ms: n32(total_ms),
            steps: st
                .trace_steps
                .iter()
                .map(|t| TraceStepView {
                    node: t.node.clone(),
                    action: t.action.clone(),
                    status: t.status.clone(),
                    timing_ms: n32(t.timing_ms),
                    error: t.err.as_ref().map(|e| format!("{}: {}", e.kind, e.msg)),
                })
                .collect(),
            evidence: st
                .evidence_items
                .iter()
                .map(|e| EvidenceView {
                    evidence_id: e.evidence_id.clone(),
                    kind: e.kind.clone(),
                    title: e.source.title.clone().unwrap_or_default(),
                    page: e.source.page,
                    authz: e.authz.result.clone(),
                    score: e.score,
                    cited: cited.contains(&e.evidence_id.as_str()),
                    excerpt: e.text.chars().take(280).collect(),
                })
                .collect(),
            sql: st.tools.sql.as_ref().map(|q| SqlView {
                source: q.source.clone(),
                sql: q.generated_sql.clone(),
                generated_by: q.generated_by.clone(),
                preview: q.result_preview.clone(),
            }),
            rag_queries: st
                .tools
                .rag
                .as_ref()
                .map(|r| r.attempts.clone())
                .unwrap_or_default(),
            cut_sentences: st.draft.cut_sentences.clone(),
            model: st.llm.clone(),
            prompt_tokens: n32(st.prompt_tokens),
            completion_tokens: n32(st.completion_tokens),
            tool_errors: st
                .tools
                .errors
                .iter()
                .map(|e| format!("{} ({}): {}", e.tool, e.kind, e.msg))
                .collect(),
        })
    }

    fn send_feedback(&self, trace_id: &str, helpful: bool, note: &str) -> CmdResult<()> {
        let s = &self.signed;
        let (st, _) = stored_state(s, trace_id)?;
        let cited: Vec<String> = st
            .output
            .final_citations
            .iter()
            .map(|c| c.evidence_id.clone())
            .collect();
        s.engine
            .record_feedback(&s.ctx, trace_id, helpful, note, &cited)?;
        Ok(())
    }

    fn open_document(&self, id: i64) -> CmdResult<DocumentPreview> {
        let s = &self.signed;
        let view = s.engine.open_document(&s.ctx, DocRef::Id(DocumentId(id)))?;
        let d = &view.document;
        Ok(DocumentPreview {
            id: d.id.0,
            title: d.title.clone().unwrap_or_else(|| file_name(&d.path)),
            path: d.path.clone(),
            kind: d.kind.clone(),
            page_count: d.page_count,
            text: view.text.clone(),
            passages: view
                .passages
                .iter()
                .map(|p| PassageRef {
                    chunk_id: p.chunk_id.0,
                    page: p.page_start,
                    heading: p.heading_path.clone(),
                    // Offsets are in characters of `text` (the UI slices by code points).
                    char_start: n32(p.char_start),
                    char_end: n32(p.char_end),
                })
                .collect(),
        })
    }

    fn local_file(&self, id: i64) -> CmdResult<PathBuf> {
        let s = &self.signed;
        let document = s.engine.document(&s.ctx, DocumentId(id))?;
        if document.parent.is_none() {
            return Ok(PathBuf::from(document.path));
        }
        // A mail's attachment has no file of its own: the bytes the store kept are written out.
        let (_, mut original) = s.engine.document_file(&s.ctx, DocumentId(id))?;
        let dir = self.state.data_dir.join("attachments").join(id.to_string());
        std::fs::create_dir_all(&dir).map_err(|e| crate::team::io_error(&dir, e))?;
        let partial = dir.join(".partial");
        let mut file =
            std::fs::File::create(&partial).map_err(|e| crate::team::io_error(&partial, e))?;
        std::io::copy(&mut original.reader, &mut file)
            .map_err(|e| crate::team::io_error(&partial, e))?;
        drop(file);
        let name = std::path::Path::new(&document.path)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| format!("attachment-{id}"));
        let path = dir.join(name);
        std::fs::rename(&partial, &path).map_err(|e| crate::team::io_error(&path, e))?;
        Ok(path)
    }

    fn sources(&self, filter: Option<&str>) -> CmdResult<SourcesView> {
        let s = &self.signed;
        let watched: Vec<String> = s
            .engine
            .watched_folders(&s.ctx)?
            .into_iter()
            .map(|w| w.path)
            .collect();
        let mut folders: Vec<FolderRow> = s
            .engine
            .folders(&s.ctx)?
            .into_iter()
            .map(|f| FolderRow {
                watched: watched.contains(&f.path),
                path: f.path,
                documents: n32(f.documents),
            })
            .collect();
        for w in &watched {
            if !folders.iter().any(|f| &f.path == w) {
                folders.push(FolderRow {
                    path: w.clone(),
                    documents: 0,
                    watched: true,
                });
            }
        }
        folders.sort_by(|a, b| a.path.cmp(&b.path));
        let words: Vec<String> = filter
            .unwrap_or_default()
            .to_lowercase()
            .split_whitespace()
            .map(str::to_owned)
            .collect();
        let mut documents: Vec<DocumentRow> = s
            .engine
            .documents(&s.ctx, None)?
            .into_iter()
            .filter(|d| {
                let hay = format!("{} {}", d.title.as_deref().unwrap_or(""), d.path).to_lowercase();
                words.iter().all(|w| hay.contains(w))
            })
            .map(|d| DocumentRow {
                id: d.id.0,
                title: d.title.clone().unwrap_or_else(|| file_name(&d.path)),
                status: if d.index_pending {
                    "pending".into()
                } else {
                    d.status.clone()
                },
                error: d.error.clone(),
                chunks: n32(d.chunk_count),
                updated_at_ms: d.updated_at_ms as f64,
                kind: d.kind.clone(),
                owner: d.owner.clone(),
                path: d.path,
            })
            .collect();
        documents.sort_by(|a, b| a.path.cmp(&b.path));
        let total = n32(documents.len());
        documents.truncate(1_000);
        Ok(SourcesView {
            folders,
            documents,
            total,
            queue: queue_of(s)?,
        })
    }

    fn memories(&self) -> CmdResult<Vec<MemoryRow>> {
        let s = &self.signed;
        Ok(s.engine
            .memories(&s.ctx)?
            .into_iter()
            .map(memory_row)
            .collect())
    }

    fn forget_memory(&self, uri: &str) -> CmdResult<()> {
        let s = &self.signed;
        Ok(s.engine.memory_delete(&s.ctx, uri)?)
    }

    fn remember(&self, conversation: &str) -> CmdResult<RememberReport> {
        let s = &self.signed;
        let llm = self.state.llm()?;
        let model = llm.clone().map(knowhub_agent::memory::LlmMemoryModel::new);
        let with = knowhub_engine::CommitWith {
            model: model
                .as_ref()
                .map(|m| m as &dyn knowhub_engine::MemoryModel),
            ..Default::default()
        };
        let report = s
            .engine
            .memory_commit_session(&s.ctx, conversation, &with)?;
        Ok(RememberReport {
            merged: n32(report.merged.len()),
            skipped: n32(report.skipped.len()),
            created: report.created.into_iter().map(memory_row).collect(),
            confirmed: report.confirmed.into_iter().map(memory_row).collect(),
            model: llm.map(|l| l.model_id().to_string()),
            model_error: report.model_error,
        })
    }
}
