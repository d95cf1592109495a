//! The settings of each webhook subscription named in `WEBHOOKS`: a family of keys per
//! subscription, `WEBHOOK_<NAME>_<KEY>`, read beside the table of fixed keys.

use super::value::get;
use super::{ConfigError, Secret};

/// One webhook subscription declared in the configuration (`webhooks` feature), from the keys
/// `WEBHOOK_<NAME>_*` of each name in `WEBHOOKS` (`WEBHOOK_CRM_URL`). An application declares
/// them with `Api::webhooks_from_config` once its blueprints are mounted; see
/// [webhooks.md](https://github.com/crudforge/crudforge/blob/main/docs/webhooks.md).
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct WebhookSettings {
    /// Its name in `WEBHOOKS`, lower-case (`crm`).
    pub name: String,
    /// `_URL`: the endpoint.
    pub url: String,
    /// `_RESOURCES`: the resources' tables (space- or comma-separated).
    pub resources: Vec<String>,
    /// `_EVENTS`: the kinds of events sent (`created`, `updated`, `deleted`, `restored`);
    /// empty: all.
    pub events: Vec<String>,
    /// `_AS_USER`: the e-mail address of the user the rows are read as.
    pub as_user: Option<String>,
    /// `_SECRETS`: the signing secrets (`whsec_...`, comma-separated; two while one replaces
    /// the other), hidden by `Debug`.
    pub secrets: Vec<Secret>,
}

impl WebhookSettings {
    /// The subscription named `name`'s keys from `lookup`.
    pub(super) fn from_lookup(
        name: &str,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<WebhookSettings, ConfigError> {
        let prefix = format!("WEBHOOK_{}_", name.to_ascii_uppercase());
        let key = |k: &str| get(lookup, &format!("{prefix}{k}")).map(|v| v.trim().to_owned());
        let list = |k: &str| -> Vec<String> {
            key(k)
                .map(|s| {
                    s.split([' ', ','])
                        .filter(|s| !s.is_empty())
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default()
        };
        let url = key("URL").ok_or_else(|| ConfigError::Invalid {
            key: "WEBHOOKS",
            expected: "each subscription's WEBHOOK_<NAME>_URL",
            value: name.to_owned(),
        })?;
        Ok(WebhookSettings {
            name: name.to_owned(),
            url,
            resources: list("RESOURCES"),
            events: list("EVENTS"),
            as_user: key("AS_USER"),
            secrets: list("SECRETS").into_iter().map(Secret::new).collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::config::Config;

    #[test]
    fn each_named_subscription_reads_its_family_of_keys() {
        let env = [
            ("WEBHOOKS", "crm"),
            ("WEBHOOK_CRM_URL", "https://crm.example.com/in"),
            ("WEBHOOK_CRM_RESOURCES", "critters, habitats"),
            ("WEBHOOK_CRM_EVENTS", "created updated"),
            ("WEBHOOK_CRM_AS_USER", "ops@example.com"),
            ("WEBHOOK_CRM_SECRETS", "whsec_one,whsec_two"),
        ];
        let c = Config::from_lookup(|k| {
            env.iter()
                .find(|(key, _)| *key == k)
                .map(|(_, v)| (*v).to_owned())
        })
        .unwrap();
        let w = &c.webhooks[0];
        assert_eq!(w.url, "https://crm.example.com/in");
        assert_eq!(w.resources, ["critters", "habitats"]);
        assert_eq!(w.events, ["created", "updated"]);
        assert_eq!(w.as_user.as_deref(), Some("ops@example.com"));
        assert_eq!(w.secrets[1].expose(), b"whsec_two");
        assert!(!format!("{w:?}").contains("whsec_one"));
        let missing = Config::from_lookup(|k| (k == "WEBHOOKS").then(|| "crm".to_owned()));
        assert!(missing
            .unwrap_err()
            .to_string()
            .contains("WEBHOOK_<NAME>_URL"));
    }
}
