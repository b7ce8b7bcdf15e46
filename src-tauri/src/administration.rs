//! What administrators change from the window (users and their keys, who may read which
//! folder, SQL data sources; watched folders, the ingestion queue and web sources on the
//! Sources page), behind
//! one trait: this computer's engine ([`LocalAdministration`]), or the
//! joined team server through its API under the user's key ([`TeamAdministration`]; the
//! server checks the role on every call). Commands pick one by the window's [`Base`], so the
//! panes and pages are the same for both.

use std::path::Path;
use std::sync::Arc;

use knowhub_engine::authz::{Role, Scope, ScopeSet};
use knowhub_engine::{SourceRules, UserId};

use crate::dto::*;
use crate::error::{CmdResult, CommandError};
use crate::state::Signed;
use crate::team::TeamLink;

pub(crate) trait Administration {
    /// Active users with their groups.
    fn users(&self) -> CmdResult<Vec<UserRow>>;
    /// Adds a user and makes their first API key (shown once).
    fn add_user(&self, id: &str, display_name: &str, role: &str) -> CmdResult<NewKey>;
    fn remove_user(&self, id: &str) -> CmdResult<()>;
    fn set_role(&self, id: &str, role: &str) -> CmdResult<()>;
    /// Adds (`join`) or removes a membership of `team:x`, `project:x` or `org:x`.
    fn set_membership(&self, id: &str, group: &str, join: bool) -> CmdResult<()>;
    /// Replaces a user's API keys by a new one (shown once).
    fn rotate_key(&self, id: &str) -> CmdResult<NewKey>;
    fn revoke_keys(&self, id: &str) -> CmdResult<u32>;
    /// Every folder with documents (and every watched one), with its ACL.
    fn folder_tree(&self) -> CmdResult<Vec<FolderNode>>;
    /// Sets (or, with no scopes, clears) who may read a folder.
    fn set_folder_acl(&self, path: &str, scopes: &[String]) -> CmdResult<()>;
    /// "Who can see this": each user and how many of the folder's documents they may read.
    fn folder_readers(&self, path: &str) -> CmdResult<ReadersView>;
    /// Watches a folder (this computer's, or a path on the server): its files are read and
    /// kept in sync by the ingestion queue.
    fn watch_folder(&self, path: &str) -> CmdResult<()>;
    /// Stops watching a folder (its documents stay).
    fn unwatch_folder(&self, path: &str) -> CmdResult<()>;
    fn set_ingestion_paused(&self, paused: bool) -> CmdResult<()>;
    /// Queues failed files again; returns how many.
    fn retry_failed(&self) -> CmdResult<u32>;
    /// The web and wiki sources.
    fn web_sources(&self) -> CmdResult<Vec<WebSourceRow>>;
    /// Adds a site or wiki, readable by administrators and the caller until `readers` say
    /// otherwise.
    fn add_web_source(
        &self,
        url: &str,
        depth: u32,
        every_hours: Option<u32>,
        readers: &[String],
    ) -> CmdResult<WebSourceRow>;
    /// Crawls a web source now; its changed pages go to the ingestion queue.
    fn run_web_source(&self, id: u32) -> CmdResult<WebSourceRow>;
    /// Removes a web source and its documents; returns how many documents went.
    fn remove_web_source(&self, id: u32) -> CmdResult<u32>;
    /// SQL databases and spreadsheet tables the user may query.
    fn data_sources(&self) -> CmdResult<DataSourcesView>;
    /// Registers a SQLite database for the copilot (a path where the knowledge base lives).
    fn add_data_source(
        &self,
        name: &str,
        path: &str,
        scopes: &[String],
        tenant_column: Option<&str>,
    ) -> CmdResult<()>;
    fn remove_data_source(&self, name: &str) -> CmdResult<()>;
}

fn user_id(id: &str) -> CmdResult<UserId> {
    UserId::new(id.trim()).map_err(|e| CommandError::invalid(e.to_string()))
}

/// Scopes as the window lists them, one per entry (blank entries skipped).
pub(crate) fn parse_scopes(list: &[String]) -> CmdResult<ScopeSet> {
    list.iter()
        .map(|x| x.trim())
        .filter(|x| !x.is_empty())
        .map(|x| x.parse::<Scope>())
        .collect::<Result<ScopeSet, _>>()
        .map_err(|e| CommandError::invalid(format!("bad scopes: {e}")))
}

