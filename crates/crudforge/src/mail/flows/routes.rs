//! The flows' routes and bodies: which routes the settings turn on beside a user blueprint,
//! how each is described.

use super::*;
use crate::users::Accounts;

/// A `POST` route at `path` whose JSON body goes to `handler`, with its description's
/// operation id, summary, success status and errors, tagged `tag`, open to anyone unless
/// `signed_in`.
#[allow(
    clippy::too_many_arguments,
    reason = "each route's description, named at the call"
)]
fn post<B, Fut>(
    path: &str,
    handler: fn(HttpRequest, B) -> Fut,
    id: String,
    summary: &str,
    status: u16,
    errors: &[u16],
    tag: &str,
    signed_in: bool,
) -> CustomRoute
where
    B: serde::de::DeserializeOwned + schemars::JsonSchema + 'static,
    Fut: std::future::Future<Output = Result<HttpResponse, Error>> + 'static,
{
    let route = CustomRoute::new(OperationType::Post, path, move || {
        web::post()
            .to(move |req: HttpRequest, body: crate::Json<B>| handler(req, body.into_inner()))
    })
    .operation_id(&id)
    .summary(summary)
    .body::<B>()
    .status(status)
    .errors(errors)
    .tag(tag);
    if signed_in {
        route
    } else {
        route.public()
    }
}

/// The flows' routes beside the user blueprint `face`, as the settings turn them on
/// (`links`: sign-in links).
pub(crate) fn routes(face: &Accounts, mailer: &Mailer, links: bool) -> Vec<CustomRoute> {
    let (name, tag) = (face.name, face.tag.as_str());
    let mut out = Vec::new();
    if mailer.verification != Verification::Off {
        out.push(
            post(
                "verify/",
                verify::verify,
                format!("verify{name}Email"),
                "Verify the address with the token of the mailed link",
                200,
                &[401, 422, 429],
                tag,
                false,
            )
            .responds::<Detail>(),
        );
        out.push(
            post(
                "verify/resend/",
                verify::resend,
                format!("resend{name}Verification"),
                "Mail a new verification link (the same answer for every address)",
                202,
                &[422, 429],
                tag,
                false,
            )
            .responds::<Detail>(),
        );
    }
    out.push(
        post(
            "me/email/",
            address::change,
            format!("change{name}Email"),
            "Ask to change one's address: a link to confirm it is mailed to the new one",
            202,
            &[401, 422, 429],
            tag,
            true,
        )
        .responds::<Detail>(),
    );
    out.push(
        post(
            "email/confirm/",
            address::confirm,
            format!("confirm{name}Email"),
            "Confirm a new address with the token mailed to it",
            200,
            &[401, 409, 422, 429],
            tag,
            false,
        )
        .responds::<Detail>(),
    );
    out.push(
        post(
            "email/revert/",
            address::revert,
            format!("revert{name}Email"),
            "Put the old address back with the token mailed to it; every session ends",
            200,
            &[401, 409, 422, 429],
            tag,
            false,
        )
        .responds::<Detail>(),
    );
    out.push(
        post(
            "password/forgot/",
            access::forgot,
            format!("mail{name}PasswordReset"),
            "Mail a link to set a new password (the same answer for every address)",
            202,
            &[422, 429],
            tag,
            false,
        )
        .responds::<Detail>(),
    );
    out.push(
        post(
            "password/reset/",
            access::reset,
            format!("reset{name}Password"),
            "Set a new password with the token of the mailed link; every other session ends",
            200,
            &[401, 422, 429],
            tag,
            false,
        )
        .password_members(&["new_password"])
        .responds::<LoginResponse>(),
    );
    if links {
        out.push(
            post(
                "sign_in/link/",
                access::sign_in_link,
                format!("mail{name}SignInLink"),
                "Mail a sign-in link (the same answer for every address)",
                202,
                &[422, 429],
                tag,
                false,
            )
            .responds::<Detail>(),
        );
        out.push(
            post(
                "sign_in/",
                access::sign_in,
                format!("signIn{name}WithLink"),
                "Sign in with the token of a mailed sign-in link",
                200,
                &[401, 422, 429],
                tag,
                false,
            )
            .responds::<LoginResponse>(),
        );
    }
    out
}

/// A body with the token of a mailed link.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[schemars(rename = "MailedToken")]
pub(crate) struct TokenBody {
    /// The token the link carries (`?token=`).
    pub(crate) token: String,
}

/// A body with an e-mail address.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[schemars(rename = "MailAddress")]
pub(crate) struct EmailBody {
    /// The account's address.
    pub(crate) email: String,
}

/// `me/email/`'s body.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
pub(crate) struct EmailChange {
    /// The new address.
    pub(crate) email: String,
    /// The current password.
    pub(crate) password: String,
}

/// `password/reset/`'s body.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
pub(crate) struct PasswordReset {
    /// The token the mailed link carries (`?token=`).
    pub(crate) token: String,
    /// The new password.
    pub(crate) new_password: String,
}

/// What happened, in words.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[schemars(rename = "MailFlowAnswer")]
pub(crate) struct Detail {
    /// What happened.
    pub(crate) detail: String,
}
