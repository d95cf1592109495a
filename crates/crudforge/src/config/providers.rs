//! The settings of each sign-in provider named in `AUTH_PROVIDERS`: a family of keys per
//! provider, `AUTH_PROVIDER_<NAME>_<KEY>`, read beside the table of fixed keys.

use super::value::get;
use super::{ConfigError, Secret};

/// One sign-in provider's settings (`providers` feature), from the keys
/// `AUTH_PROVIDER_<NAME>_*` of each name in `AUTH_PROVIDERS` (`AUTH_PROVIDER_GOOGLE_CLIENT_ID`),
/// or built in code with [`ProviderSettings::new`] and pushed to [`Config::providers`](super::Config::providers).
/// Which keys a provider needs depends on it: see [auth.md](https://github.com/crudforge/crudforge/blob/main/docs/auth.md#sign-in-providers).
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct ProviderSettings {
    /// Its name in `AUTH_PROVIDERS` and in its routes (`google`): a preset's name takes the
    /// preset, any other name is an OpenID provider found from `issuer`.
    pub name: String,
    /// `_CLIENT_ID`: the client id the provider gave the application.
    pub client_id: String,
    /// `_CLIENT_SECRET`: its secret (hidden by `Debug`).
    pub client_secret: Option<Secret>,
    /// `_ISSUER`: the OpenID issuer (`https://accounts.example.com/realms/main`), whose
    /// `/.well-known/openid-configuration` describes it. A preset brings its own where it has
    /// one; Keycloak, Okta, Authentik and Microsoft (a tenant's) need it.
    pub issuer: Option<String>,
    /// `_SCOPES`: scopes asked for beyond the preset's (space- or comma-separated).
    pub scopes: Vec<String>,
    /// `_ROLES`: roles given by claims, `claim:value=role` or `claim:value=role@domain`,
    /// comma-separated (`groups:admins=admin`); re-read at every sign-in.
    pub roles: Option<String>,
    /// `_AUTH_URL`, `_TOKEN_URL`, `_USERINFO_URL`: the endpoints of an OAuth 2.0 preset
    /// (GitHub, Discord, Facebook) in place of the public ones (a GitHub Enterprise server).
    pub auth_url: Option<String>,
    /// See [`auth_url`](ProviderSettings::auth_url).
    pub token_url: Option<String>,
    /// See [`auth_url`](ProviderSettings::auth_url).
    pub userinfo_url: Option<String>,
}

impl ProviderSettings {
    /// A provider's settings with its name, client id and secret; the rest unset.
    pub fn new(name: &str, client_id: &str, client_secret: &str) -> ProviderSettings {
        ProviderSettings {
            name: name.to_owned(),
            client_id: client_id.to_owned(),
            client_secret: (!client_secret.is_empty()).then(|| Secret::new(client_secret)),
            ..ProviderSettings::default()
        }
    }

    /// The provider named `name`'s keys from `lookup`.
    pub(super) fn from_lookup(
        name: &str,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<ProviderSettings, ConfigError> {
        let prefix = format!("AUTH_PROVIDER_{}_", name.to_ascii_uppercase());
        let key = |k: &str| get(lookup, &format!("{prefix}{k}")).map(|v| v.trim().to_owned());
        let client_id = key("CLIENT_ID").ok_or_else(|| ConfigError::Invalid {
            key: "AUTH_PROVIDERS",
            expected: "each provider's AUTH_PROVIDER_<NAME>_CLIENT_ID",
            value: name.to_owned(),
        })?;
        Ok(ProviderSettings {
            name: name.to_owned(),
            client_id,
            client_secret: key("CLIENT_SECRET").map(Secret::new),
            issuer: key("ISSUER"),
            scopes: key("SCOPES")
                .map(|s| {
                    s.split([' ', ','])
                        .filter(|s| !s.is_empty())
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default(),
            roles: key("ROLES"),
            auth_url: key("AUTH_URL"),
            token_url: key("TOKEN_URL"),
            userinfo_url: key("USERINFO_URL"),
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::config::Config;

    #[test]
    fn each_named_provider_reads_its_family_of_keys() {
        let env = [
            ("AUTH_PROVIDERS", "google, corp"),
            ("AUTH_PROVIDER_GOOGLE_CLIENT_ID", "g-id"),
            ("AUTH_PROVIDER_GOOGLE_CLIENT_SECRET", "g-secret"),
            ("AUTH_PROVIDER_CORP_CLIENT_ID", "c-id"),
            ("AUTH_PROVIDER_CORP_ISSUER", "https://sso.example.com"),
            ("AUTH_PROVIDER_CORP_SCOPES", "groups, offline_access"),
            ("AUTH_PROVIDER_CORP_ROLES", "groups:a=ADMIN"),
        ];
        let c = Config::from_lookup(|k| {
            env.iter()
                .find(|(key, _)| *key == k)
                .map(|(_, v)| (*v).to_owned())
        })
        .unwrap();
        assert_eq!(c.providers.len(), 2);
        assert_eq!(c.providers[0].client_id, "g-id");
        assert_eq!(
            c.providers[0].client_secret.as_ref().unwrap().expose(),
            b"g-secret"
        );
        assert!(!format!("{:?}", c.providers[0]).contains("g-secret"));
        assert_eq!(
            c.providers[1].issuer.as_deref(),
            Some("https://sso.example.com")
        );
        assert_eq!(c.providers[1].scopes, ["groups", "offline_access"]);
        assert_eq!(c.providers[1].roles.as_deref(), Some("groups:a=ADMIN"));
        // A provider without its client id, and a malformed name, stop start-up.
        let missing = Config::from_lookup(|k| (k == "AUTH_PROVIDERS").then(|| "corp".to_owned()));
        assert!(missing.unwrap_err().to_string().contains("CLIENT_ID"));
        let bad = Config::from_lookup(|k| (k == "AUTH_PROVIDERS").then(|| "Corp!".to_owned()));
        assert!(bad.is_err());
    }
}