/// The scopes to set, checked here (a typo is refused before anything is sent); `None`: clear.
fn scopes_to_set(scopes: &[String]) -> CmdResult<Option<ScopeSet>> {
    if scopes.iter().all(|x| x.trim().is_empty()) {
        return Ok(None);
    }
    parse_scopes(scopes).map(Some)
}

fn no_user(id: &str) -> CommandError {
    CommandError::new("not_found", format!("no active user {id}"))
}

// ----- this computer ------------------------------------------------------------------------

/// This computer's knowledge base, as the signed-in user (the engine checks the role).
pub(crate) struct LocalAdministration {
    pub signed: Signed,
}

impl Administration for LocalAdministration {
    fn users(&self) -> CmdResult<Vec<UserRow>> {
        let s = &self.signed;
        let mut rows = Vec::new();
        for u in s.engine.users(&s.ctx)? {
            if u.removed_at.is_some() {
                continue;
            }
            rows.push(UserRow {
                groups: s.engine.user_groups(&s.ctx, &u.id).unwrap_or_default(),
                id: u.id.to_string(),
                display_name: u.display_name,
                role: u.role.to_string(),
            });
        }
        Ok(rows)
    }

    fn add_user(&self, id: &str, display_name: &str, role: &str) -> CmdResult<NewKey> {
        let s = &self.signed;
        let uid = user_id(id)?;
        let role: Role = role.parse()?;
        let name = if display_name.trim().is_empty() {
            id.trim()
        } else {
            display_name.trim()
        };
        if !s.engine.add_user(&s.ctx, &uid, name, role)? {
            return Err(CommandError::invalid(format!(
                "user {id} exists (or existed: ids are never reused)"
            )));
        }
        let key = s.engine.rotate_api_key(&s.ctx, &uid)?;
        Ok(NewKey {
            user: uid.to_string(),
            api_key: key.secret().to_string(),
        })
    }

    fn remove_user(&self, id: &str) -> CmdResult<()> {
        let s = &self.signed;
        if !s.engine.remove_user(&s.ctx, &user_id(id)?)? {
            return Err(no_user(id));
        }
        Ok(())
    }

    fn set_role(&self, id: &str, role: &str) -> CmdResult<()> {
        let s = &self.signed;
        let role: Role = role.parse()?;
        if !s.engine.set_role(&s.ctx, &user_id(id)?, role)? {
            return Err(no_user(id));
        }
        Ok(())
    }

    fn set_membership(&self, id: &str, group: &str, join: bool) -> CmdResult<()> {
        let s = &self.signed;
        let uid = user_id(id)?;
        let scope: Scope = group.trim().parse()?;
        if join {
            s.engine.add_membership(&s.ctx, &uid, &scope)?;
        } else {
            s.engine.remove_membership(&s.ctx, &uid, &scope)?;
        }
        Ok(())
    }

    fn rotate_key(&self, id: &str) -> CmdResult<NewKey> {
        let s = &self.signed;
        let uid = user_id(id)?;
        let key = s.engine.rotate_api_key(&s.ctx, &uid)?;
        Ok(NewKey {
            user: uid.to_string(),
            api_key: key.secret().to_string(),
        })
    }

    fn revoke_keys(&self, id: &str) -> CmdResult<u32> {
        let s = &self.signed;
        Ok(n32(s.engine.revoke_api_keys(&s.ctx, &user_id(id)?)?))
    }

    fn folder_tree(&self) -> CmdResult<Vec<FolderNode>> {
        let s = &self.signed;
        if !s.is_admin() {
            return Err(CommandError::new(
                "forbidden",
                "only administrators edit folder permissions",
            ));
        }
        let mut paths: Vec<(String, u64)> = s
            .engine
            .folders(&s.ctx)?
            .into_iter()
            .map(|f| (f.path, f.documents))
            .collect();
        for w in s.engine.watched_folders(&s.ctx)? {
            if !paths.iter().any(|(p, _)| *p == w.path) {
                paths.push((w.path, 0));
            }
        }
        paths.sort();
        let mut out = Vec::new();
        for (path, documents) in paths {
            let acl = s.engine.folder_acl(&s.ctx, Path::new(&path))?;
            let depth = if acl.relative.is_empty() {
                0
            } else {
                acl.relative.split('/').count()
            };
            out.push(FolderNode {
                path,
                depth: n32(depth),
                documents: n32(documents),
                relative: acl.relative,
                explicit: acl.explicit,
                effective: acl.effective,
                inherited_from: acl.inherited_from,
            });
        }
        Ok(out)
    }

