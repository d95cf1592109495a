//! One configured provider and its side of the protocol: the authorization request (code
//! flow with PKCE S256, `state`, and for OpenID a `nonce`), and the callback's work: the
//! code exchanged, the ID token checked (signature against the provider's keys, refetched at
//! most once a minute for an unknown key; `iss`, `aud`, `azp`, `exp`, `iat`, `nonce`), the
//! user-info answer read and matched to the token's subject.

use super::http::{acceptable, Http};
use super::presets::{preset, Shape};
use super::ticket::Ticket;
use crate::config::ProviderSettings;
use openidconnect::core::{
    CoreAuthDisplay, CoreAuthenticationFlow, CoreClaimName, CoreClaimType, CoreClient,
    CoreClientAuthMethod, CoreGrantType, CoreIdTokenVerifier, CoreJsonWebKey, CoreJsonWebKeySet,
    CoreJweContentEncryptionAlgorithm, CoreJweKeyManagementAlgorithm,
    CoreJwsSigningAlgorithm as Alg, CoreResponseMode, CoreResponseType, CoreSubjectIdentifierType,
};
use openidconnect::{
    AdditionalProviderMetadata, AuthorizationCode, ClaimsVerificationError, ClientId, ClientSecret,
    CsrfToken, IssuerUrl, Nonce, OAuth2TokenResponse as _, PkceCodeChallenge, PkceCodeVerifier,
    ProviderMetadata, RedirectUrl, Scope, SignatureVerificationError, TokenResponse as _,
};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::time::{Duration, Instant};

/// How far the clocks of the provider and the API may differ, for `exp` and `iat`.
const LEEWAY: chrono::TimeDelta = chrono::TimeDelta::seconds(30);

/// How long the keys are kept before an unknown `kid` may fetch them again.
const REFETCH_AFTER: Duration = Duration::from_secs(60);

/// The discovery document's member this module reads beyond the core ones: whether the
/// provider sends `iss` back with the code (RFC 9207).
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub(crate) struct IssParameter {
    #[serde(default)]
    authorization_response_iss_parameter_supported: bool,
}

impl AdditionalProviderMetadata for IssParameter {}

/// A provider's discovery document, with its keys.
type Metadata = ProviderMetadata<
    IssParameter,
    CoreAuthDisplay,
    CoreClientAuthMethod,
    CoreClaimName,
    CoreClaimType,
    CoreGrantType,
    CoreJweContentEncryptionAlgorithm,
    CoreJweKeyManagementAlgorithm,
    CoreJsonWebKey,
    CoreResponseMode,
    CoreResponseType,
    CoreSubjectIdentifierType,
>;

/// The signature algorithms an ID token may use: public-key ones only, so that neither an
/// unsigned token (`none`) nor one signed with a public key taken as an HMAC secret passes.
const ALGS: [Alg; 9] = [
    Alg::RsaSsaPkcs1V15Sha256,
    Alg::RsaSsaPkcs1V15Sha384,
    Alg::RsaSsaPkcs1V15Sha512,
    Alg::RsaSsaPssSha256,
    Alg::RsaSsaPssSha384,
    Alg::RsaSsaPssSha512,
    Alg::EcdsaP256Sha256,
    Alg::EcdsaP384Sha384,
    Alg::EdDsa,
];

/// Why a callback is refused: said to the client (401) and logged.
#[derive(Debug)]
pub(crate) struct Refusal(pub(crate) String);

/// A refusal saying `why`.
pub(crate) fn refuse(why: impl Into<String>) -> Refusal {
    Refusal(why.into())
}

/// Who signed in, as the provider says.
#[derive(Debug, Clone)]
pub(crate) struct Person {
    /// The provider's id of the person (`sub`).
    pub(crate) subject: String,
    /// The address it gave, if any.
    pub(crate) email: Option<String>,
    /// Whether it says the address is verified.
    pub(crate) email_verified: bool,
    /// Every claim it gave (the ID token's, then the user-info answer's), for the role rules.
    pub(crate) claims: Map<String, Value>,
}

