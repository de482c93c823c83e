package snapstore

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/snapstore/snapstore/adapters/source"
	"github.com/snapstore/snapstore/internal/boundedread"
	"github.com/snapstore/snapstore/snapshot"
)

// datasetList is the answer of GET /v1/datasets.
type datasetList struct {
	Datasets []datasetAnswer `json:"datasets"`
}

// datasetAnswer is the part of a dataset a copy reads in the answer of
// GET /v1/datasets/{dataset}: its identity (name and creation time), the
// current version and, when a version was selected, version_read.
type datasetAnswer struct {
	Name        string                `json:"name"`
	CreatedAt   time.Time             `json:"created_at"`
	CurrentInfo *snapshot.VersionInfo `json:"current,omitempty"`
	VersionRead *snapshot.VersionInfo `json:"version_read,omitempty"`
}

// problem is the server's RFC 9457 error body.
type problem struct {
	Status int    `json:"status"`
	Code   string `json:"code"`
	Detail string `json:"detail"`
}

// statusError is an answer other than 200: the status and the problem's
// code and detail, which name no secret of this side.
type statusError struct {
	problem
}

func (e *statusError) Error() string {
	msg := fmt.Sprintf("HTTP %d", e.Status)
	if e.Code != "" {
		msg += " " + e.Code
	}
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg
}

// get sends GET base+path?query with the token and accept; a transport
// failure is a *source.SourceError, an answer other than 200 an error
// classified by classify. The caller closes the body of the response.
func (s *snapSource) get(ctx context.Context, path string, query url.Values, accept string) (*http.Response, error) {
	u := s.base + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", accept)
	if t := s.token.Reveal(); t != "" {
		req.Header.Set("Authorization", "Bearer "+t)
	}
	asked := new(atomic.Bool)
	req = req.WithContext(context.WithValue(req.Context(), certificateAskedKey{}, asked))
	resp, err := s.client.Do(req)
	if err != nil {
		// The request's URL stays out of the error: a page token in it
		// encodes a row key.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		cause := "unreachable"
		var ne interface{ Timeout() bool }
		switch {
		case certificateRefused(err):
			// The server answers; its certificate does not fit the
			// connection's TLS options, which a firewall check will not
			// find.
			cause = "config"
			err = fmt.Errorf("%w; give the CA of the server's certificate in options.ca_file, and reach it by a name the certificate holds", err)
		case clientCertificateRefused(err):
			// The server answers; it refuses the certificate this side
			// presents, or asks for one it does not get.
			cause = "config"
			err = fmt.Errorf("%w; the server refused this connection's client certificate: give one of a CA the server trusts (its tls.client_ca_file), not expired, in options.client_cert and options.client_key", err)
		case asked.Load() && droppedAfterHandshake(err):
			// Under TLS 1.3 the client's handshake ends before the
			// server checks the certificate; a server that refuses it
			// closes the connection, and its alert is lost when the
			// request written meanwhile makes the close a reset.
			// %v, not %w: the source error's text would be the errno's
			// alone (driverDetail), without what to do.
			cause = "config"
			err = fmt.Errorf("%v; the server asked for a client certificate and then closed the connection, as it does when it refuses the one given, or gets none: give one of a CA the server trusts (its tls.client_ca_file), not expired, in options.client_cert and options.client_key", err)
		case errors.As(err, &ne) && ne.Timeout():
			cause = "timeout"
		}
		return nil, source.NewSourceError(ctx, s.addr, cause, source.ScrubError(err, s.token.Reveal()))
	}
	if resp.StatusCode == http.StatusOK {
		return resp, nil
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		// Not followed (noRedirect): the token goes to options.url only.
		err := fmt.Errorf("HTTP %d: the server redirects to %s, which is not followed (the token would go with it); give the URL it points to in options.url",
			resp.StatusCode, redirectTarget(resp))
		return nil, source.NewSourceError(ctx, s.addr, "config", source.ScrubError(err, s.token.Reveal()))
	}
	se := &statusError{problem{Status: resp.StatusCode}}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	_ = json.Unmarshal(b, &se.problem)
	se.Status = resp.StatusCode
	if se.Code == "" && se.Detail == "" {
		// Not a snapstore server's problem: what the server said (a
		// TLS server's "Client sent an HTTP request to an HTTPS
		// server.", a proxy's page) is the only clue.
		se.Detail = firstLine(b)
	}
	// The answer is the other server's text, which this side's secrets
	// must not reach, even echoed back.
	return nil, source.ScrubError(s.classify(ctx, se), s.token.Reveal())
}

// redirectTarget is the Location of a redirect without its query and
// fragment (a page token in a query encodes a row key), or "no location".
func redirectTarget(resp *http.Response) string {
	loc, err := resp.Location()
	if err != nil {
		return "no location"
	}
	loc.RawQuery, loc.Fragment, loc.User = "", "", nil
	return loc.String()
}

// firstLine is the first line of the text b, trimmed to at most 200
// bytes; "" when b is not UTF-8 text.
func firstLine(b []byte) string {
	line, _, _ := strings.Cut(string(b), "\n")
	line = strings.TrimSpace(line)
	if !utf8.ValidString(line) || strings.ContainsFunc(line, func(r rune) bool { return unicode.IsControl(r) }) {
		return ""
	}
	if len(line) > 200 {
		line = strings.ToValidUTF8(line[:200], "") + "..."
	}
	return line
}

