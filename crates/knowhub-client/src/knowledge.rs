//! Seed 002's knowledge items and resources, and seed 003's memories. The server documents
//! these bodies as free-form objects (they follow the seeds' JSON, which grows fields), so the
//! client sends any serializable body and returns the server's JSON as it came; the CLI reads
//! the engine's own types from it. Visibility, owner-only writes, the secure body's
//! encryption and who may see it decrypted are the server's decisions.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::{Client, Result, encode, to_json};

/// Which knowledge items or resources a search or listing keeps (empty: no filter).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ItemFilter {
    /// Knowledge types (`strategy`, `tool`, …), or a resource's content types.
    pub types: Vec<String>,
    /// Only items carrying one of these scopes.
    pub scopes: Vec<String>,
    /// `key = value` tags every item must carry.
    pub tags: BTreeMap<String, String>,
    /// Only items of this owner (listings only).
    pub owner: Option<String>,
}

impl ItemFilter {
    /// The filter as query parameters (`types` named as the endpoint names it).
    fn query(&self, types_name: &str) -> String {
        let mut q = String::new();
        let mut add = |name: &str, value: String| {
            if !value.is_empty() {
                q.push_str(&format!("&{name}={}", encode(&value)));
            }
        };
        add(types_name, self.types.join(","));
        add("scopes", self.scopes.join(","));
        let tags: Vec<String> = self.tags.iter().map(|(k, v)| format!("{k}={v}")).collect();
        add("tags", tags.join(","));
        add("owner", self.owner.clone().unwrap_or_default());
        q
    }
}

#[derive(Deserialize)]
struct Results {
    results: Vec<Value>,
}

/// One message of a conversation given to [`Client::commit_memories`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MemoryMessage {
    /// `user` or `assistant`.
    pub role: String,
    pub content: String,
    /// In a group conversation: who said it (`None`: the caller).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
}

/// Where [`Client::commit_memories`] reads, and where it files what it finds.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct MemoryCommitRequest {
    pub messages: Vec<MemoryMessage>,
    /// The project the conversation was about: its memories apply there only.
    #[serde(rename = "project_id", skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    /// A group conversation: shared conclusions go to this group's space.
    #[serde(rename = "group_id", skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
}

impl Client {
    // ----- knowledge items ------------------------------------------------------------------

    /// Items relevant to `query` the caller may read, best first (`top_k` at most 100), each
    /// an item with its `quality_score`.
    pub fn knowledge_search(
        &self,
        query: &str,
        top_k: usize,
        min_score: u8,
        filter: &ItemFilter,
    ) -> Result<Vec<Value>> {
        let body = to_json(&json!({
            "query": query, "top_k": top_k, "min_score": min_score,
            "types": filter.types, "scopes": filter.scopes, "tags": filter.tags,
        }))?;
        let response = self.send("POST", "/api/knowledge/search", Some(body))?;
        Ok(self.json::<Results>(response)?.results)
    }

    /// Saves an item the caller owns (seed 002's body: `task`, `content`, `types`, `scopes`,
    /// `tags`, `source`, …); returns it as stored.
    pub fn knowledge_save(&self, item: &impl Serialize) -> Result<Value> {
        let response = self.send("POST", "/api/knowledge", Some(to_json(item)?))?;
        self.json(response)
    }

    /// One item the caller may read.
    pub fn knowledge_item(&self, id: &str) -> Result<Value> {
        let response = self.send("GET", &format!("/api/knowledge/{}", encode(id)), None)?;
        self.json(response)
    }

    /// An item's earlier versions, newest first.
    pub fn knowledge_versions(&self, id: &str) -> Result<Vec<Value>> {
        let path = format!("/api/knowledge/{}/versions", encode(id));
        let response = self.send("GET", &path, None)?;
        Ok(self.json::<Results>(response)?.results)
    }

    /// Feedback on an item, or changes to one the caller owns (seed 002's update body);
    /// returns the item after it.
    pub fn knowledge_update(&self, id: &str, update: &impl Serialize) -> Result<Value> {
        let path = format!("/api/knowledge/{}", encode(id));
        let response = self.send("PUT", &path, Some(to_json(update)?))?;
        self.json(response)
    }

    /// Several updates, each applied on its own: one outcome per update (`ok`, `error`).
    pub fn knowledge_batch_update<U: Serialize>(
        &self,
        updates: &[(String, U)],
    ) -> Result<Vec<Value>> {
        let list: Vec<Value> = updates
            .iter()
            .map(|(id, update)| json!({ "id": id, "update": update }))
            .collect();
        let body = to_json(&json!({ "feedback_list": list }))?;
        let response = self.send("POST", "/api/knowledge/batch_update", Some(body))?;
        Ok(self.json::<Results>(response)?.results)
    }

