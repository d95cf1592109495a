//! The presets: what a common provider needs beyond its client id and secret (its issuer, or
//! its OAuth 2.0 endpoints and how its user-info answer names the person), by name.

/// How a provider says who signed in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
    /// OpenID Connect: a signed ID token, and the user-info endpoint when there is one.
    Oidc,
    /// GitHub's `/user` and `/user/emails` (an address counts when it is primary and verified).
    GitHub,
    /// Discord's `/users/@me` (`verified` says whether the address is).
    Discord,
    /// Facebook's `/me` (its address is not taken as verified).
    Facebook,
}

/// A common provider's settings.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Preset {
    /// Its name in `AUTH_PROVIDERS`.
    pub(crate) name: &'static str,
    /// How it says who signed in.
    pub(crate) shape: Shape,
    /// Its OpenID issuer, when it has one for everyone (`None`: `_ISSUER` is needed).
    pub(crate) issuer: Option<&'static str>,
    /// The scopes asked for.
    pub(crate) scopes: &'static [&'static str],
    /// OAuth 2.0: the authorization, token and user-info endpoints.
    pub(crate) endpoints: Option<[&'static str; 3]>,
}

/// The scopes an OpenID provider is asked for.
const OPENID: &[&str] = &["openid", "email", "profile"];

/// Every preset.
pub(crate) const PRESETS: &[Preset] = &[
    oidc("google", Some("https://accounts.google.com"), OPENID),
    // A tenant's issuer: https://login.microsoftonline.com/<tenant id>/v2.0.
    oidc("microsoft", None, OPENID),
    // Apple gives the address only when `email` is asked, and then answers with a form post.
    oidc(
        "apple",
        Some("https://appleid.apple.com"),
        &["openid", "email"],
    ),
    oidc("gitlab", Some("https://gitlab.com"), OPENID),
    oidc("keycloak", None, OPENID),
    oidc("okta", None, OPENID),
    oidc("authentik", None, OPENID),
    Preset {
        name: "github",
        shape: Shape::GitHub,
        issuer: None,
        scopes: &["read:user", "user:email"],
        endpoints: Some([
            "https://github.com/login/oauth/authorize",
            "https://github.com/login/oauth/access_token",
            "https://api.github.com/user",
        ]),
    },
    Preset {
        name: "discord",
        shape: Shape::Discord,
        issuer: None,
        scopes: &["identify", "email"],
        endpoints: Some([
            "https://discord.com/oauth2/authorize",
            "https://discord.com/api/oauth2/token",
            "https://discord.com/api/users/@me",
        ]),
    },
    Preset {
        name: "facebook",
        shape: Shape::Facebook,
        issuer: None,
        scopes: &["email", "public_profile"],
        endpoints: Some([
            "https://www.facebook.com/v19.0/dialog/oauth",
            "https://graph.facebook.com/v19.0/oauth/access_token",
            "https://graph.facebook.com/v19.0/me?fields=id,name,email",
        ]),
    },
];

/// An OpenID preset.
const fn oidc(
    name: &'static str,
    issuer: Option<&'static str>,
    scopes: &'static [&'static str],
) -> Preset {
    Preset {
        name,
        shape: Shape::Oidc,
        issuer,
        scopes,
        endpoints: None,
    }
}

/// The preset named `name`; any other name is an OpenID provider of its own.
pub(crate) fn preset(name: &str) -> Preset {
    PRESETS
        .iter()
        .find(|p| p.name == name)
        .copied()
        .unwrap_or(Preset {
            name: "",
            shape: Shape::Oidc,
            issuer: None,
            scopes: OPENID,
            endpoints: None,
        })
}
