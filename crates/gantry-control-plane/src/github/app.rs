//! [`GithubApp`]: the control plane's GitHub App. Lists the app's
//! installations and mints installation tokens through the REST API, each
//! runner limited to the installations it is allowed.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::time::{SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use reqwest::Method;
use serde::Deserialize;

use super::api::{Auth, RestClient};
use super::jwt::AppKey;
use super::{GithubError, GithubInstallations, InstallationToken};

/// Items per page asked of list endpoints (GitHub's maximum).
const PER_PAGE: usize = 100;
/// Pages read at most (10,000 items): a server paging forever is an error,
/// not an endless loop.
const MAX_PAGES: usize = 100;

/// Which installations each runner may use.
type Allowed = BTreeMap<String, BTreeSet<i64>>;

/// A GitHub App: its id, private key and API base URL, and optionally which
/// installations each runner may use. Build it with [`GithubApp::builder`].
pub struct GithubApp {
    app_id: String,
    key: AppKey,
    api: RestClient,
    /// `None`: every runner may use every installation of the app.
    allowed: Option<Allowed>,
}

impl fmt::Debug for GithubApp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The key stays out of logs.
        f.debug_struct("GithubApp")
            .field("app_id", &self.app_id)
            .field("allowed", &self.allowed)
            .finish_non_exhaustive()
    }
}

/// Configures a [`GithubApp`].
pub struct GithubAppBuilder {
    app_id: String,
    private_key_pem: String,
    api_base_url: String,
    allowed: Option<Allowed>,
}

impl fmt::Debug for GithubAppBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GithubAppBuilder")
            .field("app_id", &self.app_id)
            .field("api_base_url", &self.api_base_url)
            .field("allowed", &self.allowed)
            .finish_non_exhaustive()
    }
}

impl GithubAppBuilder {
    /// The REST API base URL (default [`GithubApp::DEFAULT_API_BASE_URL`];
    /// GitHub Enterprise Server: `https://HOST/api/v3`).
    pub fn api_base_url(mut self, url: impl Into<String>) -> Self {
        self.api_base_url = url.into();
        self
    }

    /// Limits each runner (by the name or id the control plane knows it by)
    /// to these installation ids; a runner not listed gets none. Without
    /// this, every runner may use every installation of the app.
    pub fn runner_installations<R, I>(mut self, allowed: impl IntoIterator<Item = (R, I)>) -> Self
    where
        R: Into<String>,
        I: IntoIterator<Item = i64>,
    {
        let allowed = allowed
            .into_iter()
            .map(|(runner, ids)| (runner.into(), ids.into_iter().collect()))
            .collect();
        self.allowed = Some(allowed);
        self
    }

    /// The app, once its key reads as an RSA key and its base URL as a URL.
    pub fn build(self) -> Result<GithubApp, GithubError> {
        if self.app_id.trim().is_empty() {
            return Err(GithubError::Config("the app id is empty".into()));
        }
        Ok(GithubApp {
            key: AppKey::from_pem(&self.private_key_pem)?,
            api: RestClient::new(&self.api_base_url)?,
            app_id: self.app_id.trim().to_owned(),
            allowed: self.allowed,
        })
    }
}

impl GithubApp {
    /// GitHub's public REST API.
    pub const DEFAULT_API_BASE_URL: &str = "https://api.github.com";

    /// Starts configuring the app `app_id` (its numeric id, or its client
    /// id) with its private key (PEM, PKCS#1 as GitHub hands it out, or
    /// PKCS#8).
    pub fn builder(
        app_id: impl Into<String>,
        private_key_pem: impl Into<String>,
    ) -> GithubAppBuilder {
        GithubAppBuilder {
            app_id: app_id.into(),
            private_key_pem: private_key_pem.into(),
            api_base_url: Self::DEFAULT_API_BASE_URL.to_owned(),
            allowed: None,
        }
    }

    /// The installation ids `runner` may use: those of `allowed` if set.
    fn allowed_for(&self, runner: &str) -> Option<&BTreeSet<i64>> {
        static NONE: BTreeSet<i64> = BTreeSet::new();
        self.allowed
            .as_ref()
            .map(|allowed| allowed.get(runner).unwrap_or(&NONE))
    }

    fn jwt(&self) -> Result<String, GithubError> {
        self.key.jwt(&self.app_id, unix_now_secs())
    }

