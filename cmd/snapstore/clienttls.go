package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"syscall"
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
// it serves TLS.
func localURL(cfg *config.Config) *url.URL {
	if cfg.TLS.Enabled() {
		return &url.URL{Scheme: "https", Host: cfg.Listen}
	}
	return &url.URL{Scheme: "http", Host: cfg.Listen}
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

// connectionDropped reports whether err is a connection the peer reset
// or closed under a write: what a client whose request crossed the
// server's refusal of its certificate sees under TLS 1.3, where the
// server checks the certificate after the client's handshake ended, and
// its alert may be lost to the reset.
func connectionDropped(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, io.EOF)
}

// probeClientCert asks the server why it dropped the connection: a bare
// TLS handshake with the client's settings, then a read that sends
// nothing, so the server's alert arrives before any reset. It returns the
// alert when it refuses the client certificate, else nil.
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
	deadline, _ := ctx.Deadline()
	conn.SetReadDeadline(deadline)
	_, err = conn.Read(make([]byte, 1))
	return clientCertRefused(err)
}