    /// Items the caller may read, newest first.
    pub fn knowledge_list(
        &self,
        filter: &ItemFilter,
        limit: usize,
        offset: usize,
    ) -> Result<Vec<Value>> {
        let path = format!(
            "/api/knowledge?limit={limit}&offset={offset}{}",
            filter.query("types")
        );
        let response = self.send("GET", &path, None)?;
        Ok(self.json::<Results>(response)?.results)
    }

    /// Merges near-duplicate items the caller may change (with `dry_run`, only plans it),
    /// with the server's language model when it has one; returns the plan.
    pub fn knowledge_slim(&self, threshold: Option<f64>, dry_run: bool) -> Result<Value> {
        let body = to_json(&json!({ "threshold": threshold, "dry_run": dry_run }))?;
        let response = self.send("POST", "/api/knowledge/slim", Some(body))?;
        self.json(response)
    }

    /// Deletes an item the caller owns.
    pub fn knowledge_delete(&self, id: &str) -> Result<()> {
        let response = self.send("DELETE", &format!("/api/knowledge/{}", encode(id)), None)?;
        self.json::<Value>(response).map(drop)
    }

    // ----- resources --------------------------------------------------------------------------

    /// Saves a resource the caller owns (seed 002's body; `secure_body` is encrypted at rest
    /// on the server); returns it as stored.
    pub fn resource_save(&self, resource: &impl Serialize) -> Result<Value> {
        let response = self.send("POST", "/api/resource", Some(to_json(resource)?))?;
        self.json(response)
    }

    /// One resource by id or name, with its decrypted secure body only for its owner or an
    /// administrator.
    pub fn resource(&self, id: &str) -> Result<Value> {
        let response = self.send("GET", &format!("/api/resource/{}", encode(id)), None)?;
        self.json(response)
    }

    /// Live resources the caller may see, newest first (never with secure bodies).
    pub fn resources(
        &self,
        filter: &ItemFilter,
        limit: usize,
        offset: usize,
    ) -> Result<Vec<Value>> {
        let path = format!(
            "/api/resource?limit={limit}&offset={offset}{}",
            filter.query("content_types")
        );
        let response = self.send("GET", &path, None)?;
        Ok(self.json::<Results>(response)?.results)
    }

    /// Changes a resource the caller owns; returns it after the change.
    pub fn resource_update(&self, id: &str, change: &impl Serialize) -> Result<Value> {
        let path = format!("/api/resource/{}", encode(id));
        let response = self.send("PUT", &path, Some(to_json(change)?))?;
        self.json(response)
    }

    /// Deletes a resource the caller owns.
    pub fn resource_delete(&self, id: &str) -> Result<()> {
        let response = self.send("DELETE", &format!("/api/resource/{}", encode(id)), None)?;
        self.json::<Value>(response).map(drop)
    }

    // ----- memories -------------------------------------------------------------------------

    /// Remembers what the caller said about themself in one of their conversations on the
    /// server; returns what was found (`candidates`, `created`, `confirmed`, `merged`,
    /// `skipped`, `model_error`).
    pub fn remember_conversation(&self, id: &str, project: Option<&str>) -> Result<Value> {
        let mut path = format!("/api/v1/conversations/{}/remember", encode(id));
        if let Some(p) = project {
            path.push_str(&format!("?project={}", encode(p)));
        }
        let response = self.send("POST", &path, None)?;
        self.json(response)
    }

    /// Remembers the caller's statements in `commit.messages` (and, in a group, files shared
    /// conclusions in the group's space); returns `write_results` and `stats`.
    pub fn commit_memories(&self, commit: &MemoryCommitRequest) -> Result<Value> {
        let response = self.send("POST", "/api/v1/memory/commit", Some(to_json(commit)?))?;
        self.json(response)
    }

    /// The memories under a folder URI (`ctx://user/{me}/memories`,
    /// `ctx://group/{space}/memories`): the caller's own, or a group's they may see.
    pub fn memories(&self, folder: &str) -> Result<Vec<Value>> {
        let path = format!("/api/v1/memory/children?uri={}", encode(folder));
        let response = self.send("GET", &path, None)?;
        self.json(response)
    }

    /// One memory by its `ctx://` URI or id, every level (`abstract_text`, `overview`,
    /// `content`).
    pub fn memory(&self, uri: &str) -> Result<Value> {
        let path = format!("/api/v1/memory/node?uri={}", encode(uri));
        let response = self.send("GET", &path, None)?;
        self.json(response)
    }

    /// Forgets a memory.
    pub fn forget_memory(&self, uri: &str) -> Result<()> {
        let path = format!("/api/v1/memory/node?uri={}", encode(uri));
        let response = self.send("DELETE", &path, None)?;
        self.json::<Value>(response).map(drop)
    }
}
