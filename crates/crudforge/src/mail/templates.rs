//! Mail templates: per flow a subject, a text and an HTML part, embedded in English and
//! replaced, file by file, from `MAIL_TEMPLATES_DIR/<locale>/<flow>.{subject,txt,html}`;
//! rendered with `minijinja`, the HTML part auto-escaped.

use crate::error::Error;
use minijinja::Environment;
use std::path::Path;

/// The locale every flow has templates in, and the one a missing locale falls back to.
pub(crate) const DEFAULT_LOCALE: &str = "en";

/// The parts of a flow's mail, by file extension.
const PARTS: [&str; 3] = ["subject", "txt", "html"];

/// One embedded English template: (`en/<flow>.<part>`, its source).
macro_rules! embedded {
    ($flow:literal, $part:literal) => {
        (
            concat!("en/", $flow, ".", $part),
            include_str!(concat!("templates/en/", $flow, ".", $part)),
        )
    };
}

/// The embedded templates: (name, source).
const EMBEDDED: &[(&str, &str)] = &[
    embedded!("recovery", "subject"),
    embedded!("recovery", "txt"),
    embedded!("recovery", "html"),
    embedded!("verify", "subject"),
    embedded!("verify", "txt"),
    embedded!("verify", "html"),
    embedded!("email_change", "subject"),
    embedded!("email_change", "txt"),
    embedded!("email_change", "html"),
    embedded!("email_revert", "subject"),
    embedded!("email_revert", "txt"),
    embedded!("email_revert", "html"),
    embedded!("sign_in", "subject"),
    embedded!("sign_in", "txt"),
    embedded!("sign_in", "html"),
    embedded!("password_reset", "subject"),
    embedded!("password_reset", "txt"),
    embedded!("password_reset", "html"),
];

/// A rendered mail: subject, text, HTML (when the flow has one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rendered {
    pub(crate) subject: String,
    pub(crate) text: String,
    pub(crate) html: Option<String>,
}

/// The templates of an API's mail.
pub(crate) struct Templates {
    env: Environment<'static>,
}