/// A role given by a claim (`groups:admins=admin@acme`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RoleRule {
    /// The claim (a string, or a list of strings).
    pub(crate) claim: String,
    /// The value it must have or hold.
    pub(crate) value: String,
    /// The role given.
    pub(crate) role: String,
    /// The domain's name, for a role in a domain.
    pub(crate) domain: Option<String>,
}

impl RoleRule {
    /// Parses `_ROLES`: `claim:value=role[@domain]`, comma-separated.
    pub(crate) fn parse_all(text: &str) -> Option<Vec<RoleRule>> {
        text.split(',')
            .map(str::trim)
            .filter(|r| !r.is_empty())
            .map(|r| {
                let (lhs, rhs) = r.split_once('=')?;
                let (claim, value) = lhs.split_once(':')?;
                let (role, domain) = match rhs.split_once('@') {
                    Some((role, domain)) => (role, Some(domain.trim().to_owned())),
                    None => (rhs, None),
                };
                let (claim, value, role) = (claim.trim(), value.trim(), role.trim());
                let ok = !claim.is_empty()
                    && !value.is_empty()
                    && !role.is_empty()
                    && domain.as_ref().is_none_or(|d| !d.is_empty());
                ok.then(|| RoleRule {
                    claim: claim.to_owned(),
                    value: value.to_owned(),
                    role: role.to_owned(),
                    domain,
                })
            })
            .collect()
    }

    /// Whether `claims` give this rule's role.
    pub(crate) fn holds(&self, claims: &Map<String, Value>) -> bool {
        match claims.get(&self.claim) {
            Some(Value::String(s)) => *s == self.value,
            Some(Value::Array(items)) => items.iter().any(|i| i.as_str() == Some(&self.value)),
            Some(Value::Bool(b)) => b.to_string() == self.value,
            Some(Value::Number(n)) => n.to_string() == self.value,
            _ => false,
        }
    }
}

/// The discovery document and when its keys were fetched.
struct Found {
    metadata: Metadata,
    keys_fetched: Instant,
}

/// A configured provider.
pub(crate) struct Provider {
    /// Its name.
    pub(crate) name: String,
    /// How it says who signed in.
    shape: Shape,
    client_id: ClientId,
    client_secret: Option<ClientSecret>,
    /// The OpenID issuer.
    issuer: Option<IssuerUrl>,
    /// The scopes asked for.
    scopes: Vec<String>,
    /// The roles its claims give.
    pub(crate) roles: Vec<RoleRule>,
    /// OAuth 2.0: authorization, token and user-info endpoints.
    endpoints: Option<[url::Url; 3]>,
    /// OpenID: the discovery document, fetched at the first sign-in.
    found: tokio::sync::RwLock<Option<Found>>,
}

impl std::fmt::Debug for Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Provider")
            .field("name", &self.name)
            .field("shape", &self.shape)
            .finish_non_exhaustive()
    }
}

