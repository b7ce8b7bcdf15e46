//! `knowhub chat`: a multi-turn conversation in the terminal, with this machine's copilot or
//! (`--server`) a team server's. Each line is a question in the same conversation (follow-ups
//! are rewritten into standalone queries by the agent, as in the window); lines starting with
//! `/` are commands. Reads standard input, so it also runs from a script.

use std::io::{BufRead, Write};
use std::process::ExitCode;

use anyhow::{Context, Result};
use knowhub_agent::{Agent, AskOutcome};
use knowhub_client::{Answer, AskRequest, Client};
use knowhub_engine::{CommitWith, Engine, MemoryModel, RequestContext};

const HELP: &str = "Ask anything; follow-up questions understand the conversation.
  /new       start a new conversation      /sessions  your conversations
  /trace     how the last answer was made  /open N    passage behind citation [N]
  /remember  keep what you said about yourself in this conversation (knowhub memory)
  /help      this list                     /quit      leave (also Ctrl-D)";

/// What a terminal conversation talks to.
pub(crate) trait Copilot {
    /// Who is signed in and what writes the answers, for the greeting.
    fn greeting(&self) -> String;
    /// Asks `question` in `conversation` (`None`: a new one), printing the answer as it is
    /// written; returns the conversation it went into.
    fn ask(&mut self, question: &str, conversation: Option<String>) -> Result<Option<String>>;
    /// Prints the caller's conversations.
    fn conversations(&self) -> Result<()>;
    /// Prints how the last answer was made (`false`: there is none yet).
    fn trace(&self) -> Result<bool>;
    /// Prints the passage behind citation `number` of the last answer (`false`: none).
    fn open(&self, number: usize) -> Result<bool>;
    /// Remembers what the caller said about themself in `conversation`; prints what was kept.
    fn remember(&self, conversation: &str) -> Result<()>;
    /// Starts over: the next question opens a new conversation.
    fn forget_last(&mut self);
}

/// Runs the conversation until `/quit` or the end of standard input.
pub(crate) fn run(copilot: &mut dyn Copilot, session: Option<String>) -> Result<ExitCode> {
    let interactive = std::io::IsTerminal::is_terminal(&std::io::stdin());
    let mut session = session;
    if interactive {
        eprintln!("{} /help for commands.", copilot.greeting());
    }
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    loop {
        if interactive {
            eprint!("\n› ");
            let _ = std::io::stderr().flush();
        }
        let Some(line) = lines.next() else { break };
        let line = line.context("cannot read the terminal")?;
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let (command, rest) = line.split_once(' ').unwrap_or((line, ""));
        // One failed command or question does not end the conversation.
        let done = match command {
            "/quit" | "/exit" | "/q" => break,
            "/help" | "/?" => {
                println!("{HELP}");
                Ok(())
            }
            "/new" => {
                session = None;
                copilot.forget_last();
                println!("(new conversation)");
                Ok(())
            }
            "/sessions" => copilot.conversations(),
            "/trace" => copilot.trace().map(|shown| {
                if !shown {
                    println!("(no answer yet)");
                }
            }),
            "/open" => match rest.trim().trim_matches(['[', ']']).parse::<usize>() {
                Ok(n) => copilot.open(n).map(|shown| {
                    if !shown {
                        println!("(no citation {rest:?} in the last answer)");
                    }
                }),
                Err(_) => {
                    println!("(/open takes a citation number, e.g. /open 1)");
                    Ok(())
                }
            },
            "/remember" => match &session {
                Some(id) => copilot.remember(id),
                None => {
                    println!("(nothing said yet in this conversation)");
                    Ok(())
                }
            },
            c if c.starts_with('/') => {
                println!("unknown command {c} — /help lists them");
                Ok(())
            }
            _ => copilot.ask(line, session.clone()).map(|into| {
                if into.is_some() {
                    session = into;
                }
            }),
        };
        if let Err(e) = done {
            eprintln!("error: {e:#}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn print_passage(number: usize, title: &str, uri: &str, text: &str) {
    println!("[{number}] {title}  {uri}");
    if !text.is_empty() {
        println!("\n{text}");
    }
}

fn print_remembered<'a>(created: usize, confirmed: usize, contents: impl Iterator<Item = &'a str>) {
    let plural = if created == 1 { "y" } else { "ies" };
    println!("{created} new memor{plural}, {confirmed} confirmed");
    for content in contents {
        println!("  {content}");
    }
}

/// This machine's copilot, as the signed-in caller.
pub(crate) struct HereChat<'a> {
    pub engine: &'a Engine,
    pub ctx: &'a RequestContext,
    pub agent: Agent,
    pub last: Option<AskOutcome>,
}

impl Copilot for HereChat<'_> {
    fn greeting(&self) -> String {
        format!(
            "KnowHub chat ({}) — signed in as {}.",
            self.agent.llm_id().unwrap_or("extractive answers"),
            self.ctx.user
        )
    }

    fn ask(&mut self, question: &str, conversation: Option<String>) -> Result<Option<String>> {
        let outcome =
            crate::ask::answer(&self.agent, self.ctx, question, conversation, None, false)?;
        let session = outcome.session_id.clone();
        self.last = Some(outcome);
        Ok(session)
    }

    fn conversations(&self) -> Result<()> {
        crate::ask::sessions(self.engine, self.ctx, false).map(drop)
    }

    fn trace(&self) -> Result<bool> {
        let Some(last) = &self.last else {
            return Ok(false);
        };
        crate::ask::print_trace(&last.state);
        Ok(true)
    }

    fn open(&self, number: usize) -> Result<bool> {
        let source = self.last.as_ref().and_then(|o| {
            o.state
                .output
                .rendered_sources
                .iter()
                .find(|s| s.number == number)
        });
        Ok(source.is_some_and(|s| {
            print_passage(s.number, &s.title, &s.uri, &s.text);
            true
        }))
    }

    fn remember(&self, conversation: &str) -> Result<()> {
        let model = self
            .agent
            .llm()
            .map(knowhub_agent::memory::LlmMemoryModel::new);
        let with = CommitWith {
            model: model.as_ref().map(|m| m as &dyn MemoryModel),
            ..Default::default()
        };
        let report = self
            .engine
            .memory_commit_session(self.ctx, conversation, &with)?;
        let kept = report.created.iter().chain(&report.confirmed);
        print_remembered(
            report.created.len(),
            report.confirmed.len(),
            kept.map(|n| n.content.as_str()),
        );
        Ok(())
    }

    fn forget_last(&mut self) {
        self.last = None;
    }
}