    fn set_folder_acl(&self, path: &str, scopes: &[String]) -> CmdResult<()> {
        let s = &self.signed;
        let set = scopes_to_set(scopes)?;
        s.engine
            .set_folder_acl(&s.ctx, Path::new(path), set.as_ref())?;
        Ok(())
    }

    fn folder_readers(&self, path: &str) -> CmdResult<ReadersView> {
        let s = &self.signed;
        let r = s.engine.folder_readers(&s.ctx, Path::new(path))?;
        Ok(ReadersView {
            folder: r.folder,
            documents: n32(r.documents),
            readers: r
                .readers
                .into_iter()
                .map(|u| ReaderRow {
                    user: u.user,
                    display_name: u.display_name,
                    role: u.role,
                    readable: n32(u.readable),
                })
                .collect(),
        })
    }

    fn watch_folder(&self, path: &str) -> CmdResult<()> {
        let s = &self.signed;
        s.engine
            .watch_folder(&s.ctx, Path::new(path), SourceRules::default())?;
        Ok(())
    }

    fn unwatch_folder(&self, path: &str) -> CmdResult<()> {
        let s = &self.signed;
        s.engine.unwatch_folder(&s.ctx, Path::new(path))?;
        Ok(())
    }

    fn set_ingestion_paused(&self, paused: bool) -> CmdResult<()> {
        let s = &self.signed;
        s.engine.set_queue_paused(&s.ctx, paused)?;
        Ok(())
    }

    fn retry_failed(&self) -> CmdResult<u32> {
        let s = &self.signed;
        Ok(n32(s.engine.retry_failed(&s.ctx, None)?))
    }

    fn web_sources(&self) -> CmdResult<Vec<WebSourceRow>> {
        let s = &self.signed;
        Ok(s.engine
            .crawls(&s.ctx)?
            .into_iter()
            .map(Into::into)
            .collect())
    }

    fn add_web_source(
        &self,
        url: &str,
        depth: u32,
        every_hours: Option<u32>,
        readers: &[String],
    ) -> CmdResult<WebSourceRow> {
        let s = &self.signed;
        let readers = parse_scopes(readers)?;
        let settings = knowhub_engine::CrawlSettings {
            depth,
            every_secs: every_hours.filter(|h| *h > 0).map(|h| u64::from(h) * 3600),
            ..Default::default()
        };
        let view = s.engine.add_crawl(&s.ctx, url, settings)?;
        if !readers.is_empty() {
            s.engine
                .set_folder_acl(&s.ctx, Path::new(&view.folder), Some(&readers))?;
        }
        Ok(view.into())
    }

    fn run_web_source(&self, id: u32) -> CmdResult<WebSourceRow> {
        let s = &self.signed;
        Ok(s.engine
            .run_crawl(&s.ctx, i64::from(id), None)?
            .crawl
            .into())
    }

    fn remove_web_source(&self, id: u32) -> CmdResult<u32> {
        let s = &self.signed;
        Ok(n32(s.engine.remove_crawl(&s.ctx, i64::from(id))?))
    }

    fn data_sources(&self) -> CmdResult<DataSourcesView> {
        let s = &self.signed;
        let d = s.engine.queryable_data(&s.ctx)?;
        Ok(DataSourcesView {
            sources: d
                .sources
                .into_iter()
                .map(|x| SqlSourceRow {
                    name: x.name,
                    path: x.path,
                    scopes: x.scopes,
                    tenant_column: x.tenant_column,
                })
                .collect(),
            tables: d
                .tables
                .into_iter()
                .map(|t| SheetTableRow {
                    sql_name: t.sql_name,
                    rows: n32(t.rows),
                    document_path: t.document_path,
                })
                .collect(),
        })
    }

    fn add_data_source(
        &self,
        name: &str,
        path: &str,
        scopes: &[String],
        tenant_column: Option<&str>,
    ) -> CmdResult<()> {
        let s = &self.signed;
        let set = parse_scopes(scopes)?;
        s.engine
            .add_sql_source(&s.ctx, name, Path::new(path), &set, tenant_column)?;
        Ok(())
    }

    fn remove_data_source(&self, name: &str) -> CmdResult<()> {
        let s = &self.signed;
        Ok(s.engine.remove_sql_source(&s.ctx, name)?)
    }
}

