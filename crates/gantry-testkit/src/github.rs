//! A fake GitHub REST API for GitHub App flows, on 127.0.0.1: it knows one
//! app (its id and public key), checks the app's RS256 JWT on `/app/*` like
//! GitHub (signature, `iss`, `exp`), and serves
//!
//! - `GET /app/installations` (paginated: `per_page`, `page`),
//! - `POST /app/installations/{id}/access_tokens`: a fresh random token and
//!   its `expires_at` (RFC 3339), plus `repositories` when asked to
//!   ([`FakeGithub::set_repositories_in_token_response`]),
//! - `GET /installation/repositories` for the tokens it minted (paginated).
//!
//! Failures answer like GitHub: a JSON `{"message", "documentation_url"}`
//! with 401 (bad JWT or token) or 404. Every request is recorded, so tests
//! can assert what a client asked and how many tokens it minted.
//!
//! ```no_run
//! use gantry_testkit::github::{APP_PUBLIC_KEY_PEM, FakeGithub};
//!
//! # async fn demo() -> std::io::Result<()> {
//! let github = FakeGithub::start(42, APP_PUBLIC_KEY_PEM)?;
//! github.add_installation(7, &["acme/api", "acme/web"]);
//! let base_url = github.base_url(); // http://127.0.0.1:PORT
//! // ... point a GitHub App client at base_url, signing with APP_PRIVATE_KEY_PEM, then:
//! assert_eq!(github.minted(), vec![7]);
//! # let _ = base_url;
//! # Ok(()) }
//! ```

mod jwt;

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::extract::State as AxumState;
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Value, json};
use tokio::sync::watch;

use jwt::AppVerifier;

/// A test-only GitHub App private key, PKCS#1 (`BEGIN RSA PRIVATE KEY`, as
/// GitHub hands it out). Never use it for anything real.
pub const APP_PRIVATE_KEY_PEM: &str = include_str!("../fixtures/github/app-private-key.pem");
/// [`APP_PRIVATE_KEY_PEM`] in PKCS#8 (`BEGIN PRIVATE KEY`).
pub const APP_PRIVATE_KEY_PKCS8_PEM: &str =
    include_str!("../fixtures/github/app-private-key.pkcs8.pem");
/// The public half of [`APP_PRIVATE_KEY_PEM`] (SPKI, `BEGIN PUBLIC KEY`),
/// what [`FakeGithub::start`] takes.
pub const APP_PUBLIC_KEY_PEM: &str = include_str!("../fixtures/github/app-public-key.pem");
/// Another RSA key (PKCS#1): JWTs it signs are refused by a fake that knows
/// [`APP_PUBLIC_KEY_PEM`].
pub const STRANGER_PRIVATE_KEY_PEM: &str =
    include_str!("../fixtures/github/stranger-private-key.pem");

/// How long minted tokens live unless changed: GitHub's one hour.
const DEFAULT_TOKEN_LIFETIME: Duration = Duration::from_secs(3600);
/// GitHub's page size limits.
const DEFAULT_PER_PAGE: usize = 30;
const MAX_PER_PAGE: usize = 100;
const DOCS: &str = "https://docs.github.com/rest";

/// One request the fake received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GithubRequest {
    /// `GET`, `POST`, ...
    pub method: String,
    /// The path, e.g. `/app/installations/7/access_tokens`.
    pub path: String,
    /// The query string without `?` (empty if none).
    pub query: String,
    /// Headers, names lower-cased (non-UTF-8 values are left out).
    pub headers: BTreeMap<String, String>,
}

impl GithubRequest {
    /// A header's value by (case-insensitive) name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .get(&name.to_ascii_lowercase())
            .map(String::as_str)
    }
}

/// A token the fake minted.
struct Issued {
    installation_id: i64,
    expires_at: SystemTime,
}

struct State {
    /// Installation id -> its repositories' full names.
    installations: BTreeMap<i64, Vec<String>>,
    tokens: HashMap<String, Issued>,
    /// Installation ids of the tokens minted, in order.
    minted: Vec<i64>,
    token_lifetime: Duration,
    repositories_in_token_response: bool,
    requests: Vec<GithubRequest>,
}

#[derive(Clone)]
struct Shared {
    state: Arc<Mutex<State>>,
    app: Arc<AppVerifier>,
    app_id: i64,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panicking test thread must not hide the recorded requests.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// The fake GitHub API server. Dropping it stops the server.
pub struct FakeGithub {
    addr: SocketAddr,
    shared: Shared,
    // Dropping the sender is the shutdown signal.
    _shutdown: watch::Sender<()>,
}

impl std::fmt::Debug for FakeGithub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeGithub")
            .field("addr", &self.addr)
            .field("app_id", &self.shared.app_id)
            .finish_non_exhaustive()
    }
}