impl Templates {
    /// The embedded templates, with those of `dir` (if given) in their place or beside them.
    ///
    /// # Errors
    ///
    /// A template of `dir` cannot be read or does not parse: its name and the reason.
    pub(crate) fn load(dir: Option<&Path>) -> Result<Templates, String> {
        let mut env = Environment::new();
        // A name ending in `.html` is HTML-escaped (minijinja's default rule); the others are not.
        for (name, source) in EMBEDDED {
            env.add_template(name, source)
                .map_err(|e| format!("the embedded template {name}: {e}"))?;
        }
        if let Some(dir) = dir {
            let locales = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
            for locale in locales.flatten() {
                let Some(locale_name) = locale.file_name().to_str().map(str::to_owned) else {
                    continue;
                };
                if !locale.path().is_dir() {
                    continue;
                }
                let files = std::fs::read_dir(locale.path())
                    .map_err(|e| format!("{}: {e}", locale.path().display()))?;
                for file in files.flatten() {
                    let path = file.path();
                    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
                        continue;
                    };
                    if !PARTS.iter().any(|p| name.ends_with(&format!(".{p}"))) {
                        continue;
                    }
                    let source = std::fs::read_to_string(&path)
                        .map_err(|e| format!("{}: {e}", path.display()))?;
                    env.add_template_owned(format!("{locale_name}/{name}"), source)
                        .map_err(|e| format!("{}: {e}", path.display()))?;
                }
            }
        }
        Ok(Templates { env })
    }

    /// Renders `flow` in `locale` (each part falling back to the default locale's) with
    /// `values`. The subject is one line.
    ///
    /// # Errors
    ///
    /// The flow has no subject or text, a template fails to render, or the subject holds a
    /// line break (500).
    pub(crate) fn render(
        &self,
        flow: &str,
        locale: Option<&str>,
        values: &serde_json::Value,
    ) -> Result<Rendered, Error> {
        let ctx = minijinja::Value::from(minijinja::value::Serde(values));
        let part = |ext: &str| -> Result<Option<String>, Error> {
            let wanted = locale.map(|l| format!("{l}/{flow}.{ext}"));
            let fallback = format!("{DEFAULT_LOCALE}/{flow}.{ext}");
            let template = wanted
                .as_deref()
                .and_then(|w| self.env.get_template(w).ok())
                .or_else(|| self.env.get_template(&fallback).ok());
            template
                .map(|t| t.render(&ctx))
                .transpose()
                .map_err(|e| Error::Internal(format!("the mail template {flow}.{ext}: {e}")))
        };
        let missing = |ext: &str| Error::Internal(format!("no mail template {flow}.{ext}"));
        let subject = part("subject")?.ok_or_else(|| missing("subject"))?;
        let subject = subject.trim().to_owned();
        if subject.contains(['\r', '\n']) {
            return Err(Error::Internal(format!(
                "the mail template {flow}.subject renders more than one line"
            )));
        }
        Ok(Rendered {
            subject,
            text: part("txt")?.ok_or_else(|| missing("txt"))?,
            html: part("html")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_html_part_is_escaped_and_the_text_part_is_not() {
        let t = Templates::load(None).unwrap_or_else(|e| panic!("{e}"));
        let values = serde_json::json!({
            "email": "<b>eve</b>@example.com",
            "token": "tok",
            "link": "https://app.example.com/reset-password?token=tok&x=1",
            "minutes": 120,
        });
        let r = t
            .render("recovery", Some("fr"), &values)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r.subject, "Reset your password");
        assert!(r.text.contains("<b>eve</b>@example.com"), "{}", r.text);
        assert!(r.text.contains("token=tok&x=1"), "{}", r.text);
        let html = r.html.unwrap_or_default();
        assert!(
            html.contains("&lt;b&gt;eve&lt;&#x2f;b&gt;@example.com"),
            "{html}"
        );
        assert!(!html.contains("<b>eve"), "{html}");
    }

    #[test]
    fn files_replace_the_embedded_templates_per_locale() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let fr = dir.path().join("fr");
        std::fs::create_dir(&fr).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(fr.join("recovery.subject"), "Votre mot de passe")
            .unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(fr.join("recovery.txt"), "Jeton : {{ token }}")
            .unwrap_or_else(|e| panic!("{e}"));
        let t = Templates::load(Some(dir.path())).unwrap_or_else(|e| panic!("{e}"));
        let values = serde_json::json!({"token": "abc", "email": "a@b.c", "minutes": 1});
        let fr = t
            .render("recovery", Some("fr"), &values)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(fr.subject, "Votre mot de passe");
        assert_eq!(fr.text, "Jeton : abc");
        assert!(
            fr.html.is_some_and(|h| h.contains("abc")),
            "the HTML part falls back"
        );
        let en = t
            .render("recovery", None, &values)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(en.subject, "Reset your password");
        std::fs::write(dir.path().join("fr").join("broken.txt"), "{% if %}")
            .unwrap_or_else(|e| panic!("{e}"));
        let err = Templates::load(Some(dir.path())).err().unwrap_or_default();
        assert!(err.contains("broken.txt"), "{err}");
    }

    #[test]
    fn a_subject_that_renders_two_lines_is_refused() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let en = dir.path().join("en");
        std::fs::create_dir(&en).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(en.join("recovery.subject"), "Hi {{ email }}")
            .unwrap_or_else(|e| panic!("{e}"));
        let t = Templates::load(Some(dir.path())).unwrap_or_else(|e| panic!("{e}"));
        let values = serde_json::json!({"email": "a@b.c\r\nBcc: eve@example.com"});
        assert!(t.render("recovery", None, &values).is_err());
    }
}
