// Package snapstore is the "snapstore" connection type: a dataset of a
// snapstore server, this one or another, read through its HTTP API as the
// source of an adapter, so that a dataset can be copied to another place
// (an edge site's datasets gathered in a central server, a copy with longer
// retention). A read is pinned to one version of the source dataset and
// pages through its NDJSON scan in key order; values are rebuilt from
// their JSON form by the source schema's kinds, so a copy's checksum equals
// the source version's. An adapter may derive its dataset instead: some
// columns and a key range (its read options, derive.go), with a checksum
// of its own. A dataset of several tables is copied one table at a time
// (a resource naming the table, resource.go), or several of its tables at
// once at one of its versions (the point, point.go).
package snapstore

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/snapstore/snapstore/adapters/source"
	"github.com/snapstore/snapstore/internal/boundedread"
)

// connector is the "snapstore" connection type.
type connector struct{}

var optionDefs = []source.OptionDef{
	{Key: "url", Type: source.OptString, Endpoint: true, Doc: "base URL of the snapstore server (required; http:// or https://, e.g. https://edge1:8080)"},
	{Key: "token", Type: source.OptSecret, Doc: "bearer token of a reader role or above on that server: literal, env:NAME or file:/path"},
	{Key: "ca_file", Type: source.OptString, File: true, Endpoint: true, Doc: "CA certificate file (PEM) the server's certificate is checked against (default: the system's roots)"},
	{Key: "client_cert", Type: source.OptString, File: true, Endpoint: true, Doc: "client certificate file (PEM) for servers that ask for one; with client_key"},
	{Key: "client_key", Type: source.OptString, File: true, Endpoint: true, Doc: "the client certificate's private key file (PEM); with client_cert"},
	{Key: "connect_timeout", Type: source.OptDuration, Doc: "bound of dialling and the TLS handshake, and of a connection test (default 10s)"},
	{Key: "read_timeout", Type: source.OptDuration, Doc: "bound of one request and its whole answer, a page of a pull's scan included (default 5m; 0s for none): how long a run waits on a frozen server"},
	{Key: "chunk_rows", Type: source.OptInt, Min: 1, Max: 10_000, Doc: "rows per scan page of a pull (default 5000; the server's limit is 10000)"},
}

// Options implements source.Connector.
func (connector) Options() []source.OptionDef { return optionDefs }

// Validate implements source.Connector.
func (connector) Validate(o source.OptionValues) error {
	var errs []error
	u, err := url.Parse(o.String("url"))
	switch {
	case !o.Has("url"):
		errs = append(errs, &source.OptionError{Key: "url", Msg: "required"})
	case err != nil:
		errs = append(errs, &source.OptionError{Key: "url", Msg: "not a URL"})
	case u.Scheme != "http" && u.Scheme != "https":
		errs = append(errs, &source.OptionError{Key: "url", Msg: "want an http:// or https:// URL"})
	case u.Host == "":
		errs = append(errs, &source.OptionError{Key: "url", Msg: "no host"})
	case u.User != nil:
		errs = append(errs, &source.OptionError{Key: "url", Msg: "credentials go in token, not in the URL"})
	case u.RawQuery != "" || u.Fragment != "":
		errs = append(errs, &source.OptionError{Key: "url", Msg: "a base URL has no query or fragment"})
	}
	if o.Has("client_cert") != o.Has("client_key") {
		key := "client_key"
		if o.Has("client_key") {
			key = "client_cert"
		}
		errs = append(errs, &source.OptionError{Key: key, Msg: "client_cert and client_key go together"})
	}
	if err == nil && u.Scheme == "http" {
		for _, k := range []string{"ca_file", "client_cert", "client_key"} {
			if o.Has(k) {
				errs = append(errs, &source.OptionError{Key: k, Msg: "needs an https:// url"})
			}
		}
	}
	if o.Has("read_timeout") && o.Duration("read_timeout", 0) < 0 {
		errs = append(errs, &source.OptionError{Key: "read_timeout", Msg: "must not be negative"})
	}
	if o.Has("connect_timeout") && o.Duration("connect_timeout", 0) <= 0 {
		errs = append(errs, &source.OptionError{Key: "connect_timeout", Msg: "must be positive"})
	}
	return errors.Join(errs...)
}

// Open implements source.Connector: one HTTP client, whose transport pools
// the connections to the server, for every run of the data connection.
// Nothing is dialled until the first request.
func (connector) Open(_ context.Context, sc source.SourceConfig) (source.Source, error) {
	o := sc.Options
	base := strings.TrimRight(o.String("url"), "/")
	u, err := url.Parse(base)
	if err != nil {
		return nil, &source.OptionError{Key: "url", Msg: "not a URL"}
	}
	timeout := o.Duration("connect_timeout", source.DefaultConnectTimeout)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil
	tr.DialContext = (&net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}).DialContext
	tr.TLSHandshakeTimeout = timeout
	if u.Scheme == "https" {
		cfg, err := tlsConfig(o)
		if err != nil {
			return nil, err
		}
		tr.TLSClientConfig = cfg
	}
	if sc.Pool.Pooled && sc.Pool.MaxOpen > 0 {
		tr.MaxConnsPerHost = sc.Pool.MaxOpen
	}
	if sc.Pool.Pooled && sc.Pool.MaxIdle > 0 {
		tr.MaxIdleConnsPerHost = sc.Pool.MaxIdle
	}
	if sc.Pool.Pooled && sc.Pool.ConnMaxIdleTime > 0 {
		tr.IdleConnTimeout = sc.Pool.ConnMaxIdleTime
	}
	return &snapSource{
		name:      sc.Name,
		base:      base,
		token:     o.Secret("token"),
		client:    &http.Client{Transport: tr, CheckRedirect: noRedirect},
		transport: tr,
		timeout:   timeout,
		readTO:    o.Duration("read_timeout", defaultReadTimeout),
		chunkRows: int(o.Int("chunk_rows", source.DefaultChunkRows)),
		addr:      source.SourceAddr{Connection: sc.Name, Type: "snapstore", Addr: u.Host, ConnectTimeout: timeout},
	}, nil
}

