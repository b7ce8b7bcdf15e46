//! Administration on a team server: web sources, users and their keys, group memberships, and
//! who may read a folder. The server checks the caller's role on every call; these methods
//! only carry the request.

use serde::{Deserialize, Serialize};

use crate::{Client, Result, encode, to_json};

/// How a web source is crawled. Fields left out keep the server's defaults (or, when changing
/// a source, its current values); the server returns every field.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CrawlSettings {
    /// Links followed from the start page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub depth: Option<u32>,
    /// Globs on an address's path and query (`/wiki/*`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exclude: Option<Vec<String>>,
    /// Seconds between scheduled runs; 0 = by hand only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub every_secs: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_pages: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_page_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_total_bytes: Option<u64>,
    /// Pause between two requests to the site, in ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_ms: Option<u64>,
}

/// What one run of a web source did.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct CrawlSummary {
    pub finished_at_ms: i64,
    pub fetched: usize,
    pub unchanged: usize,
    pub removed: usize,
    pub gone: usize,
    pub duplicates: usize,
    pub skipped: usize,
    pub failed: usize,
    pub pages: usize,
    /// Files queued for the server's ingestion worker.
    pub queued: usize,
    #[serde(default)]
    pub stopped: Option<String>,
    /// Set when the site could not be read: nothing was concluded, everything kept.
    #[serde(default)]
    pub aborted: Option<String>,
    #[serde(default)]
    pub problems: Vec<String>,
}

/// A web source on the server.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Crawl {
    pub id: i64,
    pub url: String,
    /// The server folder its pages are kept in: its ACL says who reads them.
    pub folder: String,
    #[serde(default)]
    pub owner: Option<String>,
    pub settings: CrawlSettings,
    pub documents: u64,
    #[serde(default)]
    pub last_run: Option<CrawlSummary>,
    #[serde(default)]
    pub next_run_ms: Option<i64>,
}

/// One address's outcome in a run: `fetched`, `unchanged`, `duplicate`, `skipped`, `gone` or
/// `failed`, with the reason, HTTP status or duplicated address in `detail`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct CrawlPage {
    pub url: String,
    pub outcome: String,
    #[serde(default)]
    pub detail: Option<String>,
}

/// A run of a web source.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct CrawlRun {
    pub crawl: Crawl,
    pub summary: CrawlSummary,
    pub pages: Vec<CrawlPage>,
}

/// `POST /api/v1/crawls`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NewCrawl {
    pub url: String,
    pub settings: CrawlSettings,
    /// Who may read its pages (`team:eng`, `user:alice`, `public`); none: administrators and
    /// the caller.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub readers: Vec<String>,
}

#[derive(Deserialize)]
struct CrawlList {
    crawls: Vec<Crawl>,
}

#[derive(Deserialize)]
struct RemovedCrawl {
    documents: usize,
}

/// A user of the caller's account.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct User {
    pub user_id: String,
    pub display_name: String,
    /// `ROOT`, `ADMIN` or `USER`.
    pub role: String,
    pub created_at: i64,
}

#[derive(Deserialize)]
struct UserList {
    users: Vec<User>,
}

/// A user and their new API key (shown once: the server keeps only its hash).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct UserKey {
    pub user_id: String,
    pub user_key: String,
}

#[derive(Serialize)]
struct NewUser<'a> {
    user_id: &'a str,
    role: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    display_name: Option<&'a str>,
}

/// A folder's or document's ACL after a change.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct AclChange {
    pub path: String,
    /// `folder` or `document`.
    pub kind: String,
    /// Scopes set on it now (`None`: cleared, inherited).
    #[serde(default)]
    pub explicit: Option<String>,
    /// Scopes its documents get now.
    pub effective: String,
    /// For a folder whose ACL is inherited: the ancestor it comes from.
    #[serde(default)]
    pub inherited_from: Option<String>,
}

/// One user's view of a folder: how many of its documents they may read.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Reader {
    pub user_id: String,
    pub display_name: String,
    pub role: String,
    pub readable: u64,
}

/// "Who can see this" for a folder (or a document) on the server.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Readers {
    pub path: String,
    pub documents: u64,
    pub readers: Vec<Reader>,
}

/// A folder's ACL on the server.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct FolderAcl {
    /// The folder relative to its source root (`""` for the root).
    pub relative: String,
    /// How deep below its source root (0: the root).
    pub depth: usize,
    /// Scopes set on the folder itself (`None`: inherited).
    pub explicit: Option<String>,
    /// Scopes its documents get.
    pub effective: String,
    /// Where `effective` comes from when inherited: an ancestor's relative path.
    pub inherited_from: Option<String>,
}