// classify maps an answer other than 200 to the errors of a source: 401
// and 403 are the credentials (source.ErrSourceAuth), 404 a dataset, a tag
// or a committed version that does not exist (source.ErrResourceNotFound)
// or no route at all (options.url, cause config), 5xx a server that
// cannot serve (source.ErrSourceUnavailable); the rest keep the server's
// text.
func (s *snapSource) classify(ctx context.Context, se *statusError) error {
	switch {
	case se.Status == http.StatusUnauthorized || se.Status == http.StatusForbidden:
		return source.NewSourceError(ctx, s.addr, "auth", se)
	case se.Status == http.StatusNotFound && (se.Code == "dataset_not_found" || se.Code == "tag_not_found" || se.Code == "no_version"):
		return fmt.Errorf("%w: %w", source.ErrResourceNotFound, se)
	case se.Status == http.StatusNotFound && (se.Code == "route_not_found" || se.Code == ""):
		// No route of the API there: the URL's path is not a server's
		// base (a snapstore server, or a proxy's page).
		return source.NewSourceError(ctx, s.addr, "config", fmt.Errorf("%w; options.url does not lead to the API of a snapstore server: give the server's base URL (https://host:port, with a path only where a proxy in front of it adds one)", se))
	case se.Status >= 500 || se.Status == http.StatusTooManyRequests:
		return fmt.Errorf("%w: %w", source.ErrSourceUnavailable, se)
	}
	return se
}

// getJSON sends GET and decodes a JSON answer into out, the whole
// exchange bounded by read_timeout.
func (s *snapSource) getJSON(ctx context.Context, path string, query url.Values, out any) (*http.Response, error) {
	rctx, cancel := s.readBound(ctx)
	defer cancel()
	resp, err := s.get(rctx, path, query, "application/json")
	if err != nil {
		return nil, s.readTimeout(ctx, rctx, err)
	}
	defer resp.Body.Close()
	b, err := boundedread.All(resp.Body, maxJSONAnswer)
	if errors.Is(err, boundedread.ErrTooLarge) {
		return nil, fmt.Errorf("%w: the answer of %s is %v, more than a snapstore server sends", source.ErrSourceUnavailable, path, err)
	}
	if err == nil {
		err = json.Unmarshal(b, out)
	}
	if err != nil {
		return nil, s.readTimeout(ctx, rctx, fmt.Errorf("%w: reading the answer of %s: %w", source.ErrSourceUnavailable, path, err))
	}
	return resp, nil
}

// maxJSONAnswer bounds an answer getJSON reads whole (a list of datasets,
// a dataset, a version): far beyond what a snapstore server sends, so
// that a server at options.url that sends without end (another service,
// a proxy gone wrong) is refused rather than read, within read_timeout,
// until this process runs out of memory. Rows and diffs are decoded as
// they stream.
var maxJSONAnswer int64 = 64 << 20

// readBound returns ctx bounded by read_timeout, for one request and its
// answer.
func (s *snapSource) readBound(ctx context.Context) (context.Context, context.CancelFunc) {
	if s.readTO <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, s.readTO)
}

// readTimeout is err, or when read_timeout (rctx's deadline, not ctx's)
// ended the exchange, the *source.SourceError that names that bound.
func (s *snapSource) readTimeout(ctx, rctx context.Context, err error) error {
	if ctx.Err() != nil || !errors.Is(rctx.Err(), context.DeadlineExceeded) {
		return err
	}
	return &source.SourceError{SourceAddr: s.addr, Cause: "timeout", Timeout: s.readTO, Bound: "read_timeout",
		Err: source.ScrubError(err, s.token.Reveal())}
}

// certificateAskedKey is the key of a request's context value, an
// *atomic.Bool set when the TLS handshake of the request's connection
// saw the server ask for a client certificate. The transport dials with
// the request's values (net/http's getConn), so tlsConfig's
// GetClientCertificate finds it in the handshake's context.
type certificateAskedKey struct{}

// markCertificateAsked sets the flag of ctx's request (certificateAskedKey),
// if it has one.
func markCertificateAsked(ctx context.Context) {
	if f, ok := ctx.Value(certificateAskedKey{}).(*atomic.Bool); ok {
		f.Store(true)
	}
}

// droppedAfterHandshake reports whether err is the connection closing
// under the request: reset, or ended before an answer; over HTTP/2,
// net/http's unexported error of a connection closed before its
// settings came (errClientConnNotEstablished), known by its text as the
// TLS alerts are (clientCertificateRefused).
func droppedAfterHandshake(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		strings.Contains(err.Error(), "http2: client conn could not be established")
}

// clientCertificateRefused reports whether err is the server's TLS alert
// refusing this client's certificate, or asking for one it did not get
// (RFC 8446, 6.2). crypto/tls reports an alert the server sent as a
// *net.OpError of Op "remote error" whose error, of a type it does not
// export, is the alert's text.
func clientCertificateRefused(err error) bool {
	var oe *net.OpError
	if !errors.As(err, &oe) || oe.Op != "remote error" || oe.Err == nil {
		return false
	}
	switch oe.Err.Error() {
	case "tls: bad certificate", "tls: unsupported certificate", "tls: revoked certificate", "tls: expired certificate",
		"tls: unknown certificate", "tls: unknown certificate authority", "tls: certificate required":
		return true
	}
	return false
}

// certificateRefused reports whether err is this client's refusal of the
// server's certificate: signed by an unknown authority, for other names,
// expired or otherwise invalid.
func certificateRefused(err error) bool {
	var ua x509.UnknownAuthorityError
	var he x509.HostnameError
	var ci x509.CertificateInvalidError
	var ve *tls.CertificateVerificationError
	return errors.As(err, &ua) || errors.As(err, &he) || errors.As(err, &ci) || errors.As(err, &ve)
}