impl FakeGithub {
    /// Binds 127.0.0.1 on a free port and serves the API of the app
    /// `app_id` whose public key is `public_key_pem` (SPKI PEM), on a
    /// background task of the current tokio runtime (an error outside one).
    /// It starts with no installations.
    pub fn start(app_id: i64, public_key_pem: &str) -> io::Result<FakeGithub> {
        let app = AppVerifier::new(app_id, public_key_pem)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        let runtime = tokio::runtime::Handle::try_current().map_err(|e| {
            io::Error::other(format!("FakeGithub::start needs a tokio runtime: {e}"))
        })?;
        let std_listener = std::net::TcpListener::bind(("127.0.0.1", 0))?;
        std_listener.set_nonblocking(true)?;
        let addr = std_listener.local_addr()?;
        let listener = {
            let _guard = runtime.enter();
            tokio::net::TcpListener::from_std(std_listener)?
        };

        let shared = Shared {
            state: Arc::new(Mutex::new(State {
                installations: BTreeMap::new(),
                tokens: HashMap::new(),
                minted: Vec::new(),
                token_lifetime: DEFAULT_TOKEN_LIFETIME,
                repositories_in_token_response: false,
                requests: Vec::new(),
            })),
            app: Arc::new(app),
            app_id,
        };
        let router = Router::new().fallback(handle).with_state(shared.clone());
        let (tx, mut stop) = watch::channel(());
        let serve = axum::serve(listener, router).with_graceful_shutdown(async move {
            // Err means the sender (the FakeGithub) is gone: time to stop.
            while stop.changed().await.is_ok() {}
        });
        runtime.spawn(async move {
            let _ = serve.await;
        });
        Ok(FakeGithub {
            addr,
            shared,
            _shutdown: tx,
        })
    }

    /// `http://127.0.0.1:PORT`, the API base URL (like `https://api.github.com`).
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The socket the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Installs the app on an account with these repositories (full names,
    /// `owner/name`); replaces an installation with the same id.
    pub fn add_installation(&self, id: i64, repositories: &[&str]) {
        let repositories = repositories.iter().map(|r| (*r).to_owned()).collect();
        self.shared.lock().installations.insert(id, repositories);
    }

    /// How long tokens minted from now on live (default one hour).
    pub fn set_token_lifetime(&self, lifetime: Duration) {
        self.shared.lock().token_lifetime = lifetime;
    }

    /// Whether the access token answer lists the repositories (GitHub does
    /// when the request named them); otherwise clients must ask
    /// `/installation/repositories`. Default: no.
    pub fn set_repositories_in_token_response(&self, yes: bool) {
        self.shared.lock().repositories_in_token_response = yes;
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<GithubRequest> {
        self.shared.lock().requests.clone()
    }

    /// The installation id of each token minted so far, in order.
    pub fn minted(&self) -> Vec<i64> {
        self.shared.lock().minted.clone()
    }

    /// The installation a token was minted for, if this fake minted it.
    pub fn token_installation(&self, token: &str) -> Option<i64> {
        self.shared
            .lock()
            .tokens
            .get(token)
            .map(|t| t.installation_id)
    }
}

/// Every request lands here: recorded, then routed by method and path.
async fn handle(
    AxumState(shared): AxumState<Shared>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    let request = GithubRequest {
        method: method.as_str().to_owned(),
        path: uri.path().to_owned(),
        query: uri.query().unwrap_or_default().to_owned(),
        headers: headers
            .iter()
            .filter_map(|(k, v)| Some((k.as_str().to_owned(), v.to_str().ok()?.to_owned())))
            .collect(),
    };
    shared.lock().requests.push(request.clone());

    let segments: Vec<&str> = request.path.trim_matches('/').split('/').collect();
    let page = Page::from_query(&request.query);
    match (&method, segments.as_slice()) {
        (&Method::GET, ["app", "installations"]) => match app_auth(&shared, &headers) {
            Ok(()) => list_installations(&shared, page),
            Err(message) => github_error(StatusCode::UNAUTHORIZED, message),
        },
        (&Method::POST, ["app", "installations", id, "access_tokens"]) => {
            match app_auth(&shared, &headers) {
                Ok(()) => mint(&shared, id),
                Err(message) => github_error(StatusCode::UNAUTHORIZED, message),
            }
        }
        (&Method::GET, ["installation", "repositories"]) => {
            list_repositories(&shared, &headers, page)
        }
        _ => github_error(StatusCode::NOT_FOUND, "Not Found"),
    }
}

/// The app's JWT from `Authorization: Bearer <jwt>`, checked; else
/// GitHub's message for why it is refused.
fn app_auth(shared: &Shared, headers: &HeaderMap) -> Result<(), &'static str> {
    let jwt = bearer(headers, "Bearer ").ok_or("A JSON web token could not be decoded")?;
    shared.app.verify(jwt, unix_now())
}

/// The credential after `scheme` in the Authorization header.
fn bearer<'h>(headers: &'h HeaderMap, scheme: &str) -> Option<&'h str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (given, credential) = value.split_at_checked(scheme.len())?;
    given
        .eq_ignore_ascii_case(scheme)
        .then_some(credential.trim())
}