/// A folder holding documents (or a watched one) on the server.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ServerFolder {
    pub path: String,
    /// Documents inside it, at any depth.
    pub documents: u64,
    pub watched: bool,
    /// `None` when the folder is no longer on the server's disk (its documents stay).
    pub acl: Option<FolderAcl>,
}

#[derive(Deserialize)]
struct FolderTree {
    folders: Vec<ServerFolder>,
}

#[derive(Deserialize)]
struct Groups {
    groups: Vec<String>,
}

#[derive(Deserialize)]
struct Revoked {
    revoked: usize,
}

impl Client {
    // ----- web sources ------------------------------------------------------------------

    /// The server's web sources (administrators).
    pub fn crawls(&self) -> Result<Vec<Crawl>> {
        let response = self.send("GET", "/api/v1/crawls", None)?;
        Ok(self.json::<CrawlList>(response)?.crawls)
    }

    /// Adds a web source (administrators); it is crawled on its schedule or by [`Client::run_crawl`].
    pub fn add_crawl(&self, crawl: &NewCrawl) -> Result<Crawl> {
        let response = self.send("POST", "/api/v1/crawls", Some(to_json(crawl)?))?;
        self.json(response)
    }

    /// Changes how a web source is crawled (fields left out stay as they are).
    pub fn update_crawl(&self, id: i64, settings: &CrawlSettings) -> Result<Crawl> {
        let path = format!("/api/v1/crawls/{id}");
        let response = self.send("PUT", &path, Some(to_json(settings)?))?;
        self.json(response)
    }

    /// Removes a web source with its documents; returns how many documents went.
    pub fn remove_crawl(&self, id: i64) -> Result<usize> {
        let response = self.send("DELETE", &format!("/api/v1/crawls/{id}"), None)?;
        Ok(self.json::<RemovedCrawl>(response)?.documents)
    }

    /// Crawls a web source now; changed pages are queued for the server's ingestion worker.
    pub fn run_crawl(&self, id: i64) -> Result<CrawlRun> {
        let response = self.send("POST", &format!("/api/v1/crawls/{id}/run"), None)?;
        self.json(response)
    }

    // ----- users ------------------------------------------------------------------------

    fn users_path(account: &str) -> String {
        format!("/api/v1/admin/accounts/{}/users", encode(account))
    }

    fn user_path(account: &str, user: &str) -> String {
        format!("{}/{}", Client::users_path(account), encode(user))
    }

    /// The active users of `account` (administrators; a user sees only themself).
    pub fn users(&self, account: &str) -> Result<Vec<User>> {
        let response = self.send("GET", &Client::users_path(account), None)?;
        Ok(self.json::<UserList>(response)?.users)
    }

    /// Adds a user (`role`: `user` or `admin`) and returns their first key.
    pub fn add_user(
        &self,
        account: &str,
        user: &str,
        role: &str,
        display_name: Option<&str>,
    ) -> Result<UserKey> {
        let body = to_json(&NewUser {
            user_id: user,
            role,
            display_name,
        })?;
        let response = self.send("POST", &Client::users_path(account), Some(body))?;
        self.json(response)
    }

    /// Removes a user: their keys stop working at once.
    pub fn remove_user(&self, account: &str, user: &str) -> Result<()> {
        let response = self.send("DELETE", &Client::user_path(account, user), None)?;
        self.json::<serde_json::Value>(response).map(drop)
    }

    /// Changes a user's role (`user`, `admin`; `root` by ROOT only).
    pub fn set_role(&self, account: &str, user: &str, role: &str) -> Result<()> {
        let path = format!("{}/role", Client::user_path(account, user));
        let body = to_json(&serde_json::json!({ "role": role }))?;
        let response = self.send("PUT", &path, Some(body))?;
        self.json::<serde_json::Value>(response).map(drop)
    }

    /// Replaces a user's keys with a new one.
    pub fn rotate_key(&self, account: &str, user: &str) -> Result<UserKey> {
        let path = format!("{}/key", Client::user_path(account, user));
        let response = self.send("POST", &path, None)?;
        self.json(response)
    }

    /// Revokes every key of a user (the user stays); returns how many.
    pub fn revoke_keys(&self, account: &str, user: &str) -> Result<usize> {
        let path = format!("{}/key", Client::user_path(account, user));
        let response = self.send("DELETE", &path, None)?;
        Ok(self.json::<Revoked>(response)?.revoked)
    }

