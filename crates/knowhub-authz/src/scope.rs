//! Scopes, scope sets and scope-priority ranking.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::{AgentId, AuthzError, GroupId, OrgId, ProjectId, TeamId, UserId};

/// Who a piece of knowledge is shared with.
///
/// String form (used by [`fmt::Display`], [`FromStr`] and serde): `user:<id>`, `agent:<id>`,
/// `project:<id>`, `team:<id>`, `org:<id>`, `group:<id>` or `public`. The kind prefix is lower-case and
/// case-sensitive; ids follow the rules of the id types (non-empty, no whitespace or commas).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum Scope {
    /// Private to one user.
    User(UserId),
    /// Private to one agent.
    Agent(AgentId),
    /// Shared with a project's members.
    Project(ProjectId),
    /// Shared with a team's members.
    Team(TeamId),
    /// Shared with an organisation's members.
    Org(OrgId),
    /// Shared with a group space's members (seed 003 §13).
    Group(GroupId),
    /// Shared with everyone in the account.
    Public,
}

impl Scope {
    /// Ranking priority of knowledge carrying this scope: **lower is more important**.
    ///
    /// `user` (0) > `project` = `group` (1) > `agent` (2) > `team` (3) > `org` (4) > `public`
    /// (5): the more personal the knowledge, the earlier it ranks. A group space is a working
    /// group like a project (seed 003 places it between the user's space and shared
    /// resources), so it ranks with projects.
    pub fn priority(&self) -> u8 {
        match self {
            Scope::User(_) => 0,
            Scope::Project(_) | Scope::Group(_) => 1,
            Scope::Agent(_) => 2,
            Scope::Team(_) => 3,
            Scope::Org(_) => 4,
            Scope::Public => 5,
        }
    }

    /// The kind prefix (`"user"`, ..., `"public"`).
    pub fn kind(&self) -> &'static str {
        match self {
            Scope::User(_) => "user",
            Scope::Agent(_) => "agent",
            Scope::Project(_) => "project",
            Scope::Team(_) => "team",
            Scope::Org(_) => "org",
            Scope::Group(_) => "group",
            Scope::Public => "public",
        }
    }
}

/// Stably sorts `items` by the [`Scope::priority`] of the scope `key` returns for each, most
/// important first. Items of equal priority keep their relative (e.g. relevance) order.
pub fn rank_by_scope_priority<T, F>(items: &mut [T], key: F)
where
    F: Fn(&T) -> &Scope,
{
    items.sort_by_key(|item| key(item).priority());
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scope::User(id) => write!(f, "user:{id}"),
            Scope::Agent(id) => write!(f, "agent:{id}"),
            Scope::Project(id) => write!(f, "project:{id}"),
            Scope::Team(id) => write!(f, "team:{id}"),
            Scope::Org(id) => write!(f, "org:{id}"),
            Scope::Group(id) => write!(f, "group:{id}"),
            Scope::Public => f.write_str("public"),
        }
    }
}

impl FromStr for Scope {
    type Err = AuthzError;
    fn from_str(s: &str) -> Result<Self, AuthzError> {
        let bad = |reason: String| AuthzError::InvalidScope {
            input: s.to_owned(),
            reason,
        };
        if s == "public" {
            return Ok(Scope::Public);
        }
        let Some((kind, id)) = s.split_once(':') else {
            return Err(bad(
                "expected `<kind>:<id>` (kind: user, agent, project, team, org, group) or `public`"
                    .to_owned(),
            ));
        };
        let wrap = |e: AuthzError| bad(e.to_string());
        match kind {
            "user" => UserId::new(id).map(Scope::User).map_err(wrap),
            "agent" => AgentId::new(id).map(Scope::Agent).map_err(wrap),
            "project" => ProjectId::new(id).map(Scope::Project).map_err(wrap),
            "team" => TeamId::new(id).map(Scope::Team).map_err(wrap),
            "org" => OrgId::new(id).map(Scope::Org).map_err(wrap),
            "group" => GroupId::new(id).map(Scope::Group).map_err(wrap),
            "public" => Err(bad("`public` takes no id".to_owned())),
            _ => Err(bad(format!(
                "unknown scope kind {kind:?} (expected user, agent, project, team, org, group or public)"
            ))),
        }
    }
}

