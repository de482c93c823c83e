package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/snapstore/snapstore/config"
	"github.com/snapstore/snapstore/internal/boundedread"
)

// The environment variables of the client's TLS flags (flagEnv).
const (
	envCAFile     = "SNAPSTORE_CA_FILE"     // --ca-file
	envClientCert = "SNAPSTORE_CLIENT_CERT" // --client-cert
	envClientKey  = "SNAPSTORE_CLIENT_KEY"  // --client-key
)

// clientTLS is the client side of TLS for an https:// server: the
// system's roots plus what the server's certificate is checked against
// (serverTrust), and the certificate of --client-cert and --client-key
// for a server with tls.client_ca_file. It returns what the messages of
// a refused handshake say (tlsNotes).
func clientTLS(cf *commonFlags, cfg *config.Config) (*tls.Config, tlsNotes, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	pool, notes, err := serverTrust(cf, cfg)
	if err != nil {
		return nil, notes, err
	}
	tc.RootCAs = pool
	switch {
	case cf.clientCert != "" && cf.clientKey != "":
		kp, err := boundedread.KeyPair(cf.clientCert, cf.clientKey)
		if err != nil {
			return nil, notes, usageError("--client-cert, --client-key: %v", err)
		}
		tc.Certificates = []tls.Certificate{kp}
	case cf.clientCert != "" || cf.clientKey != "":
		return nil, notes, usageError("give both --client-cert and --client-key")
	case cfg != nil && cfg.TLS.Enabled() && cfg.TLS.ClientCAFile != "":
		// The server of the config asks for a client certificate. Its own
		// certificate and key are not one the client may take as its own:
		// the user gives one, and the refusal says so (apiClient.do).
		notes.clientCA = cfg.TLS.ClientCAFile
	}
	return tc, notes, nil
}

// tlsNotes is what a refused TLS handshake with the server tells the
// user beyond the flags: where the trust in the server's certificate came
// from, and the config's demand for a client certificate none was given
// for.
type tlsNotes struct {
	// trust is what beyond the system's CAs the server's certificate is
	// checked against ("the CAs of the config's tls.ca_file F"); "" for
	// nothing.
	trust string
	// unloaded says why the config's file of trust did not load; "" when
	// it did or there is none.
	unloaded string
	// clientCA is the config's tls.client_ca_file when no client
	// certificate is given; "" otherwise.
	clientCA string
}

// serverTrust is the pool the server's certificate is checked against:
// nil (the system's CAs) or the system's CAs plus, first that applies,
//
//   - the PEM bundle of --ca-file (SNAPSTORE_CA_FILE): the user's word wins;
//   - with a config that serves HTTPS (tls.cert_file), what that config
//     says the server presents: the CAs of tls.ca_file, which the nodes
//     trust for each other's API certificates, else the certificates of
//     tls.cert_file itself as trust anchors, so that a self-signed
//     certificate, or one of a private CA whose file is not in the
//     config, is trusted as the very certificate the server holds.
//
// A config file the client cannot read is no error here (the command may
// well go to the data directory): the note says why, and an untrusted
// certificate's message carries it.
func serverTrust(cf *commonFlags, cfg *config.Config) (*x509.CertPool, tlsNotes, error) {
	var notes tlsNotes
	var pemFile, key string
	switch {
	case cf.caFile != "":
		pemFile, key = cf.caFile, "--ca-file"
	case cfg == nil || !cfg.TLS.Enabled():
		return nil, notes, nil
	case cfg.TLS.CAFile != "":
		pemFile, key = cfg.TLS.CAFile, "tls.ca_file"
	default:
		pemFile, key = cfg.TLS.CertFile, "tls.cert_file"
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	pem, err := boundedread.PEMFile(pemFile)
	if err == nil && !pool.AppendCertsFromPEM(pem) {
		err = fmt.Errorf("%s holds no PEM certificate", pemFile)
	}
	switch {
	case err != nil && key == "--ca-file":
		return nil, notes, usageError("--ca-file: %v", err)
	case err != nil:
		notes.unloaded = fmt.Sprintf("the config's %s did not load (%v), so only the system's CAs are trusted", key, err)
		return nil, notes, nil
	case key == "--ca-file":
		notes.trust = "--ca-file " + pemFile
	case key == "tls.ca_file":
		notes.trust = "the CAs of the config's tls.ca_file " + pemFile
	default:
		notes.trust = "the config's tls.cert_file " + pemFile + " itself"
	}
	return pool, notes, nil
}

// localURL is the address of the server of the configuration: https when
// it serves TLS. A listen address on every interface (0.0.0.0:8443,
// [::]:8443, :8443) is asked on loopback: its server answers there, and
// a certificate names 127.0.0.1 or localhost, never 0.0.0.0.
func localURL(cfg *config.Config) *url.URL {
	u := &url.URL{Scheme: "http", Host: loopbackFor(cfg.Listen)}
	if cfg.TLS.Enabled() {
		u.Scheme = "https"
	}
	return u
}

// loopbackFor is listen with an unspecified host replaced by the
// loopback address of its family; any other address as it is.
func loopbackFor(listen string) string {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return listen
	}
	switch ip := net.ParseIP(host); {
	case host == "" || ip != nil && ip.Equal(net.IPv4zero):
		return net.JoinHostPort("127.0.0.1", port)
	case ip != nil && ip.Equal(net.IPv6unspecified):
		return net.JoinHostPort("::1", port)
	}
	return listen
}

// clientCertAlerts are the TLS alerts a server sends when it refuses the
// client's certificate, or the lack of one (RFC 8446 section 6.2).
var clientCertAlerts = map[string]bool{
	"tls: certificate required":          true,
	"tls: unknown certificate authority": true,
	"tls: bad certificate":               true,
	"tls: unsupported certificate":       true,
	"tls: revoked certificate":           true,
	"tls: expired certificate":           true,
	"tls: unknown certificate":           true,
}

// clientCertRefused is the error of err that says the server refused
// the client certificate (a TLS alert it sent); nil when there is none.
// crypto/tls reports a received alert as a net.OpError of Op "remote
// error" around an unexported alert type, so its text is what tells.
func clientCertRefused(err error) error {
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "remote error" && oe.Err != nil && clientCertAlerts[oe.Err.Error()] {
		return oe.Err
	}
	return nil
}

// probeClientCert asks the server why a request failed: a bare TLS
// handshake with the client's settings, then a read that sends nothing,
// so the server's alert arrives before any reset. Under TLS 1.3 the
// server checks the client's certificate after the client's handshake
// ended: the request crosses the server's refusal, and the reset (or
// HTTP/2's failed preface) may discard the alert. It returns the alert
// when the server refuses the client certificate, else nil.
func (c *apiClient) probeClientCert(ctx context.Context) error {
	tr, ok := c.hc.Transport.(*http.Transport)
	if !ok || tr.TLSClientConfig == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	d := tls.Dialer{Config: tr.TLSClientConfig.Clone()}
	d.Config.ServerName = c.base.Hostname()
	conn, err := d.DialContext(ctx, "tcp", c.base.Host)
	if err != nil {
		return clientCertRefused(err)
	}
	defer conn.Close()
	// A server that refuses the certificate sends its alert as soon as
	// the handshake ends; one that accepts it sends nothing at all.
	conn.SetReadDeadline(time.Now().Add(time.Second))
	_, err = conn.Read(make([]byte, 1))
	return clientCertRefused(err)
}