// noRedirect makes the client answer a redirect rather than follow it:
// Go's client keeps the Authorization header on a redirect to the same
// host name, whatever the scheme and port, so an https:// source that
// redirects to http:// would have the token cross the network in clear.
// A snapstore server redirects no API route; get reports one as a
// setting to fix (options.url).
func noRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// defaultReadTimeout is read_timeout's default: a page of 10000 wide rows
// from a busy server comes well within it.
const defaultReadTimeout = 5 * time.Minute

// tlsConfig builds the client's TLS settings from ca_file, client_cert
// and client_key; a file that does not load is an *OptionError naming it.
// The handshake marks a request's context when the server asks for a
// client certificate (markCertificateAsked).
func tlsConfig(o source.OptionValues) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if f := o.String("ca_file"); f != "" {
		pem, err := boundedread.PEMFile(f)
		if err != nil {
			return nil, &source.OptionError{Key: "ca_file", Msg: err.Error()}
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, &source.OptionError{Key: "ca_file", Msg: "no PEM certificate in " + f}
		}
		cfg.RootCAs = pool
	}
	cert := &tls.Certificate{} // none: an empty Certificate message
	if o.Has("client_cert") {
		c, err := boundedread.KeyPair(o.String("client_cert"), o.String("client_key"))
		if err != nil {
			return nil, &source.OptionError{Key: "client_cert", Msg: err.Error()}
		}
		cert = &c
	}
	cfg.GetClientCertificate = func(cri *tls.CertificateRequestInfo) (*tls.Certificate, error) {
		markCertificateAsked(cri.Context())
		return cert, nil
	}
	return cfg, nil
}

// snapSource is an open "snapstore" data connection: the server's base URL
// and one HTTP client.
type snapSource struct {
	name      string
	base      string
	token     source.Secret
	client    *http.Client
	transport *http.Transport
	timeout   time.Duration
	readTO    time.Duration // read_timeout; 0 for none
	chunkRows int
	addr      source.SourceAddr
}

// Close implements source.Source.
func (s *snapSource) Close() error {
	s.transport.CloseIdleConnections()
	return nil
}

// CloseIdle implements source.IdleCloser.
func (s *snapSource) CloseIdle() { s.transport.CloseIdleConnections() }

// Test implements source.Tester: GET /v1/datasets answers 200 when the
// server is up and the token may read.
func (s *snapSource) Test(ctx context.Context) source.TestResult {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	var list datasetList
	if _, err := s.getJSON(ctx, "/v1/datasets", nil, &list); err != nil {
		return source.FailedTest(source.WithBound(err, s.timeout, "connect_timeout"), time.Since(start))
	}
	res := source.TestResult{OK: true, ServerVersion: "snapstore", Latency: time.Since(start)}
	// The build version, best effort: /healthz needs no token.
	var health struct {
		Version string `json:"version"`
	}
	if _, err := s.getJSON(ctx, "/healthz", nil, &health); err == nil && health.Version != "" {
		res.ServerVersion = "snapstore " + health.Version
	}
	return res
}

// Resources implements source.ResourceLister: the datasets the token may
// read, with the current version's row count and key (no estimate for a
// dataset with nothing committed yet); and for a dataset of several
// tables each of its tables at the current version, the dataset in the
// place of a schema (Schema the dataset, Name the table: resource
// "dataset.table"), which an adapter of several tables selects as it
// selects the tables of a database's schemas.
func (s *snapSource) Resources(ctx context.Context) ([]source.Resource, error) {
	var list datasetList
	if _, err := s.getJSON(ctx, "/v1/datasets", nil, &list); err != nil {
		return nil, fmt.Errorf("listing the datasets of data connection %q: %w", s.name, err)
	}
	out := make([]source.Resource, 0, len(list.Datasets))
	for _, d := range list.Datasets {
		r := source.Resource{Name: d.Name, Type: resourceType, EstimatedRows: source.UnknownRows}
		if d.CurrentInfo != nil {
			r.EstimatedRows = d.CurrentInfo.Stats.Rows
			r.Key = d.CurrentInfo.Schema.Key
		}
		out = append(out, r)
		if d.CurrentInfo == nil {
			continue
		}
		for _, ti := range d.CurrentInfo.Tables {
			out = append(out, source.Resource{Schema: d.Name, Name: ti.Name, Type: tableType, EstimatedRows: ti.Stats.Rows, Key: ti.Schema.Key})
		}
	}
	return out, nil
}

// resourceType is the Resource.Type of a dataset, tableType of a table
// of a dataset of several tables.
const (
	resourceType = "dataset"
	tableType    = "table"
)

func init() { source.Register("snapstore", connector{}) }