impl TryFrom<String> for Scope {
    type Error = AuthzError;
    fn try_from(s: String) -> Result<Self, AuthzError> {
        s.parse()
    }
}

impl From<Scope> for String {
    fn from(scope: Scope) -> String {
        scope.to_string()
    }
}

/// A sorted, de-duplicated set of scopes (the ACL of a chunk, document or folder).
///
/// Kept as a sorted `Vec`: these sets are tiny, so a merge walk beats hashing. An empty set is
/// visible to nobody except ADMIN (same account) and ROOT. String form: scopes joined with `,`
/// (the empty set is the empty string). Serialises as a sequence of scope strings.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(from = "Vec<Scope>", into = "Vec<Scope>")]
pub struct ScopeSet(Vec<Scope>);

impl ScopeSet {
    /// The empty set.
    pub fn new() -> Self {
        Self(Vec::new())
    }

    /// Adds a scope; returns whether it was new.
    pub fn insert(&mut self, scope: Scope) -> bool {
        match self.0.binary_search(&scope) {
            Ok(_) => false,
            Err(at) => {
                self.0.insert(at, scope);
                true
            }
        }
    }

    /// Removes a scope; returns whether it was present.
    pub fn remove(&mut self, scope: &Scope) -> bool {
        match self.0.binary_search(scope) {
            Ok(at) => {
                self.0.remove(at);
                true
            }
            Err(_) => false,
        }
    }

    /// Whether `scope` is in the set.
    pub fn contains(&self, scope: &Scope) -> bool {
        self.0.binary_search(scope).is_ok()
    }

    /// Whether the two sets share at least one scope (merge walk over both sorted lists).
    pub fn intersects(&self, other: &ScopeSet) -> bool {
        let (mut a, mut b) = (self.0.iter().peekable(), other.0.iter().peekable());
        while let (Some(x), Some(y)) = (a.peek(), b.peek()) {
            match x.cmp(y) {
                std::cmp::Ordering::Less => {
                    a.next();
                }
                std::cmp::Ordering::Greater => {
                    b.next();
                }
                std::cmp::Ordering::Equal => return true,
            }
        }
        false
    }

    /// The scopes in sorted order.
    pub fn iter(&self) -> std::slice::Iter<'_, Scope> {
        self.0.iter()
    }

    /// The scopes as a sorted slice.
    pub fn as_slice(&self) -> &[Scope] {
        &self.0
    }

    /// Number of scopes.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the set is empty (visible to nobody but ADMIN/ROOT).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The best (lowest) [`Scope::priority`] in the set, `None` when empty.
    pub fn best_priority(&self) -> Option<u8> {
        self.0.iter().map(Scope::priority).min()
    }
}

impl FromIterator<Scope> for ScopeSet {
    fn from_iter<I: IntoIterator<Item = Scope>>(iter: I) -> Self {
        let mut v: Vec<Scope> = iter.into_iter().collect();
        v.sort();
        v.dedup();
        Self(v)
    }
}

impl Extend<Scope> for ScopeSet {
    fn extend<I: IntoIterator<Item = Scope>>(&mut self, iter: I) {
        self.0.extend(iter);
        self.0.sort();
        self.0.dedup();
    }
}

impl From<Vec<Scope>> for ScopeSet {
    fn from(v: Vec<Scope>) -> Self {
        v.into_iter().collect()
    }
}

impl From<ScopeSet> for Vec<Scope> {
    fn from(set: ScopeSet) -> Self {
        set.0
    }
}

impl<'a> IntoIterator for &'a ScopeSet {
    type Item = &'a Scope;
    type IntoIter = std::slice::Iter<'a, Scope>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl fmt::Display for ScopeSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, scope) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{scope}")?;
        }
        Ok(())
    }
}

impl FromStr for ScopeSet {
    type Err = AuthzError;
    /// Parses `scope,scope,...`; the empty string is the empty set. No whitespace is allowed.
    fn from_str(s: &str) -> Result<Self, AuthzError> {
        if s.is_empty() {
            return Ok(Self::new());
        }
        s.split(',').map(str::parse).collect()
    }
}
