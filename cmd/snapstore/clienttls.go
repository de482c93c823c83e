package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/snapstore/snapstore/config"
)

// The environment variables of the client's TLS flags (flagEnv).
const (
	envCAFile     = "SNAPSTORE_CA_FILE"     // --ca-file
	envClientCert = "SNAPSTORE_CLIENT_CERT" // --client-cert
	envClientKey  = "SNAPSTORE_CLIENT_KEY"  // --client-key
)

// clientTLS is the client side of TLS for an https:// server: the
// system's roots plus --ca-file, and the certificate of --client-cert and
// --client-key for a server with tls.client_ca_file.
func clientTLS(cf *commonFlags) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if cf.caFile != "" {
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		pem, err := os.ReadFile(cf.caFile)
		if err != nil {
			return nil, usageError("--ca-file: %v", err)
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, usageError("--ca-file: %s holds no PEM certificate", cf.caFile)
		}
		tc.RootCAs = pool
	}
	switch {
	case cf.clientCert != "" && cf.clientKey != "":
		kp, err := tls.LoadX509KeyPair(cf.clientCert, cf.clientKey)
		if err != nil {
			return nil, usageError("--client-cert, --client-key: %v", err)
		}
		tc.Certificates = []tls.Certificate{kp}
	case cf.clientCert != "" || cf.clientKey != "":
		return nil, usageError("give both --client-cert and --client-key")
	}
	return tc, nil
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