    /// A user's teams, projects and orgs, as scopes (`team:hr`).
    pub fn user_groups(&self, account: &str, user: &str) -> Result<Vec<String>> {
        let path = format!("{}/groups", Client::user_path(account, user));
        let response = self.send("GET", &path, None)?;
        Ok(self.json::<Groups>(response)?.groups)
    }

    /// Adds a user to a group (`team:<id>`, `project:<id>`, `org:<id>`).
    pub fn join_group(&self, account: &str, user: &str, group: &str) -> Result<()> {
        let path = format!(
            "{}/groups/{}",
            Client::user_path(account, user),
            encode(group)
        );
        let response = self.send("PUT", &path, None)?;
        self.json::<serde_json::Value>(response).map(drop)
    }

    /// Removes a user from a group.
    pub fn leave_group(&self, account: &str, user: &str, group: &str) -> Result<()> {
        let path = format!(
            "{}/groups/{}",
            Client::user_path(account, user),
            encode(group)
        );
        let response = self.send("DELETE", &path, None)?;
        self.json::<serde_json::Value>(response).map(drop)
    }

    // ----- who may read what ------------------------------------------------------------

    /// Sets who may read a folder or a document (by its path on the server): `scopes` such
    /// as `["team:hr", "user:alice"]`; `None` clears the ACL set there (it inherits again).
    pub fn set_acl(&self, path: &str, scopes: Option<&[String]>) -> Result<AclChange> {
        let body = to_json(&serde_json::json!({ "path": path, "scopes": scopes }))?;
        let response = self.send("PUT", "/api/v1/acl", Some(body))?;
        self.json(response)
    }

    /// Every folder holding documents, and every watched folder, with its ACL, sorted by path
    /// (administrators).
    pub fn folders(&self) -> Result<Vec<ServerFolder>> {
        let response = self.send("GET", "/api/v1/folders", None)?;
        Ok(self.json::<FolderTree>(response)?.folders)
    }

    /// Who can see a folder (or a document) on the server: every active user with how many of
    /// its documents they may read (administrators).
    pub fn readers(&self, path: &str) -> Result<Readers> {
        let response = self.send(
            "GET",
            &format!("/api/v1/acl/readers?path={}", encode(path)),
            None,
        )?;
        self.json(response)
    }
}

/// A SQLite database registered for the copilot's SQL tool.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct SqlSource {
    pub name: String,
    /// Its path on the server.
    pub path: String,
    /// Scopes whose members may query it (none: administrators only).
    pub scopes: Vec<String>,
    /// Every query is restricted to the caller's organisation in this column, when set.
    pub tenant_column: Option<String>,
    pub owner: String,
}

/// A spreadsheet sheet stored as a table the SQL tool may query.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct SheetTable {
    pub sql_name: String,
    pub sheet_name: String,
    pub document_id: i64,
    pub document_path: String,
    pub rows: u64,
    pub columns: Vec<String>,
}

/// What the caller may query with SQL on the server.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct DataSources {
    /// Registered databases the caller shares a scope with (all for administrators).
    pub sources: Vec<SqlSource>,
    /// Spreadsheet tables of documents the caller may read.
    pub tables: Vec<SheetTable>,
}

impl Client {
    // ----- SQL data sources -------------------------------------------------------------------

    /// The SQL data the caller may query: registered databases and spreadsheet tables.
    pub fn sql_sources(&self) -> Result<DataSources> {
        let response = self.send("GET", "/api/v1/sql-sources", None)?;
        self.json(response)
    }

    /// Registers a SQLite database on the server (by its path there) for the copilot, or
    /// replaces the one of the same name (administrators). No scopes: administrators only.
    pub fn add_sql_source(
        &self,
        name: &str,
        path: &str,
        scopes: &[String],
        tenant_column: Option<&str>,
    ) -> Result<SqlSource> {
        let body = to_json(&serde_json::json!({
            "name": name, "path": path, "scopes": scopes, "tenant_column": tenant_column,
        }))?;
        let response = self.send("POST", "/api/v1/sql-sources", Some(body))?;
        self.json(response)
    }

    /// Unregisters a SQL data source (administrators).
    pub fn remove_sql_source(&self, name: &str) -> Result<()> {
        let path = format!("/api/v1/sql-sources/{}", encode(name));
        let response = self.send("DELETE", &path, None)?;
        self.json::<serde_json::Value>(response).map(drop)
    }
}
