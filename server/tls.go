package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/snapstore/snapstore/internal/boundedread"
)

// TLS serves the API over HTTPS with certificates read from files and
// re-read when they change, with no restart and no dropped connection:
// every handshake takes the certificate (and client CA pool) current at
// that moment through tls.Config.GetConfigForClient, so connections open
// before a change keep the session they negotiated and new ones get the
// new certificate. A file that no longer loads (a half-written PEM, a key
// that does not match) keeps the certificate in use and logs an error.

// DefaultTLSPollInterval is how often the certificate files are checked
// for a change (modification time or size) when TLSOptions leaves it 0.
const DefaultTLSPollInterval = 5 * time.Second

// TLSOptions names the files of HTTPS.
type TLSOptions struct {
	// CertFile is the PEM certificate; a chain of intermediates may follow
	// the leaf. Required.
	CertFile string
	// KeyFile is the PEM private key of the leaf. Required.
	KeyFile string
	// ClientCAFile, if set, is a PEM bundle of CAs: clients must present a
	// certificate chaining to one of them (mutual TLS).
	ClientCAFile string
	// MinVersion is tls.VersionTLS12 or tls.VersionTLS13; 0 means 1.3.
	MinVersion uint16
	// PollInterval is how often the files are checked for a change; 0
	// means DefaultTLSPollInterval, negative never (Reload only).
	PollInterval time.Duration
	// Logger receives reloads and their errors; nil discards.
	Logger *slog.Logger
	// Registerer registers the certificate's expiry gauge; nil registers
	// none.
	Registerer prometheus.Registerer
}

// ParseTLSVersion parses "1.2" or "1.3"; "" is 1.3. Older versions are
// refused: TLS 1.0 and 1.1 are deprecated (RFC 8996).
func ParseTLSVersion(s string) (uint16, error) {
	switch s {
	case "", "1.3":
		return tls.VersionTLS13, nil
	case "1.2":
		return tls.VersionTLS12, nil
	}
	return 0, fmt.Errorf("unsupported TLS version %q (want 1.2 or 1.3; older ones are deprecated, RFC 8996)", s)
}

// CertReloader holds the current certificate of a TLS listener and
// replaces it when its files change. It is safe for concurrent use.
type CertReloader struct {
	opts TLSOptions
	log  *slog.Logger
	cur  atomic.Pointer[tlsState]

	// mu serialises reloads; stamps is the state of the files at the
	// last reload attempt, good or bad, so that a bad file is reported
	// once rather than at every poll.
	mu     sync.Mutex
	stamps []fileStamp
}

// tlsState is one loaded generation of the files.
type tlsState struct {
	cert   *tls.Certificate
	config *tls.Config
}

// fileStamp is what a poll compares: a file's modification time and size.
type fileStamp struct {
	mod  time.Time
	size int64
}

// OpenTLS loads the files of opts; an error names the file that failed.
func OpenTLS(opts TLSOptions) (*CertReloader, error) {
	if opts.CertFile == "" || opts.KeyFile == "" {
		return nil, errors.New("server: tls needs both a certificate file and a key file")
	}
	if opts.MinVersion == 0 {
		opts.MinVersion = tls.VersionTLS13
	}
	if opts.MinVersion < tls.VersionTLS12 {
		return nil, fmt.Errorf("server: TLS minimum version %#x is below 1.2", opts.MinVersion)
	}
	if opts.PollInterval == 0 {
		opts.PollInterval = DefaultTLSPollInterval
	}
	r := &CertReloader{opts: opts, log: opts.Logger}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	r.stamps = r.stat()
	st, err := r.load()
	if err != nil {
		return nil, err
	}
	r.cur.Store(st)
	if opts.Registerer != nil {
		err := opts.Registerer.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "snapstore_server_tls_certificate_expiry_timestamp_seconds",
			Help: "When the certificate served now expires, in seconds since the Unix epoch.",
		}, func() float64 { return float64(r.Leaf().NotAfter.Unix()) }))
		if err != nil {
			return nil, fmt.Errorf("server: registering the TLS metrics: %w", err)
		}
	}
	return r, nil
}