impl Provider {
    /// The provider `settings` describe; what is wrong with them otherwise.
    pub(crate) fn new(settings: &ProviderSettings) -> Result<Provider, String> {
        let preset = preset(&settings.name);
        let url = |what: &str, text: &str| {
            url::Url::parse(text)
                .ok()
                .filter(acceptable)
                .ok_or_else(|| format!("{what} `{text}` is not an https URL"))
        };
        let (issuer, endpoints) = match preset.shape {
            Shape::Oidc => {
                let text = settings
                    .issuer
                    .as_deref()
                    .or(preset.issuer)
                    .ok_or("_ISSUER is needed")?;
                url("_ISSUER", text)?;
                let issuer = IssuerUrl::new(text.trim_end_matches('/').to_owned())
                    .map_err(|e| format!("_ISSUER: {e}"))?;
                (Some(issuer), None)
            }
            _ => {
                let [a, t, u] = preset.endpoints.unwrap_or_default();
                let pick = |own: &Option<String>, default: &'static str| {
                    own.clone().unwrap_or_else(|| default.to_owned())
                };
                (
                    None,
                    Some([
                        url("_AUTH_URL", &pick(&settings.auth_url, a))?,
                        url("_TOKEN_URL", &pick(&settings.token_url, t))?,
                        url("_USERINFO_URL", &pick(&settings.userinfo_url, u))?,
                    ]),
                )
            }
        };
        let roles = match settings.roles.as_deref() {
            Some(text) => RoleRule::parse_all(text)
                .ok_or("_ROLES: claim:value=role or claim:value=role@domain, comma-separated")?,
            None => Vec::new(),
        };
        let mut scopes: Vec<String> = preset.scopes.iter().map(|s| (*s).to_owned()).collect();
        for s in &settings.scopes {
            if !scopes.contains(s) {
                scopes.push(s.clone());
            }
        }
        let secret = settings
            .client_secret
            .as_ref()
            .map(|s| String::from_utf8_lossy(s.expose()).into_owned());
        Ok(Provider {
            name: settings.name.clone(),
            shape: preset.shape,
            client_id: ClientId::new(settings.client_id.clone()),
            client_secret: secret.map(ClientSecret::new),
            issuer,
            scopes,
            roles,
            endpoints,
            found: tokio::sync::RwLock::new(None),
        })
    }

    /// Whether it is an OpenID provider.
    pub(crate) fn is_openid(&self) -> bool {
        self.shape == Shape::Oidc
    }

    /// The discovery document, fetched once (a failed fetch is tried again next time).
    async fn metadata(&self, http: &Http) -> Result<Metadata, Refusal> {
        if let Some(found) = self.found.read().await.as_ref() {
            return Ok(found.metadata.clone());
        }
        let issuer = self
            .issuer
            .clone()
            .ok_or_else(|| refuse("the provider has no issuer"))?;
        let client = caller(http);
        let metadata = Metadata::discover_async(issuer, &client)
            .await
            .map_err(|e| refuse(format!("the provider's discovery failed: {e}")))?;
        let endpoint_ok = |u: &url::Url| acceptable(u);
        if !endpoint_ok(metadata.authorization_endpoint().url())
            || !metadata
                .token_endpoint()
                .is_some_and(|t| endpoint_ok(t.url()))
        {
            return Err(refuse("the provider's endpoints are not https"));
        }
        // The first unknown key after discovery may fetch the keys again at once; later ones
        // only a minute after the last fetch.
        let keys_fetched = Instant::now()
            .checked_sub(REFETCH_AFTER)
            .unwrap_or_else(Instant::now);
        *self.found.write().await = Some(Found {
            metadata: metadata.clone(),
            keys_fetched,
        });
        Ok(metadata)
    }

    /// Checks the `iss` the provider sent back with its code (RFC 9207): when sent, it must
    /// be the provider's issuer; it may be missing only when the provider does not say it
    /// sends one.
    pub(crate) async fn check_iss(&self, http: &Http, iss: Option<&str>) -> Result<(), Refusal> {
        if !self.is_openid() {
            return Ok(());
        }
        let metadata = self.metadata(http).await?;
        match iss {
            Some(iss) if iss == metadata.issuer().as_str() => Ok(()),
            Some(_) => Err(refuse("the answer's iss is not the provider's issuer.")),
            None if metadata
                .additional_metadata()
                .authorization_response_iss_parameter_supported =>
            {
                Err(refuse(
                    "the provider sends iss with its answer, and it is missing.",
                ))
            }
            None => Ok(()),
        }
    }

    /// The keys fetched again, unless they were less than a minute ago: the new keys, or
    /// `None` when it is too soon.
    async fn refetch_keys(&self, http: &Http) -> Result<Option<CoreJsonWebKeySet>, Refusal> {
        let mut found = self.found.write().await;
        let Some(found) = found.as_mut() else {
            return Ok(None);
        };
        if found.keys_fetched.elapsed() < REFETCH_AFTER {
            return Ok(None);
        }
        found.keys_fetched = Instant::now();
        let client = caller(http);
        let keys = CoreJsonWebKeySet::fetch_async(found.metadata.jwks_uri(), &client)
            .await
            .map_err(|e| refuse(format!("the provider's keys could not be fetched: {e}")))?;
        found.metadata = found.metadata.clone().set_jwks(keys.clone());
        Ok(Some(keys))
    }

    /// The URL that starts `ticket`'s sign-in at the provider.
    pub(crate) async fn authorization_url(
        &self,
        http: &Http,
        ticket: &Ticket,
    ) -> Result<String, Refusal> {
        let challenge = PkceCodeChallenge::from_code_verifier_sha256(&PkceCodeVerifier::new(
            ticket.verifier.clone(),
        ));
        let redirect = RedirectUrl::new(ticket.return_to.clone())
            .map_err(|_| refuse("return_to is not a URL"))?;
        let state = ticket.state.clone();
        let url = if let Some([auth, token, _]) = &self.endpoints {
            let client = self.oauth_client(auth, token).set_redirect_uri(redirect);
            let mut request = client.authorize_url(move || CsrfToken::new(state));
            for s in &self.scopes {
                request = request.add_scope(Scope::new(s.clone()));
            }
            request.set_pkce_challenge(challenge).url().0
        } else {
            let metadata = self.metadata(http).await?;
            let client = CoreClient::from_provider_metadata(
                metadata,
                self.client_id.clone(),
                self.client_secret.clone(),
            )
            .set_redirect_uri(redirect);
            let nonce = ticket.nonce.clone();
            let mut request = client.authorize_url(
                CoreAuthenticationFlow::AuthorizationCode,
                move || CsrfToken::new(state),
                move || Nonce::new(nonce),
            );
            for s in self.scopes.iter().filter(|s| *s != "openid") {
                request = request.add_scope(Scope::new(s.clone()));
            }
            request.set_pkce_challenge(challenge).url().0
        };
        Ok(url.to_string())
    }

    /// An OAuth 2.0 client of this provider's.
    fn oauth_client(
        &self,
        auth: &url::Url,
        token: &url::Url,
    ) -> oauth2::Client<
        oauth2::basic::BasicErrorResponse,
        oauth2::basic::BasicTokenResponse,
        oauth2::basic::BasicTokenIntrospectionResponse,
        oauth2::StandardRevocableToken,
        oauth2::basic::BasicRevocationErrorResponse,
        oauth2::EndpointSet,
        oauth2::EndpointNotSet,
        oauth2::EndpointNotSet,
        oauth2::EndpointNotSet,
        oauth2::EndpointSet,
    > {
        let client = oauth2::basic::BasicClient::new(self.client_id.clone())
            .set_auth_uri(oauth2::AuthUrl::from_url(auth.clone()))
            .set_token_uri(oauth2::TokenUrl::from_url(token.clone()));
        match &self.client_secret {
            Some(secret) => client.set_client_secret(secret.clone()),
            None => client,
        }
    }

    /// Who signed in, from the `code` the provider sent back for `ticket`.
    pub(crate) async fn person(
        &self,
        http: &Http,
        ticket: &Ticket,
        code: &str,
    ) -> Result<Person, Refusal> {
        let redirect = RedirectUrl::new(ticket.return_to.clone())
            .map_err(|_| refuse("return_to is not a URL"))?;
        let code = AuthorizationCode::new(code.to_owned());
        let verifier = PkceCodeVerifier::new(ticket.verifier.clone());
        let client = caller(http);
        if let Some([auth, token, userinfo]) = &self.endpoints {
            let answer = self
                .oauth_client(auth, token)
                .set_redirect_uri(redirect)
                .exchange_code(code)
                .set_pkce_verifier(verifier)
                .request_async(&client)
                .await
                .map_err(|e| refuse(format!("the provider refused the code: {e}")))?;
            return self
                .oauth_person(http, userinfo, answer.access_token().secret())
                .await;
        }
        let metadata = self.metadata(http).await?;
        let userinfo = metadata.userinfo_endpoint().map(|u| u.url().clone());
        let oidc = CoreClient::from_provider_metadata(
            metadata.clone(),
            self.client_id.clone(),
            self.client_secret.clone(),
        )
        .set_redirect_uri(redirect);
        let answer = oidc
            .exchange_code(code)
            .map_err(|e| refuse(e.to_string()))?
            .set_pkce_verifier(verifier)
            .request_async(&client)
            .await
            .map_err(|e| refuse(format!("the provider refused the code: {e}")))?;
        let id_token = answer
            .id_token()
            .ok_or_else(|| refuse("the provider sent no ID token"))?;
        let nonce = Nonce::new(ticket.nonce.clone());
        let mut keys = metadata.jwks().clone();
        let claims = loop {
            match id_token.claims(&self.verifier(keys.clone()), &nonce) {
                Ok(claims) => break claims,
                Err(ClaimsVerificationError::SignatureVerification(
                    SignatureVerificationError::NoMatchingKey,
                )) => match self.refetch_keys(http).await? {
                    Some(fresh) => keys = fresh,
                    None => return Err(refuse("the ID token's key is not the provider's")),
                },
                Err(e) => return Err(refuse(format!("the ID token is not valid: {e}"))),
            }
        };
        let mut all = payload(&id_token.to_string())?;
        if let Some(azp) = all.get("azp") {
            if azp.as_str() != Some(self.client_id.as_str()) {
                return Err(refuse("the ID token was issued to another party (azp)"));
            }
        }
        let subject = claims.subject().to_string();
        if let Some(url) = userinfo {
            let info = http
                .get_json(url.as_str(), answer.access_token().secret())
                .await
                .map_err(|e| refuse(format!("the provider's user info: {e}")))?;
            let Value::Object(info) = info else {
                return Err(refuse("the provider's user info is not an object"));
            };
            if info.get("sub").and_then(Value::as_str) != Some(subject.as_str()) {
                return Err(refuse("the user info is about someone else (sub)"));
            }
            for (k, v) in info {
                all.entry(k).or_insert(v);
            }
        }
        let email = all.get("email").and_then(Value::as_str).map(str::to_owned);
        let email_verified = matches!(all.get("email_verified"), Some(Value::Bool(true)));
        Ok(Person {
            subject,
            email,
            email_verified,
            claims: all,
        })
    }

    /// The ID token verifier over `keys`: this client's audience, the provider's issuer,
    /// public-key algorithms only, `exp` and a future `iat` with [`LEEWAY`].
    fn verifier(&self, keys: CoreJsonWebKeySet) -> CoreIdTokenVerifier<'static> {
        let issuer = self
            .issuer
            .clone()
            .unwrap_or_else(|| IssuerUrl::from_url(url_of_nothing()));
        CoreIdTokenVerifier::new_public_client(self.client_id.clone(), issuer, keys)
            .set_allowed_algs(ALGS)
            .set_time_fn(|| chrono::Utc::now() - LEEWAY)
            .set_issue_time_verifier_fn(|iat| {
                if iat > chrono::Utc::now() + LEEWAY {
                    Err("issued in the future".to_owned())
                } else {
                    Ok(())
                }
            })
    }

    /// Who signed in at an OAuth 2.0 provider, from its user-info answer(s).
    async fn oauth_person(
        &self,
        http: &Http,
        userinfo: &url::Url,
        access: &str,
    ) -> Result<Person, Refusal> {
        let fetch = |url: String| async move {
            http.get_json(&url, access)
                .await
                .map_err(|e| refuse(format!("the provider's user info: {e}")))
        };
        let Value::Object(info) = fetch(userinfo.to_string()).await? else {
            return Err(refuse("the provider's user info is not an object"));
        };
        let subject = match info.get("id") {
            Some(Value::String(s)) if !s.is_empty() => s.clone(),
            Some(Value::Number(n)) => n.to_string(),
            _ => return Err(refuse("the provider's user info has no id")),
        };
        let text = |k: &str| info.get(k).and_then(Value::as_str).map(str::to_owned);
        let (email, email_verified) = match self.shape {
            Shape::GitHub => {
                // The primary address, if it is verified (`/user` shows only a public one).
                let mut url = userinfo.clone();
                url.set_path(&format!("{}/emails", url.path().trim_end_matches('/')));
                let emails = fetch(url.to_string()).await?;
                let primary = emails.as_array().and_then(|list| {
                    list.iter().find(|e| {
                        e.get("primary") == Some(&Value::Bool(true))
                            && e.get("verified") == Some(&Value::Bool(true))
                    })
                });
                match primary.and_then(|e| e.get("email")).and_then(Value::as_str) {
                    Some(e) => (Some(e.to_owned()), true),
                    None => (None, false),
                }
            }
            Shape::Discord => (
                text("email"),
                info.get("verified") == Some(&Value::Bool(true)),
            ),
            Shape::Facebook | Shape::Oidc => (text("email"), false),
        };
        Ok(Person {
            subject,
            email,
            email_verified,
            claims: info,
        })
    }
}

