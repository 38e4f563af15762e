//! The page to look at (`GET /`) and the recent answers it charts (`GET /synopses/{id}/answers`).
//!
//! The page is one self-contained HTML file ([`PAGE`], `page.html` beside this file): its CSS and
//! script are inline and it loads nothing from anywhere else, so it works on a machine with no
//! network but the job's. Its script polls the job's own endpoints (`GET /synopses`, `/status`
//! and the answers of the synopses it charts) every two seconds, and its form posts
//! a request body to `POST /requests`, with an `Authorization: Bearer` header when a token is
//! typed in.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::hub::Hub;

/// The page served at `GET /`.
pub const PAGE: &str = include_str!("page.html");

/// `GET /`: the page.
pub async fn get_page() -> Response {
    let kind = HeaderValue::from_static("text/html; charset=utf-8");
    // The page is the job's own: let no other origin frame it, and let it load nothing from
    // elsewhere (inline script and style only, requests to the job itself).
    let policy = HeaderValue::from_static(
        "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; \
         img-src 'self' data:; form-action 'self'; frame-ancestors 'none'",
    );
    (StatusCode::OK, [(header::CONTENT_TYPE, kind), (header::CONTENT_SECURITY_POLICY, policy)], PAGE).into_response()
}

/// `GET /synopses/{id}/answers`: `{"id":…,"home":…,"capacity":…,"answers":[…]}`, the answer
/// lines kept for live synopsis `id` as the job wrote them, oldest first; 404 when no live
/// synopsis has that id, 400 when it is not one.
///
/// ```
/// use saams_jobs::control::hub::Hub;
/// use saams_jobs::control::page::answers_response;
/// let hub = Hub::new();
/// assert_eq!(answers_response(&hub, "7").status(), 404);
/// assert_eq!(answers_response(&hub, "x").status(), 400);
/// ```
pub fn answers_response(hub: &Hub, id: &str) -> Response {
    let error = |status: StatusCode, message: String| {
        let kind = HeaderValue::from_static("application/json");
        (status, [(header::CONTENT_TYPE, kind)], json!({ "error": message }).to_string()).into_response()
    };
    let Ok(id) = id.parse::<u32>() else {
        return error(StatusCode::BAD_REQUEST, format!("{id:?} is not a synopsis id (the `id` of GET /synopses)"));
    };
    let home = hub.synopses().iter().find(|row| row.id == id).map(|row| row.home);
    let (Some(home), Some(lines)) = (home, hub.answers().answers(id)) else {
        return error(StatusCode::NOT_FOUND, format!("no live synopsis with id {id}"));
    };
    // The lines are JSON objects already: joined, not parsed and written again.
    let mut body = format!(r#"{{"id":{id},"home":{home},"capacity":{},"answers":["#, hub.answers().capacity());
    for (i, line) in lines.iter().enumerate() {
        if i > 0 {
            body.push(',');
        }
        body.push_str(line);
    }
    body.push_str("]}");
    (StatusCode::OK, [(header::CONTENT_TYPE, HeaderValue::from_static("application/json"))], body).into_response()
}