/// A team server's copilot, under the key's permissions: the server answers, keeps the
/// conversation and its traces.
pub(crate) struct ServerChat<'a> {
    pub client: &'a Client,
    pub user: String,
    pub last: Option<Answer>,
}

impl Copilot for ServerChat<'_> {
    fn greeting(&self) -> String {
        format!(
            "KnowHub chat on {} — signed in as {}.",
            self.client.server(),
            self.user
        )
    }

    fn ask(&mut self, question: &str, conversation: Option<String>) -> Result<Option<String>> {
        let request = AskRequest {
            session: conversation,
            ..AskRequest::new(question)
        };
        let answer = crate::remote::ask_printing(self.client, &request)?;
        let session = answer.session_id.clone();
        self.last = Some(answer);
        Ok(session)
    }

    fn conversations(&self) -> Result<()> {
        for c in self.client.conversations(50)? {
            println!("{}  {}", c.id, c.title);
        }
        Ok(())
    }

    fn trace(&self) -> Result<bool> {
        let Some(last) = &self.last else {
            return Ok(false);
        };
        crate::remote::print_trace(&self.client.trace(&last.trace_id)?);
        Ok(true)
    }

    fn open(&self, number: usize) -> Result<bool> {
        let source = self
            .last
            .as_ref()
            .and_then(|a| a.sources.iter().find(|s| s.number == number));
        Ok(source.is_some_and(|s| {
            print_passage(s.number, &s.title, &s.uri, &s.text);
            true
        }))
    }

    fn remember(&self, conversation: &str) -> Result<()> {
        let report = self.client.remember_conversation(conversation, None)?;
        let nodes = |k: &str| report[k].as_array().cloned().unwrap_or_default();
        let (created, confirmed) = (nodes("created"), nodes("confirmed"));
        print_remembered(
            created.len(),
            confirmed.len(),
            created
                .iter()
                .chain(&confirmed)
                .map(|n| n["content"].as_str().unwrap_or_default()),
        );
        Ok(())
    }

    fn forget_last(&mut self) {
        self.last = None;
    }
}
