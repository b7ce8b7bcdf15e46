//! Several accounts in one team database. The default account's tables live in `public`; every
//! other account has a schema of its own (`account_<id>`) with the same migrations, and its
//! connections search that schema alone. A name missing there (an account deleted through
//! another replica) is therefore an error, never the default account's table of that name; SQL
//! names pgvector's types and operators with the extension's schema
//! ([`Database::vector_schema`]). An account exists while its schema has the migrations
//! table; creating, deleting and migrating an account all hold the migration lock.

use postgres::Client;

use crate::{Database, PgError, Result, migrations};

/// The account whose tables are in `public`.
pub const DEFAULT_ACCOUNT: &str = "default";

const PREFIX: &str = "account_";

/// The quoted schema of `account` (`None` for the default account). Account ids are 1–64
/// ASCII letters, digits, `_` or `-`, so the quoted name needs no escaping.
pub fn account_schema(account: &str) -> Result<Option<String>> {
    if account == DEFAULT_ACCOUNT {
        return Ok(None);
    }
    let valid = !account.is_empty()
        && account.len() <= 64
        && account
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if !valid {
        return Err(PgError::Invalid(format!("account id {account:?}")));
    }
    Ok(Some(format!("\"{PREFIX}{account}\"")))
}

/// Whether the quoted `schema` holds an account (its migrations table).
fn holds_account(client: &mut impl postgres::GenericClient, schema: &str) -> Result<bool> {
    Ok(client
        .query_one(
            "SELECT to_regclass($1) IS NOT NULL",
            &[&format!("{schema}.knowhub_migrations")],
        )?
        .get(0))
}

/// Runs the migrations of an existing account's schema (the connection's `search_path`
/// starts with it); refuses a schema that holds no account.
pub(crate) fn migrate(client: &mut Client, schema: &str, vectors: &str) -> Result<()> {
    let mut tx = client.transaction()?;
    migrations::lock(&mut tx)?;
    if !holds_account(&mut tx, schema)? {
        let id = schema.trim_matches('"').trim_start_matches(PREFIX);
        return Err(PgError::NoAccount(id.to_owned()));
    }
    // Migration steps name pgvector's types as the default account's do.
    tx.batch_execute(&format!("SET LOCAL search_path TO {schema}, {vectors}"))?;
    migrations::run_in(&mut tx, migrations::DOMAINS)?;
    tx.commit()?;
    Ok(())
}

impl Database {
    /// Connects to `account`'s tables in the database at `address` (the default account's are
    /// the database's own), running its migrations; [`PgError::NoAccount`] when it has none.
    pub fn connect_account(address: &str, account: &str) -> Result<Database> {
        match account_schema(account)? {
            None => Database::connect(address),
            Some(schema) => Database::open(address, Some(&schema)),
        }
    }

    /// The accounts besides the default one, sorted.
    pub fn accounts(&self) -> Result<Vec<String>> {
        let mut client = self.client()?;
        let rows = client.query(
            "SELECT substr(n.nspname, $1) FROM pg_namespace n
             WHERE starts_with(n.nspname, $2)
               AND to_regclass(quote_ident(n.nspname) || '.knowhub_migrations') IS NOT NULL
             ORDER BY 1",
            &[&(PREFIX.len() as i32 + 1), &PREFIX],
        )?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }

    /// Whether `account` exists (the default account always does).
    pub fn account_exists(&self, account: &str) -> Result<bool> {
        match account_schema(account)? {
            None => Ok(true),
            Some(schema) => holds_account(&mut *self.client()?, &schema),
        }
    }

    /// Creates `account` with its tables, in one transaction; an existing account is an error.
    pub fn create_account(&self, account: &str) -> Result<()> {
        let Some(schema) = account_schema(account)? else {
            return Err(PgError::Invalid("the default account always exists".into()));
        };
        let mut client = self.client()?;
        let mut tx = client.transaction()?;
        migrations::lock(&mut tx)?;
        if holds_account(&mut tx, &schema)? {
            return Err(PgError::Invalid(format!(
                "account {account} already exists"
            )));
        }
        tx.batch_execute(&format!(
            "CREATE SCHEMA {schema}; SET LOCAL search_path TO {schema}, {}",
            self.vector_schema()
        ))?;
        migrations::run_in(&mut tx, migrations::DOMAINS)?;
        tx.commit()?;
        Ok(())
    }

    /// Deletes `account` and everything it holds; false when there was no such account.
    pub fn delete_account(&self, account: &str) -> Result<bool> {
        let Some(schema) = account_schema(account)? else {
            return Err(PgError::Invalid(
                "the default account cannot be deleted".into(),
            ));
        };
        let mut client = self.client()?;
        let mut tx = client.transaction()?;
        migrations::lock(&mut tx)?;
        if !holds_account(&mut tx, &schema)? {
            return Ok(false);
        }
        tx.batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))?;
        tx.commit()?;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn account_schemas_are_quoted_and_validated() {
        assert_eq!(account_schema("default").unwrap(), None);
        assert_eq!(
            account_schema("Acme-1").unwrap().as_deref(),
            Some("\"account_Acme-1\"")
        );
        for bad in ["", "a\"b", "a b", "a;b", &"x".repeat(65), "ü"] {
            assert!(account_schema(bad).is_err(), "{bad:?}");
        }
    }
}
