//! The shared token every RPC carries (`authorization: Bearer <token>`): checked by the
//! server in constant time, attached by clients. A call without it, or with another, is
//! rejected with `UNAUTHENTICATED` before it reaches the control plane.

use tonic::metadata::MetadataValue;
use tonic::{Request, Status};

/// The metadata key.
pub const HEADER: &str = "authorization";

/// Compares without an early exit, so timing does not reveal a matching prefix.
fn same(a: &[u8], b: &[u8]) -> bool {
    let mut diff = (a.len() != b.len()) as u8;
    for i in 0..a.len().max(b.len()) {
        diff |= a.get(i).copied().unwrap_or(0) ^ b.get(i).copied().unwrap_or(0);
    }
    diff == 0
}

/// Whether `req` carries `token`.
pub fn check<T>(req: &Request<T>, token: &str) -> Result<(), Status> {
    let want = format!("Bearer {token}");
    match req.metadata().get(HEADER) {
        Some(v) if same(v.as_bytes(), want.as_bytes()) => Ok(()),
        Some(_) => Err(Status::unauthenticated("wrong compaction-service token")),
        None => Err(Status::unauthenticated("missing compaction-service token")),
    }
}

/// Attaches `token` to `req`.
pub fn attach<T>(req: &mut Request<T>, token: &str) -> Result<(), Status> {
    let v: MetadataValue<_> = format!("Bearer {token}")
        .parse()
        .map_err(|_| Status::invalid_argument("the token must be printable ASCII"))?;
    req.metadata_mut().insert(HEADER, v);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens() {
        let mut r = Request::new(());
        assert!(check(&r, "s3cret").is_err());
        attach(&mut r, "s3cret").unwrap();
        assert!(check(&r, "s3cret").is_ok());
        assert!(check(&r, "s3cre").is_err());
        assert!(check(&r, "s3cret!").is_err());
        assert!(check(&r, "other!").is_err());
        assert!(attach(&mut r, "bad\ntoken").is_err());
    }
}
