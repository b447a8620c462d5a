//! Optional TLS (rustls): the control plane serves with a certificate and key (PEM); workers
//! and instances trust a CA certificate (PEM) and connect with `https://` URLs.

use std::path::Path;

use tonic::transport::{Certificate, ClientTlsConfig, Identity, ServerTlsConfig};

/// Selects rustls's process-wide crypto provider (ring) unless one is installed already:
/// with several rustls backends compiled in (object_store brings another), rustls cannot
/// choose by itself and the first handshake would panic.
fn ensure_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

fn read(path: &Path) -> std::io::Result<Vec<u8>> {
    std::fs::read(path)
        .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", path.display())))
}

/// The server side: a certificate chain and its private key.
pub fn server(cert: &Path, key: &Path) -> std::io::Result<ServerTlsConfig> {
    ensure_provider();
    Ok(ServerTlsConfig::new().identity(Identity::from_pem(read(cert)?, read(key)?)))
}

/// The client side: the CA that signed the server's certificate, and the name to check it
/// against (default: the URL's host).
pub fn client(ca: &Path, domain: Option<&str>) -> std::io::Result<ClientTlsConfig> {
    ensure_provider();
    let mut c = ClientTlsConfig::new().ca_certificate(Certificate::from_pem(read(ca)?));
    if let Some(d) = domain {
        c = c.domain_name(d);
    }
    Ok(c)
}