// ----- the team server ------------------------------------------------------------------------

/// The joined team server's account, as the key's user (the server refuses what the role
/// may not do; its answers are shown as they are).
pub(crate) struct TeamAdministration {
    link: Arc<TeamLink>,
    account: String,
}

impl TeamAdministration {
    /// Asks the server which account the key belongs to.
    pub(crate) fn new(link: Arc<TeamLink>) -> CmdResult<TeamAdministration> {
        let account = link.client.me()?.account_id;
        Ok(TeamAdministration { link, account })
    }

    fn key(&self, key: knowhub_client::UserKey) -> NewKey {
        NewKey {
            user: key.user_id,
            api_key: key.user_key,
        }
    }
}

impl Administration for TeamAdministration {
    fn users(&self) -> CmdResult<Vec<UserRow>> {
        let c = &self.link.client;
        let mut rows = Vec::new();
        for u in c.users(&self.account)? {
            rows.push(UserRow {
                groups: c.user_groups(&self.account, &u.user_id)?,
                id: u.user_id,
                display_name: u.display_name,
                role: u.role,
            });
        }
        Ok(rows)
    }

    fn add_user(&self, id: &str, display_name: &str, role: &str) -> CmdResult<NewKey> {
        let uid = user_id(id)?;
        let role: Role = role.parse()?;
        let name = Some(display_name.trim()).filter(|n| !n.is_empty());
        let key =
            self.link
                .client
                .add_user(&self.account, uid.as_str(), &role.to_string(), name)?;
        Ok(self.key(key))
    }

    fn remove_user(&self, id: &str) -> CmdResult<()> {
        Ok(self
            .link
            .client
            .remove_user(&self.account, user_id(id)?.as_str())?)
    }

    fn set_role(&self, id: &str, role: &str) -> CmdResult<()> {
        let role: Role = role.parse()?;
        Ok(self
            .link
            .client
            .set_role(&self.account, user_id(id)?.as_str(), &role.to_string())?)
    }

    fn set_membership(&self, id: &str, group: &str, join: bool) -> CmdResult<()> {
        let uid = user_id(id)?;
        let scope: Scope = group.trim().parse()?;
        let c = &self.link.client;
        if join {
            c.join_group(&self.account, uid.as_str(), &scope.to_string())?;
        } else {
            c.leave_group(&self.account, uid.as_str(), &scope.to_string())?;
        }
        Ok(())
    }

    fn rotate_key(&self, id: &str) -> CmdResult<NewKey> {
        let key = self
            .link
            .client
            .rotate_key(&self.account, user_id(id)?.as_str())?;
        Ok(self.key(key))
    }

    fn revoke_keys(&self, id: &str) -> CmdResult<u32> {
        Ok(n32(self
            .link
            .client
            .revoke_keys(&self.account, user_id(id)?.as_str())?))
    }

    fn folder_tree(&self) -> CmdResult<Vec<FolderNode>> {
        Ok(self
            .link
            .client
            .folders()?
            .into_iter()
            // A folder gone from the server's disk has no ACL to edit.
            .filter_map(|f| {
                let acl = f.acl?;
                Some(FolderNode {
                    path: f.path,
                    relative: acl.relative,
                    depth: n32(acl.depth),
                    documents: n32(f.documents),
                    explicit: acl.explicit,
                    effective: acl.effective,
                    inherited_from: acl.inherited_from,
                })
            })
            .collect())
    }

    fn set_folder_acl(&self, path: &str, scopes: &[String]) -> CmdResult<()> {
        let set =
            scopes_to_set(scopes)?.map(|s| s.iter().map(ToString::to_string).collect::<Vec<_>>());
        self.link.client.set_acl(path, set.as_deref())?;
        Ok(())
    }

    fn folder_readers(&self, path: &str) -> CmdResult<ReadersView> {
        let r = self.link.client.readers(path)?;
        Ok(ReadersView {
            folder: r.path,
            documents: n32(r.documents),
            readers: r
                .readers
                .into_iter()
                .map(|u| ReaderRow {
                    user: u.user_id,
                    display_name: u.display_name,
                    role: u.role,
                    readable: n32(u.readable),
                })
                .collect(),
        })
    }

    fn watch_folder(&self, path: &str) -> CmdResult<()> {
        self.link.client.watch(path, None)?;
        Ok(())
    }

    fn unwatch_folder(&self, path: &str) -> CmdResult<()> {
        Ok(self.link.client.unwatch(path)?)
    }

