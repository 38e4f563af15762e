//! HTTPS for `--http` (`--tls-cert FILE --tls-key FILE`, PEM): rustls on ring, and an axum
//! [`Listener`] that hands the server connections whose TLS handshake is done.
//!
//! Handshakes run in tasks of their own, each bounded by [`HANDSHAKE_TIMEOUT`], so a client that
//! connects and says nothing (or speaks plain HTTP to the TLS port) holds up no other client; a
//! failed handshake closes that connection and nothing else.

use std::io;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use axum::serve::Listener;
use rustls::ServerConfig;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

/// How long a client may take to finish its TLS handshake.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Connections handshaken but not yet taken by the server.
const READY_CONNECTIONS: usize = 64;

/// The server's TLS configuration from a PEM certificate chain and a PEM private key (PKCS#8,
/// PKCS#1 or SEC1).
///
/// # Errors
/// An unreadable file, a file with no certificate or key, or a key that does not fit the
/// certificate.
pub fn server_config(cert: &Path, key: &Path) -> Result<Arc<ServerConfig>, String> {
    let read = |p: &Path, flag: &str| std::fs::read(p).map_err(|e| format!("{flag} {}: {e}", p.display()));
    let cert_pem = read(cert, "--tls-cert")?;
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&cert_pem)
        .collect::<Result<_, _>>()
        .map_err(|e| format!("--tls-cert {}: not a PEM certificate chain: {e}", cert.display()))?;
    if chain.is_empty() {
        return Err(format!("--tls-cert {}: no CERTIFICATE in the file", cert.display()));
    }
    let key_der = PrivateKeyDer::from_pem_slice(&read(key, "--tls-key")?)
        .map_err(|e| format!("--tls-key {}: no PEM private key: {e}", key.display()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .with_no_client_auth()
        .with_single_cert(chain, key_der)
        .map_err(|e| format!("--tls-cert/--tls-key: {e}"))?;
    Ok(Arc::new(config))
}

/// A listener whose connections have finished their TLS handshake.
pub struct TlsListener {
    ready: mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    local: SocketAddr,
}

impl TlsListener {
    /// Accept on `tcp` and handshake with `config`; must be called inside a tokio runtime (the
    /// accepting task is spawned on it and ends with it).
    ///
    /// # Errors
    /// When the listener's address cannot be read.
    pub fn new(tcp: TcpListener, config: Arc<ServerConfig>) -> io::Result<TlsListener> {
        let local = tcp.local_addr()?;
        let (tx, ready) = mpsc::channel(READY_CONNECTIONS);
        let acceptor = TlsAcceptor::from(config);
        tokio::spawn(async move {
            loop {
                let (stream, peer) = match tcp.accept().await {
                    Ok(c) => c,
                    // Out of descriptors and the like: wait a little, as axum's own listener does.
                    Err(_) => {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                if tx.is_closed() {
                    return;
                }
                let (acceptor, tx) = (acceptor.clone(), tx.clone());
                tokio::spawn(async move {
                    if let Ok(Ok(tls)) = tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                        let _ = tx.send((tls, peer)).await;
                    }
                });
            }
        });
        Ok(TlsListener { ready, local })
    }
}

impl Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(connection) => connection,
            // The accepting task never ends while this listener lives (it holds a sender), so
            // this is not reached; wait rather than spin if it ever is.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        Ok(self.local)
    }
}