    /// Every installation of the app (`GET /app/installations`).
    async fn app_installations(&self) -> Result<Vec<i64>, GithubError> {
        #[derive(Deserialize)]
        struct Installation {
            id: i64,
        }
        let jwt = self.jwt()?;
        let jwt = jwt.as_str();
        let installations = all_pages(|page| async move {
            let path = format!("/app/installations?per_page={PER_PAGE}&page={page}");
            self.api
                .call::<Vec<Installation>>(Method::GET, &path, Auth::App(jwt))
                .await
        })
        .await?;
        Ok(installations.into_iter().map(|i| i.id).collect())
    }

    /// The repositories an installation token opens
    /// (`GET /installation/repositories`).
    async fn token_repositories(&self, token: &str) -> Result<Vec<String>, GithubError> {
        #[derive(Deserialize)]
        struct RepositoryPage {
            repositories: Vec<Repository>,
        }
        let repositories = all_pages(|page| async move {
            let path = format!("/installation/repositories?per_page={PER_PAGE}&page={page}");
            let page: RepositoryPage = self
                .api
                .call(Method::GET, &path, Auth::Installation(token))
                .await?;
            Ok(page.repositories)
        })
        .await?;
        Ok(repositories.into_iter().map(|r| r.full_name).collect())
    }
}

#[async_trait]
impl GithubInstallations for GithubApp {
    async fn installations(&self, runner: &str) -> Result<Vec<i64>, GithubError> {
        let allowed = self.allowed_for(runner);
        if allowed.is_some_and(BTreeSet::is_empty) {
            return Ok(Vec::new());
        }
        let mut ids = self.app_installations().await?;
        // Only those still installed: a stale allow list names no ghosts.
        if let Some(allowed) = allowed {
            ids.retain(|id| allowed.contains(id));
        }
        Ok(ids)
    }

    async fn token(
        &self,
        runner: &str,
        installation_id: i64,
    ) -> Result<InstallationToken, GithubError> {
        if self
            .allowed_for(runner)
            .is_some_and(|allowed| !allowed.contains(&installation_id))
        {
            return Err(GithubError::NotAllowed {
                runner: runner.to_owned(),
                installation_id,
            });
        }
        // Not `Debug`: it holds the token.
        #[derive(Deserialize)]
        struct AccessToken {
            token: String,
            expires_at: String,
            repositories: Option<Vec<Repository>>,
        }
        let jwt = self.jwt()?;
        let path = format!("/app/installations/{installation_id}/access_tokens");
        let minted: AccessToken = self.api.call(Method::POST, &path, Auth::App(&jwt)).await?;
        if minted.token.is_empty() {
            return Err(GithubError::InvalidResponse(
                "GitHub: the access token is empty".into(),
            ));
        }
        let expires_at_ms = chrono::DateTime::parse_from_rfc3339(&minted.expires_at)
            .map_err(|e| {
                GithubError::InvalidResponse(format!(
                    "GitHub: expires_at {:?} is not an RFC 3339 time: {e}",
                    minted.expires_at
                ))
            })?
            .timestamp_millis();
        // GitHub lists them only when the token was scoped to some.
        let repositories = match minted.repositories {
            Some(repositories) => repositories.into_iter().map(|r| r.full_name).collect(),
            None => self.token_repositories(&minted.token).await?,
        };
        Ok(InstallationToken {
            installation_id,
            token: minted.token,
            expires_at_ms,
            repositories,
        })
    }
}

/// A repository as GitHub lists it (the field we read).
#[derive(Deserialize)]
struct Repository {
    full_name: String,
}

/// Every item of a paginated list: pages from 1 until a short one.
async fn all_pages<T, F, Fut>(mut fetch: F) -> Result<Vec<T>, GithubError>
where
    F: FnMut(usize) -> Fut,
    Fut: Future<Output = Result<Vec<T>, GithubError>>,
{
    let mut items = Vec::new();
    for page in 1..=MAX_PAGES {
        let batch = fetch(page).await?;
        let last = batch.len() < PER_PAGE;
        items.extend(batch);
        if last {
            return Ok(items);
        }
    }
    Err(GithubError::InvalidResponse(format!(
        "GitHub: a list went on past {MAX_PAGES} pages of {PER_PAGE}"
    )))
}

fn unix_now_secs() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}
