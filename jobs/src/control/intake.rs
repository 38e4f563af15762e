//! Request intake: fields outside the reference's request class.
//!
//! The reference's request class has exactly `streamID, synopsisID, requestID, dataSetKey, param,
//! partition, noOfP, uid` ([`KNOWN_FIELDS`]). A request carrying another field is still carried out
//! (JSON readers in Kafka Streams and Flink ignore unknown fields by default, and users migrating
//! bring files written for other tools): the field is named once on stderr and every occurrence is
//! counted (`request_warnings` in the summary line and the metrics). With `--strict-requests` such a
//! request is refused instead, with an error estimation that names the field.

use std::collections::BTreeSet;

use saams::api::request::{KNOWN_FIELDS, Request, RequestError};

/// Vets parsed requests, remembering which unknown fields it has already named.
#[derive(Debug, Default)]
pub struct Intake {
    strict: bool,
    named: BTreeSet<String>,
    warnings: u64,
}

impl Intake {
    /// An intake; `strict` refuses requests with unknown fields.
    pub fn new(strict: bool) -> Intake {
        Intake { strict, ..Intake::default() }
    }

    /// Unknown fields seen so far (every occurrence counts).
    pub fn warnings(&self) -> u64 {
        self.warnings
    }

    /// Pass the requests on, lenient or strict. Returns the requests and the messages to print
    /// (one per unknown field the first time it is seen; none for fields named before).
    ///
    /// ```
    /// use saams::api::request::parse_requests;
    /// use saams_jobs::control::intake::Intake;
    /// let text = r#"{"synopsisID":2,"param":["HLL","price","NotQueryable",0.02],"partition":0,"tenant":"a"}
    /// {"synopsisID":2,"param":["HLL","volume","NotQueryable",0.02],"tenant":"b"}"#;
    /// let mut lenient = Intake::new(false);
    /// let (requests, notes) = lenient.vet(parse_requests(text));
    /// assert!(requests.iter().all(|r| r.is_ok()));
    /// assert_eq!((notes.len(), lenient.warnings()), (1, 2)); // named once, counted twice
    /// let mut strict = Intake::new(true);
    /// let (requests, _) = strict.vet(parse_requests(text));
    /// assert!(requests[0].as_ref().unwrap_err().0.contains("`tenant`"));
    /// ```
    pub fn vet(
        &mut self,
        parsed: Vec<Result<Request, RequestError>>,
    ) -> (Vec<Result<Request, RequestError>>, Vec<String>) {
        let mut notes = Vec::new();
        let vetted = parsed
            .into_iter()
            .map(|r| {
                let request = r?;
                if request.unknown_fields.is_empty() {
                    return Ok(request);
                }
                self.warnings += request.unknown_fields.len() as u64;
                if self.strict {
                    return Err(RequestError(format!(
                        "unknown request field{} {} (known: {}; refused because of --strict-requests)",
                        if request.unknown_fields.len() > 1 { "s" } else { "" },
                        request.unknown_fields.iter().map(|f| format!("`{f}`")).collect::<Vec<_>>().join(", "),
                        KNOWN_FIELDS.join(", ")
                    )));
                }
                for field in &request.unknown_fields {
                    if self.named.insert(field.clone()) {
                        notes.push(format!(
                            "warning: request field `{field}` is not part of the request format (known: {}); \
                             ignored, counted in request_warnings (--strict-requests refuses such requests)",
                            KNOWN_FIELDS.join(", ")
                        ));
                    }
                }
                Ok(request)
            })
            .collect();
        (vetted, notes)
    }
}