    fn set_ingestion_paused(&self, paused: bool) -> CmdResult<()> {
        self.link.client.set_queue_paused(paused)?;
        Ok(())
    }

    fn retry_failed(&self) -> CmdResult<u32> {
        Ok(n32(self.link.client.retry_failed(None)?))
    }

    fn web_sources(&self) -> CmdResult<Vec<WebSourceRow>> {
        Ok(self
            .link
            .client
            .crawls()?
            .into_iter()
            .map(web_source_row)
            .collect())
    }

    fn add_web_source(
        &self,
        url: &str,
        depth: u32,
        every_hours: Option<u32>,
        readers: &[String],
    ) -> CmdResult<WebSourceRow> {
        let readers = parse_scopes(readers)?;
        let crawl = knowhub_client::NewCrawl {
            url: url.trim().to_owned(),
            settings: knowhub_client::CrawlSettings {
                depth: Some(depth),
                // 0: by hand only.
                every_secs: Some(every_hours.map_or(0, |h| u64::from(h) * 3600)),
                ..Default::default()
            },
            readers: readers.iter().map(ToString::to_string).collect(),
        };
        Ok(web_source_row(self.link.client.add_crawl(&crawl)?))
    }

    fn run_web_source(&self, id: u32) -> CmdResult<WebSourceRow> {
        let run = self.link.client.run_crawl(i64::from(id))?;
        Ok(web_source_row(knowhub_client::Crawl {
            last_run: Some(run.summary),
            ..run.crawl
        }))
    }

    fn remove_web_source(&self, id: u32) -> CmdResult<u32> {
        Ok(n32(self.link.client.remove_crawl(i64::from(id))?))
    }

    fn data_sources(&self) -> CmdResult<DataSourcesView> {
        let d = self.link.client.sql_sources()?;
        Ok(DataSourcesView {
            sources: d
                .sources
                .into_iter()
                .map(|x| SqlSourceRow {
                    name: x.name,
                    path: x.path,
                    scopes: x.scopes,
                    tenant_column: x.tenant_column,
                })
                .collect(),
            tables: d
                .tables
                .into_iter()
                .map(|t| SheetTableRow {
                    sql_name: t.sql_name,
                    rows: n32(t.rows),
                    document_path: t.document_path,
                })
                .collect(),
        })
    }

    fn add_data_source(
        &self,
        name: &str,
        path: &str,
        scopes: &[String],
        tenant_column: Option<&str>,
    ) -> CmdResult<()> {
        // Checked here too, so a typo is refused before the server is asked.
        let set = parse_scopes(scopes)?;
        let scopes: Vec<String> = set.iter().map(ToString::to_string).collect();
        self.link
            .client
            .add_sql_source(name, path, &scopes, tenant_column)?;
        Ok(())
    }

    fn remove_data_source(&self, name: &str) -> CmdResult<()> {
        Ok(self.link.client.remove_sql_source(name)?)
    }
}

/// A web source on the server, as the Sources page lists it.
fn web_source_row(c: knowhub_client::Crawl) -> WebSourceRow {
    WebSourceRow {
        id: n32(c.id),
        url: c.url,
        folder: c.folder,
        depth: c.settings.depth.unwrap_or(0),
        every_hours: c
            .settings
            .every_secs
            .filter(|s| *s > 0)
            .map(|s| n32(s / 3600)),
        documents: n32(c.documents),
        last_run: c.last_run.map(|r| WebRunRow {
            finished_at_ms: r.finished_at_ms as f64,
            pages: n32(r.pages),
            fetched: n32(r.fetched),
            unchanged: n32(r.unchanged),
            removed: n32(r.removed),
            failed: n32(r.failed),
            skipped: n32(r.skipped),
            aborted: r.aborted,
            stopped: r.stopped,
            problems: r.problems,
        }),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn scopes_are_read_one_per_entry() {
        let list = ["team:hr".to_string(), " user:alice ".into(), String::new()];
        let set = parse_scopes(&list).unwrap();
        let mut each: Vec<String> = set.iter().map(ToString::to_string).collect();
        each.sort();
        assert_eq!(each, ["team:hr", "user:alice"]);
        assert!(scopes_to_set(&[" ".into()]).unwrap().is_none());
        assert_eq!(
            parse_scopes(&["team:".into()]).unwrap_err().kind,
            "invalid_input"
        );
    }
}