fn list_installations(shared: &Shared, page: Page) -> Response {
    let ids: Vec<i64> = shared.lock().installations.keys().copied().collect();
    let body: Vec<Value> = page
        .of(&ids)
        .iter()
        .map(|id| {
            json!({
                "id": id,
                "account": {"login": format!("account-{id}"), "type": "Organization"},
                "app_id": shared.app_id,
                "target_type": "Organization",
                "repository_selection": "selected",
            })
        })
        .collect();
    axum::Json(body).into_response()
}

fn mint(shared: &Shared, id: &str) -> Response {
    let mut state = shared.lock();
    let known = id.parse::<i64>().ok().and_then(|id| {
        let repositories = state.installations.get(&id)?.clone();
        Some((id, repositories))
    });
    let Some((id, repositories)) = known else {
        return github_error(StatusCode::NOT_FOUND, "Not Found");
    };
    let token = format!(
        "ghs_{}",
        std::iter::repeat_with(fastrand::alphanumeric)
            .take(36)
            .collect::<String>()
    );
    let expires_at = SystemTime::now() + state.token_lifetime;
    state.tokens.insert(
        token.clone(),
        Issued {
            installation_id: id,
            expires_at,
        },
    );
    state.minted.push(id);
    let mut body = json!({
        "token": token,
        "expires_at": DateTime::<Utc>::from(expires_at).to_rfc3339_opts(SecondsFormat::Secs, true),
        "permissions": {"contents": "write", "metadata": "read", "pull_requests": "write"},
        "repository_selection": "selected",
    });
    if state.repositories_in_token_response {
        body["repositories"] = repositories.iter().map(|r| repository(r)).collect();
    }
    (StatusCode::CREATED, axum::Json(body)).into_response()
}

fn list_repositories(shared: &Shared, headers: &HeaderMap, page: Page) -> Response {
    let state = shared.lock();
    // GitHub takes an installation token as `token X` or `Bearer X`.
    let issued = bearer(headers, "token ")
        .or_else(|| bearer(headers, "Bearer "))
        .and_then(|token| state.tokens.get(token))
        .filter(|issued| issued.expires_at > SystemTime::now());
    let Some(repositories) = issued.and_then(|i| state.installations.get(&i.installation_id))
    else {
        return github_error(StatusCode::UNAUTHORIZED, "Bad credentials");
    };
    let listed: Vec<Value> = page
        .of(repositories)
        .iter()
        .map(|r| repository(r))
        .collect();
    axum::Json(json!({
        "total_count": repositories.len(),
        "repository_selection": "selected",
        "repositories": listed,
    }))
    .into_response()
}

/// A repository as GitHub lists it (the fields clients read).
fn repository(full_name: &str) -> Value {
    let name = full_name.rsplit('/').next().unwrap_or(full_name);
    json!({"name": name, "full_name": full_name, "private": true})
}

/// `per_page` and `page` from a query string, with GitHub's defaults.
#[derive(Clone, Copy)]
struct Page {
    per_page: usize,
    page: usize,
}

impl Page {
    fn from_query(query: &str) -> Page {
        let param = |name: &str| {
            query
                .split('&')
                .filter_map(|pair| pair.split_once('='))
                .find(|(key, _)| *key == name)
                .and_then(|(_, value)| value.parse::<usize>().ok())
        };
        Page {
            per_page: param("per_page")
                .unwrap_or(DEFAULT_PER_PAGE)
                .clamp(1, MAX_PER_PAGE),
            page: param("page").unwrap_or(1).max(1),
        }
    }

    fn of<'a, T>(&self, items: &'a [T]) -> &'a [T] {
        let start = (self.page - 1)
            .saturating_mul(self.per_page)
            .min(items.len());
        let end = start.saturating_add(self.per_page).min(items.len());
        &items[start..end]
    }
}

/// GitHub's error body.
fn github_error(status: StatusCode, message: &str) -> Response {
    let body = json!({"message": message, "documentation_url": DOCS, "status": status.as_str()});
    (status, axum::Json(body)).into_response()
}

fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}