/// A URL that names no issuer (a provider without one never verifies an ID token).
fn url_of_nothing() -> url::Url {
    url::Url::parse("https://invalid.invalid/").unwrap_or_else(|_| unreachable!())
}

/// The claims of a JWT whose signature was checked, as JSON.
fn payload(jwt: &str) -> Result<Map<String, Value>, Refusal> {
    use base64::Engine as _;
    let part = jwt.split('.').nth(1).unwrap_or_default();
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(part.trim_end_matches('='))
        .ok()
        .and_then(|raw| serde_json::from_slice(&raw).ok())
        .ok_or_else(|| refuse("the ID token's claims are not JSON"))
}

/// The HTTP client `openidconnect` and `oauth2` call.
fn caller(
    http: &Http,
) -> impl Fn(
    openidconnect::HttpRequest,
) -> futures_util::future::BoxFuture<
    'static,
    Result<openidconnect::HttpResponse, super::http::HttpError>,
> + Sync {
    let http = http.clone();
    move |request| {
        let http = http.clone();
        Box::pin(async move { http.call(request).await })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn role_rules_parse_and_match_strings_and_lists() {
        let rules = RoleRule::parse_all("groups:admins=ADMIN, org:acme=EDITOR@acme").unwrap();
        assert_eq!(rules.len(), 2);
        assert_eq!(rules[1].domain.as_deref(), Some("acme"));
        let claims = |v: Value| v.as_object().unwrap().clone();
        assert!(rules[0].holds(&claims(json!({"groups": ["x", "admins"]}))));
        assert!(!rules[0].holds(&claims(json!({"groups": ["administrators"]}))));
        assert!(rules[1].holds(&claims(json!({"org": "acme"}))));
        assert!(!rules[1].holds(&claims(json!({"org": ["acme-ltd"]}))));
        assert!(!rules[0].holds(&claims(json!({}))));
        for bad in [
            "groups=admin",
            "groups:=admin",
            ":x=admin",
            "groups:x=",
            "groups:x=admin@",
        ] {
            assert!(RoleRule::parse_all(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn a_provider_needs_an_issuer_or_a_preset_and_https() {
        let mut s = ProviderSettings::new("corp", "id", "secret");
        assert!(Provider::new(&s).unwrap_err().contains("_ISSUER"));
        s.issuer = Some("http://sso.example.com".into());
        assert!(Provider::new(&s).unwrap_err().contains("https"));
        s.issuer = Some("http://127.0.0.1:8080".into());
        assert!(Provider::new(&s).unwrap().is_openid());
        let google = Provider::new(&ProviderSettings::new("google", "id", "s")).unwrap();
        assert!(google.is_openid());
        let github = Provider::new(&ProviderSettings::new("github", "id", "s")).unwrap();
        assert!(!github.is_openid());
        let mut enterprise = ProviderSettings::new("github", "id", "s");
        enterprise.token_url = Some("ftp://ghe.example.com/token".into());
        assert!(Provider::new(&enterprise)
            .unwrap_err()
            .contains("_TOKEN_URL"));
    }
}