// files lists the watched files.
func (r *CertReloader) files() []string {
	fs := []string{r.opts.CertFile, r.opts.KeyFile}
	if r.opts.ClientCAFile != "" {
		fs = append(fs, r.opts.ClientCAFile)
	}
	return fs
}

func (r *CertReloader) stat() []fileStamp {
	var out []fileStamp
	for _, f := range r.files() {
		var s fileStamp
		if fi, err := os.Stat(f); err == nil {
			s = fileStamp{mod: fi.ModTime(), size: fi.Size()}
		}
		out = append(out, s)
	}
	return out
}

// load reads the files into a new state.
func (r *CertReloader) load() (*tlsState, error) {
	cert, err := boundedread.KeyPair(r.opts.CertFile, r.opts.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("server: loading tls.cert_file %s and tls.key_file %s: %w", r.opts.CertFile, r.opts.KeyFile, err)
	}
	conf := &tls.Config{
		MinVersion:   r.opts.MinVersion,
		Certificates: []tls.Certificate{cert},
		NextProtos:   []string{"h2", "http/1.1"},
	}
	if r.opts.ClientCAFile != "" {
		pem, err := boundedread.PEMFile(r.opts.ClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("server: reading tls.client_ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("server: tls.client_ca_file %s holds no PEM certificate", r.opts.ClientCAFile)
		}
		conf.ClientCAs = pool
		conf.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return &tlsState{cert: &cert, config: conf}, nil
}

// Config returns the tls.Config of the listener: each handshake takes
// the current certificate.
func (r *CertReloader) Config() *tls.Config {
	return &tls.Config{
		MinVersion: r.opts.MinVersion,
		NextProtos: []string{"h2", "http/1.1"},
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			return r.cur.Load().config, nil
		},
	}
}

// ClientCertificate returns the current certificate, for a client that
// presents this node's certificate to another node
// (tls.Config.GetClientCertificate).
func (r *CertReloader) ClientCertificate(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	return r.cur.Load().cert, nil
}

// Leaf returns the current leaf certificate.
func (r *CertReloader) Leaf() *x509.Certificate {
	return r.cur.Load().cert.Leaf
}

// Reload re-reads the files now (SIGHUP). On error the current
// certificate stays in use.
func (r *CertReloader) Reload() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stamps = r.stat()
	return r.reloadLocked()
}

func (r *CertReloader) reloadLocked() error {
	st, err := r.load()
	if err != nil {
		r.log.Error("tls certificate not reloaded; the previous one stays in use", "err", err)
		return err
	}
	r.cur.Store(st)
	r.log.Info("tls certificate reloaded", "subject", st.cert.Leaf.Subject.String(), "not_after", st.cert.Leaf.NotAfter)
	return nil
}

// poll reloads when a file's modification time or size changed since the
// last attempt.
func (r *CertReloader) poll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.stat()
	changed := false
	for i := range now {
		if !now[i].mod.Equal(r.stamps[i].mod) || now[i].size != r.stamps[i].size {
			changed = true
		}
	}
	if !changed {
		return
	}
	r.stamps = now
	_ = r.reloadLocked()
}

// Run polls the files every PollInterval until ctx is done.
func (r *CertReloader) Run(ctx context.Context) {
	if r.opts.PollInterval < 0 {
		return
	}
	t := time.NewTicker(r.opts.PollInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			r.poll()
		}
	}
}

// ClientConfig returns the client side of TLS for calls from this node to
// the APIs of the other nodes of its cluster, which serve the same way:
// it trusts the system's roots and the CAs in caFiles (PEM bundles; empty
// names are skipped), and presents this node's current certificate when
// a node asks for one (tls.client_ca_file).
func (r *CertReloader) ClientConfig(caFiles ...string) (*tls.Config, error) {
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	for _, f := range caFiles {
		if f == "" {
			continue
		}
		pem, err := boundedread.PEMFile(f)
		if err != nil {
			return nil, fmt.Errorf("server: reading the CA file %s: %w", f, err)
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("server: the CA file %s holds no PEM certificate", f)
		}
	}
	return &tls.Config{
		MinVersion:           r.opts.MinVersion,
		RootCAs:              pool,
		GetClientCertificate: r.ClientCertificate,
	}, nil
}
