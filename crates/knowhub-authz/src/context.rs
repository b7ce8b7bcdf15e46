//! Request context, memberships, visibility and write checks.

use serde::{Deserialize, Serialize};

use crate::{AccountId, AgentId, GroupId, OrgId, ProjectId, Role, Scope, ScopeSet, TeamId, UserId};

/// Who is asking: resolved once per request (from a session or an API key) and passed down.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestContext {
    /// The tenant account the principal belongs to.
    pub account: AccountId,
    /// The human user (an agent always acts for a user).
    pub user: UserId,
    /// The agent acting for the user, if any.
    pub agent: Option<AgentId>,
    /// The principal's role.
    pub role: Role,
    /// The session id, when the request came through a session.
    pub session: Option<String>,
    /// Correlates the request's log and audit records.
    pub trace_id: String,
}

/// The groups a user belongs to (within their account).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Memberships {
    /// Teams.
    pub teams: Vec<TeamId>,
    /// Projects.
    pub projects: Vec<ProjectId>,
    /// Organisations.
    pub orgs: Vec<OrgId>,
    /// Group spaces (every member role reads; see [`GroupRole`](crate::GroupRole) for writes).
    #[serde(default)]
    pub groups: Vec<GroupId>,
}

/// The scopes a request may read, plus the role and account that bound them.
///
/// For a USER: `{user:<me>, agent:<a> (if acting through an agent), team:*, project:*, org:*,
/// group:*, public}`. ADMIN additionally [sees everything](Self::sees_everything) *within their account*;
/// ROOT sees everything in every account.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VisibleScopes {
    account: AccountId,
    role: Role,
    scopes: ScopeSet,
}

impl VisibleScopes {
    /// Computes the visible scopes of a request.
    pub fn for_context(ctx: &RequestContext, memberships: &Memberships) -> Self {
        let mut scopes: Vec<Scope> = Vec::with_capacity(
            3 + memberships.teams.len()
                + memberships.projects.len()
                + memberships.orgs.len()
                + memberships.groups.len(),
        );
        scopes.push(Scope::User(ctx.user.clone()));
        if let Some(agent) = &ctx.agent {
            scopes.push(Scope::Agent(agent.clone()));
        }
        scopes.extend(memberships.teams.iter().cloned().map(Scope::Team));
        scopes.extend(memberships.projects.iter().cloned().map(Scope::Project));
        scopes.extend(memberships.orgs.iter().cloned().map(Scope::Org));
        scopes.extend(memberships.groups.iter().cloned().map(Scope::Group));
        scopes.push(Scope::Public);
        Self {
            account: ctx.account.clone(),
            role: ctx.role,
            scopes: scopes.into_iter().collect(),
        }
    }

    /// Whether the role bypasses scope checks (ADMIN within its account, ROOT everywhere).
    pub fn sees_everything(&self) -> bool {
        matches!(self.role, Role::Root | Role::Admin)
    }

    /// Whether a resource owned by `resource_account` and shared with `scopes` is readable.
    ///
    /// * ROOT: always.
    /// * Any other role: never across accounts (not even `public`, which means "everyone in the
    ///   account").
    /// * ADMIN: everything in their account, including resources with an empty scope set.
    /// * USER: when `scopes` shares at least one scope with the visible set; an empty set is
    ///   therefore never visible to a USER.
    pub fn allows(&self, resource_account: &AccountId, scopes: &ScopeSet) -> bool {
        match self.role {
            Role::Root => true,
            _ if *resource_account != self.account => false,
            Role::Admin => true,
            Role::User => self.scopes.intersects(scopes),
        }
    }

    /// The best [`Scope::priority`] among the resource scopes this request matched, for ranking
    /// (`None` when no scope matched, e.g. an ADMIN reading someone else's private item).
    pub fn matched_priority(&self, scopes: &ScopeSet) -> Option<u8> {
        scopes
            .iter()
            .filter(|s| self.scopes.contains(s))
            .map(Scope::priority)
            .min()
    }

    /// The visible scope set (sorted).
    pub fn scopes(&self) -> &ScopeSet {
        &self.scopes
    }

    /// The account the scopes belong to.
    pub fn account(&self) -> &AccountId {
        &self.account
    }

    /// The role that was resolved.
    pub fn role(&self) -> Role {
        self.role
    }
}

/// Owner-only writes: may `ctx` modify (or delete, or re-share) something owned by `owner` in
/// `owner_account`?
///
/// True for the owner themself (in the same account), an ADMIN of the same account, or ROOT.
/// Membership of a shared scope never grants write access.
pub fn can_write(ctx: &RequestContext, owner: &UserId, owner_account: &AccountId) -> bool {
    match ctx.role {
        Role::Root => true,
        _ if ctx.account != *owner_account => false,
        Role::Admin => true,
        Role::User => ctx.user == *owner,
    }
}
