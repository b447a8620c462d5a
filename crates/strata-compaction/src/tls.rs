//! Optional TLS (rustls): the control plane serves with a certificate and key (PEM); workers
//! and instances trust a CA certificate (PEM) and connect with `https://` URLs.

use std::path::Path;

use tonic::transport::{Certificate, ClientTlsConfig, Identity, ServerTlsConfig};

fn read(path: &Path) -> std::io::Result<Vec<u8>> {
    std::fs::read(path)
        .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", path.display())))
}

/// The server side: a certificate chain and its private key.
pub fn server(cert: &Path, key: &Path) -> std::io::Result<ServerTlsConfig> {
    Ok(ServerTlsConfig::new().identity(Identity::from_pem(read(cert)?, read(key)?)))
}

/// The client side: the CA that signed the server's certificate, and the name to check it
/// against (default: the URL's host).
pub fn client(ca: &Path, domain: Option<&str>) -> std::io::Result<ClientTlsConfig> {
    let mut c = ClientTlsConfig::new().ca_certificate(Certificate::from_pem(read(ca)?));
    if let Some(d) = domain {
        c = c.domain_name(d);
    }
    Ok(c)
}
