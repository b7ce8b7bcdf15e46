//! The team's documents answered by this computer's copilot (Settings → Team → *Answers
//! written by this computer*): the team server returns the passages the user may read, and
//! this computer's model writes the answer. The conversation, its turns and traces stay on
//! this computer; the window lists them under the team base, beside the server's own
//! conversations, whichever the setting is now.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use knowhub_agent::CancelFlag;

use crate::dto::*;
use crate::error::{CmdResult, CommandError};
use crate::library::{Library, LocalLibrary};
use crate::team::{TeamLibrary, TeamLink};

/// The conversations over the team's documents that this computer's copilot answered
/// ([`TeamAnswers::ThisComputer`]): their turns and traces are in this computer's store, and
/// they are listed under the team base (never under this computer's), per server. Kept in
/// `team-conversations.json` beside the knowledge base.
pub(crate) struct AnsweredHere {
    path: PathBuf,
}

/// One writer at a time (two answers finishing together must not drop an id).
static ANSWERED_HERE_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());

type AnsweredHereMap = std::collections::BTreeMap<String, std::collections::BTreeSet<String>>;

impl AnsweredHere {
    pub(crate) fn of(data_dir: &Path) -> AnsweredHere {
        AnsweredHere {
            path: data_dir.join("team-conversations.json"),
        }
    }

    /// Conversation ids per server; none when the file is missing or unreadable (a broken
    /// file only moves those conversations back under this computer).
    fn load(&self) -> AnsweredHereMap {
        std::fs::read_to_string(&self.path)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default()
    }

    fn save(&self, map: &AnsweredHereMap) -> CmdResult<()> {
        let text = serde_json::to_string_pretty(map)
            .map_err(|e| CommandError::new("internal", e.to_string()))?;
        let tmp = self.path.with_extension("json.tmp");
        std::fs::write(&tmp, text)
            .and_then(|()| std::fs::rename(&tmp, &self.path))
            .map_err(|e| crate::team::io_error(&self.path, e))
    }

    /// Every server's.
    pub(crate) fn all(&self) -> std::collections::BTreeSet<String> {
        self.load().into_values().flatten().collect()
    }

    pub(crate) fn of_server(&self, server: &str) -> std::collections::BTreeSet<String> {
        self.load().remove(server).unwrap_or_default()
    }

    pub(crate) fn add(&self, server: &str, id: &str) -> CmdResult<()> {
        let _one = ANSWERED_HERE_LOCK.lock().unwrap_or_else(|p| p.into_inner());
        let mut map = self.load();
        if map
            .entry(server.to_owned())
            .or_default()
            .insert(id.to_owned())
        {
            self.save(&map)?;
        }
        Ok(())
    }

    /// Leaving a server: its conversations are listed under this computer again.
    pub(crate) fn forget_server(&self, server: &str) -> CmdResult<()> {
        let _one = ANSWERED_HERE_LOCK.lock().unwrap_or_else(|p| p.into_inner());
        let mut map = self.load();
        if map.remove(server).is_some() {
            self.save(&map)?;
        }
        Ok(())
    }

    pub(crate) fn remove(&self, id: &str) -> CmdResult<()> {
        let _one = ANSWERED_HERE_LOCK.lock().unwrap_or_else(|p| p.into_inner());
        let mut map = self.load();
        let mut changed = false;
        for ids in map.values_mut() {
            changed |= ids.remove(id);
        }
        map.retain(|_, ids| !ids.is_empty());
        if changed {
            self.save(&map)?;
        }
        Ok(())
    }
}

/// The team base: the server's library, and the conversations this computer's copilot had
/// over it.
pub(crate) struct TeamHereLibrary<'a> {
    pub team: TeamLibrary,
    /// Who writes new conversations' answers.
    pub answers: TeamAnswers,
    /// This computer's copilot, searching the team only.
    pub here: LocalLibrary<'a>,
    pub answered: AnsweredHere,
}

impl TeamHereLibrary<'_> {
    fn link(&self) -> &Arc<TeamLink> {
        &self.team.link
    }

    fn is_here(&self, conversation: &str) -> bool {
        self.answered
            .of_server(&self.link().setting.server)
            .contains(conversation)
    }
}

/// A stored answer of this computer's copilot over the team, as the team base shows it.
fn on_team(mut answer: Answer) -> Answer {
    answer.base = Base::Team;
    answer
}

impl Library for TeamHereLibrary<'_> {
    fn ask(
        &self,
        question: String,
        session: Option<String>,
        brief: bool,
        cancel: &CancelFlag,
        on_event: &mut dyn FnMut(ChatEvent),
    ) -> CmdResult<Answer> {
        // A conversation continues where its earlier turns are; a new one goes where the
        // setting says.
        let here = match &session {
            Some(id) => self.is_here(id),
            None => self.answers == TeamAnswers::ThisComputer,
        };
        if !here {
            return self.team.ask(question, session, brief, cancel, on_event);
        }
        let answer = self.here.ask(question, session, brief, cancel, on_event)?;
        if let Some(id) = &answer.session_id {
            self.answered.add(&self.link().setting.server, id)?;
        }
        Ok(on_team(answer))
    }

    fn conversations(&self) -> CmdResult<Vec<Conversation>> {
        let ids = self.answered.of_server(&self.link().setting.server);
        let mut all: Vec<Conversation> = self
            .here
            .all_conversations()?
            .into_iter()
            .filter(|c| ids.contains(&c.id))
            .collect();
        all.extend(self.team.conversations()?);
        all.sort_by(|a, b| b.updated_at_ms.total_cmp(&a.updated_at_ms));
        Ok(all)
    }

    fn conversation(&self, id: &str) -> CmdResult<Vec<Answer>> {
        if self.is_here(id) {
            return Ok(self
                .here
                .conversation(id)?
                .into_iter()
                .map(on_team)
                .collect());
        }
        self.team.conversation(id)
    }

    fn delete_conversation(&self, id: &str) -> CmdResult<()> {
        if self.is_here(id) {
            self.here.delete_conversation(id)?;
            return self.answered.remove(id);
        }
        self.team.delete_conversation(id)
    }

    fn trace(&self, trace_id: &str) -> CmdResult<TraceView> {
        match self.here.trace(trace_id) {
            Err(e) if e.kind == "not_found" => self.team.trace(trace_id),
            other => other,
        }
    }

    fn send_feedback(&self, trace_id: &str, helpful: bool, note: &str) -> CmdResult<()> {
        match self.here.send_feedback(trace_id, helpful, note) {
            Err(e) if e.kind == "not_found" => self.team.send_feedback(trace_id, helpful, note),
            other => other,
        }
    }

    fn open_document(&self, id: i64) -> CmdResult<DocumentPreview> {
        self.team.open_document(id)
    }

    fn local_file(&self, id: i64) -> CmdResult<PathBuf> {
        self.team.local_file(id)
    }

    fn sources(&self, filter: Option<&str>) -> CmdResult<SourcesView> {
        self.team.sources(filter)
    }

    fn memories(&self) -> CmdResult<Vec<MemoryRow>> {
        self.team.memories()
    }

    fn forget_memory(&self, uri: &str) -> CmdResult<()> {
        self.team.forget_memory(uri)
    }

    /// A conversation answered here is remembered here (its turns are in this computer's
    /// store, so are its memories); the server's on the server.
    fn remember(&self, conversation: &str) -> CmdResult<RememberReport> {
        if self.is_here(conversation) {
            return self.here.remember(conversation);
        }
        self.team.remember(conversation)
    }
}
