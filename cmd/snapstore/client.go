package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/snapstore/snapstore/internal/boundedread"
	"github.com/snapstore/snapstore/server"
)

// apiClient sends the requests of the client commands to the HTTP API of
// a target (target.go): a server, or the API served in this process on a
// data directory.
type apiClient struct {
	base  *url.URL
	token string // bearer token; "" sends none. Never printed.
	hc    *http.Client
	local bool // the in-process API of a data directory
	// tls is what the messages of a refused TLS handshake add (clientTLS).
	tls tlsNotes
}

// apiError is a problem answered by the API (RFC 9457): its status, its
// stable code and the input to blame. Its text is what the user reads:
// "HTTP 404 dataset_not_found: snapshot: dataset does not exist: ...".
type apiError struct {
	Status  int
	Problem server.Problem
	Hint    string // what the CLI adds, e.g. how to give a token; "" for none
	// Flag is the command's flag that gives the parameter Problem.Field
	// names ("--from" for from), "" for none (commonFlags.nameFlag).
	Flag string
	// Flags is Flag for each of Problem.Errors, by index.
	Flags []string
	// Places says, by index of Problem.Errors, where the user wrote the
	// field it blames ("adapter.yaml line 7"); "" or absent for unknown.
	Places []string
}

func (e *apiError) Error() string {
	if e.Hint != "" {
		return strings.TrimSuffix(e.text(), ".") + "; " + e.Hint
	}
	return e.text()
}

func (e *apiError) text() string {
	p := e.Problem
	if p.Code == "" {
		return fmt.Sprintf("HTTP %d: %s", e.Status, p.Detail)
	}
	if len(p.Errors) > 1 {
		return e.violations()
	}
	if e.Flag != "" {
		// The detail names the parameter ("from: ...; give from"); the
		// command's user gives it by its flag.
		detail := strings.TrimPrefix(p.Detail, p.Field+": ")
		if d, ok := strings.CutSuffix(detail, "give "+p.Field); ok {
			detail = d + "give " + e.Flag
		}
		return fmt.Sprintf("HTTP %d %s: %s: %s", e.Status, p.Code, e.Flag, detail)
	}
	if p.Field != "" {
		return fmt.Sprintf("HTTP %d %s (field %s): %s", e.Status, p.Code, p.Field, withoutField(p.Detail, p.Field))
	}
	return fmt.Sprintf("HTTP %d %s: %s", e.Status, p.Code, p.Detail)
}

// violations is the text of a problem that lists several violations
// (Problem.Errors): one line each, naming its field (or the flag that
// gives it), its code where it is not the answer's, and where the user
// wrote the field.
func (e *apiError) violations() string {
	p := e.Problem
	var b strings.Builder
	fmt.Fprintf(&b, "HTTP %d %s: %d problems:", e.Status, p.Code, len(p.Errors))
	for i, v := range p.Errors {
		b.WriteString("\n  ")
		switch {
		case i < len(e.Flags) && e.Flags[i] != "":
			b.WriteString(e.Flags[i] + ": ")
		case v.Field != "":
			b.WriteString(v.Field + ": ")
		}
		b.WriteString(withoutField(v.Detail, v.Field))
		if v.Code != p.Code {
			fmt.Fprintf(&b, " (%s)", v.Code)
		}
		if i < len(e.Places) && e.Places[i] != "" {
			fmt.Fprintf(&b, " (%s)", e.Places[i])
		}
	}
	return b.String()
}

// withoutField is detail without the field it begins by naming
// ("body.retention.ttl: ...", `option "connection": ...`), which the
// CLI's text names already.
func withoutField(detail, field string) string {
	for _, prefix := range []string{field + ": ", `option "` + field + `": `} {
		if d, ok := strings.CutPrefix(detail, prefix); ok {
			return d
		}
	}
	return detail
}

// do sends one request: body, when not nil, as JSON. A non-2xx answer is
// an *apiError; no answer at all is exit code 3.
func (c *apiClient) do(ctx context.Context, method, path string, q url.Values, body any, accept string) (*http.Response, error) {
	u := *c.base
	u.RawPath = u.Path + path
	u.Path, _ = url.PathUnescape(u.RawPath)
	u.RawQuery = q.Encode()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return nil, err
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		var ne net.Error
		var ue *url.Error
		var he x509.HostnameError
		if errors.As(err, &he) {
			return nil, &exitError{code: exitUnreachable, err: fmt.Errorf("the certificate of the server at %s is not for the name %q: %w; reach the server by a name its certificate holds, or make the certificate again with `snapstore cert server DIR --host %s,...`", c.base, c.base.Hostname(), he, c.base.Hostname())}
		}
		if untrusted := certificateError(err); untrusted != nil {
			return nil, &exitError{code: exitUnreachable, err: fmt.Errorf("the certificate of the server at %s is not trusted: %w%s; give its CA with --ca-file FILE or %s", c.base, untrusted, c.trustedBy(), envCAFile)}
		}
		refused := clientCertRefused(err)
		if refused == nil && c.base.Scheme == "https" && ctx.Err() == nil {
			refused = c.probeClientCert(ctx)
		}
		if refused != nil && c.tls.clientCA != "" {
			return nil, &exitError{code: exitUnreachable, err: fmt.Errorf("the server at %s refused the connection (%w): its config asks every client for a certificate signed by tls.client_ca_file %s, and none was given; give one with --client-cert FILE and --client-key FILE, or %s and %s", c.base, refused, c.tls.clientCA, envClientCert, envClientKey)}
		}
		if refused != nil {
			return nil, &exitError{code: exitUnreachable, err: fmt.Errorf("the server at %s refused the client certificate (%w): it asks for one signed by its client CA; give it with --client-cert FILE and --client-key FILE, or %s and %s", c.base, refused, envClientCert, envClientKey)}
		}
		if ctx.Err() == nil && (errors.As(err, &ne) || errors.As(err, &ue)) {
			return nil, &exitError{code: exitUnreachable, err: fmt.Errorf("no answer from the server at %s: %w", c.base, errors.Unwrap(err))}
		}
		return nil, err
	}
	if resp.StatusCode >= 300 {
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
		ae := &apiError{Status: resp.StatusCode}
		if json.Unmarshal(b, &ae.Problem) != nil || ae.Problem.Code == "" {
			ae.Problem = server.Problem{Detail: strings.TrimSpace(string(b))}
		}
		printableProblem(&ae.Problem)
		switch {
		case ae.Status == http.StatusBadRequest && c.base.Scheme == "http" && ae.Problem.Code == "" && strings.Contains(ae.Problem.Detail, "HTTP request to an HTTPS server"):
			ae.Hint = "the server speaks HTTPS: give --server https://" + c.base.Host
		case ae.Status >= 300 && ae.Status < 400:
			where := "no location"
			if loc, err := resp.Location(); err == nil {
				loc.RawQuery, loc.Fragment, loc.User = "", "", nil
				where = loc.String()
			}
			ae.Problem.Detail = "the server redirects to " + where + ", which is not followed (the token would go with it): give the server's own URL with --server"
		case ae.Problem.Code == "table_required":
			ae.Hint = "give it with --table NAME"
		case ae.Status != http.StatusUnauthorized:
		case c.token == "":
			ae.Hint = "give the token with --token or, better, " + envToken
		case ae.Problem.Code == "token_expired":
			ae.Hint = "the server refused the token given: it has expired"
		default:
			ae.Hint = "the server refused the token given: unknown, revoked or expired"
		}
		return nil, ae
	}
	return resp, nil
}

// printableProblem makes the text of p that the CLI prints safe for a
// terminal: whatever answers at --server chooses the body of a refusal,
// and a control character in it (ESC starting a sequence that rewrites
// the screen or the window title, a carriage return overwriting the
// line) would reach the terminal as it is. Each is written as an escape
// (printable).
func printableProblem(p *server.Problem) {
	for _, s := range []*string{&p.Title, &p.Detail, &p.Code, &p.Field} {
		*s = printable(*s)
	}
	if p.Messages != nil {
		m := make(map[string]string, len(p.Messages))
		for k, v := range p.Messages {
			m[printable(k)] = printable(v)
		}
		p.Messages = m
	}
	for i := range p.Errors {
		v := &p.Errors[i]
		v.Field, v.Code, v.Detail = printable(v.Field), printable(v.Code), printable(v.Detail)
	}
}

// printable is s with every control character but the newline, and every
// byte that is not UTF-8, written as Go writes it in a quoted string
// ("\x1b", "\r", "\u009b"); s itself when it has none.
func printable(s string) string {
	clean := func(r rune) bool { return r == '\n' || (r != utf8.RuneError && !unicode.IsControl(r)) }
	ok := true
	for _, r := range s {
		ok = ok && clean(r)
	}
	if ok {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case clean(r) || (r == utf8.RuneError && n == 3):
			b.WriteString(s[i : i+n])
		default:
			q := strconv.QuoteToASCII(s[i : i+n])
			b.WriteString(q[1 : len(q)-1])
		}
		i += n
	}
	return b.String()
}

// trustedBy says, after an untrusted certificate's error, what beyond
// the system's CAs it was checked against; "" when nothing.
func (c *apiClient) trustedBy() string {
	switch {
	case c.tls.unloaded != "":
		return "; " + c.tls.unloaded
	case c.tls.trust == "":
		return ""
	}
	return " (checked against the system's CAs and " + c.tls.trust + ")"
}

// certificateError is the error of err that says the server's
// certificate was not verified (signed by an unknown authority, invalid,
// or for another host); nil when there is none.
func certificateError(err error) error {
	var ua x509.UnknownAuthorityError
	var ci x509.CertificateInvalidError
	var he x509.HostnameError
	var ve *tls.CertificateVerificationError
	switch {
	case errors.As(err, &ua):
		return ua
	case errors.As(err, &ci):
		return ci
	case errors.As(err, &he):
		return he
	case errors.As(err, &ve):
		return ve
	}
	return nil
}

// maxAnswerBytes bounds a JSON answer that call reads whole: far beyond
// what a snapstore server sends (a page of 1000 versions or runs of a
// dataset of many tables), so that what answers at --server and sends
// without end is refused rather than read until the memory runs out.
// Streams (scan, diff, exports) are copied, not held, and have no bound.
var maxAnswerBytes int64 = 256 << 20

// call sends one request and returns the answer's body (JSON), of at
// most maxAnswerBytes.
func (c *apiClient) call(ctx context.Context, method, path string, q url.Values, body any) ([]byte, error) {
	resp, err := c.do(ctx, method, path, q, body, "application/json")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := boundedread.All(resp.Body, maxAnswerBytes)
	if errors.Is(err, boundedread.ErrTooLarge) {
		return nil, fmt.Errorf("the answer of %s %s is %v, more than a snapstore server sends: does %s answer as snapstore?", method, path, err, c.base.Redacted())
	}
	if err != nil {
		return nil, fmt.Errorf("reading the answer of %s %s: %w", method, path, err)
	}
	return b, nil
}

// get sends a GET and decodes its JSON answer into v; it returns the raw
// answer too, for --output json.
func (c *apiClient) get(ctx context.Context, path string, q url.Values, v any) ([]byte, error) {
	return c.send(ctx, http.MethodGet, path, q, nil, v)
}

// send is call, then the answer decoded into v (when not nil).
func (c *apiClient) send(ctx context.Context, method, path string, q url.Values, body, v any) ([]byte, error) {
	b, err := c.call(ctx, method, path, q, body)
	if err != nil {
		return nil, err
	}
	if v != nil && len(b) > 0 {
		if err := json.Unmarshal(b, v); err != nil {
			return nil, fmt.Errorf("decoding the answer of %s %s: %w", method, path, err)
		}
	}
	return b, nil
}

// copyGet sends a GET and copies the answer's body to w: get and scan
// print what the API sends.
func (c *apiClient) copyGet(ctx context.Context, w io.Writer, path string, q url.Values, accept string) error {
	resp, err := c.do(ctx, http.MethodGet, path, q, nil, accept)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.Copy(w, resp.Body)
	return err
}

// getFile sends a GET and writes the answer's body to the file name: to a
// temporary file beside it first, renamed over name once the whole body
// arrived, so name is never a truncated answer. The file gets the mode a
// shell redirect would give it (0666 less the umask).
func (c *apiClient) getFile(ctx context.Context, name, path string, q url.Values, accept string) error {
	f, err := createBeside(name)
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // after the rename, a no-op
	if err := c.copyGet(ctx, f, path, q, accept); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), name)
}

// createBeside creates a new temporary file in name's directory, named
// after it, with mode 0666 less the umask (os.CreateTemp would make it
// 0600 whatever the umask).
func createBeside(name string) (*os.File, error) {
	dir, base := filepath.Dir(name), filepath.Base(name)
	for range 100 {
		f, err := os.OpenFile(filepath.Join(dir, "."+base+"."+rand.Text()[:10]), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
		if !errors.Is(err, fs.ErrExist) {
			return f, err
		}
	}
	return nil, fmt.Errorf("creating a temporary file beside %s: every name tried exists", name)
}

// pathOf builds an API path from literal parts and escaped names:
// pathOf("/v1/datasets/", ds, "/tags/", tag); each odd argument is a name.
func pathOf(parts ...string) string {
	var b strings.Builder
	for i, p := range parts {
		if i%2 == 1 {
			p = url.PathEscape(p)
		}
		b.WriteString(p)
	}
	return b.String()
}

// readCommand is the shape of the commands that read one answer of the
// API and print it: c's command line with nargs positional arguments, a
// GET of the path and query that request makes of them, then the answer
// decoded for table, or printed as it came with --output json. checks run
// after the command line is parsed, before the target is opened.
func readCommand[T any](ctx context.Context, c *cmdLine, args []string, stderr io.Writer, nargs int,
	request func(pos []string) (string, url.Values), table func(pos []string, v T) error, checks ...func(*cmdLine) error) error {
	pos, err := c.parseN(args, nargs, nargs)
	if err != nil {
		return err
	}
	for _, check := range checks {
		if err := check(c); err != nil {
			return err
		}
	}
	return withTarget(ctx, c.cf, stderr, func(t *target) error {
		var v T
		path, q := request(pos)
		raw, err := t.api.get(ctx, path, q, &v)
		if err != nil || c.cf.json() {
			return orJSON(c.stdout, raw, err)
		}
		return table(pos, v)
	})
}

// deleteCommand is the shape of the commands that delete one thing named
// by their one argument: a DELETE of the path and query that request makes
// of it, then done's sentence, or with --output json {"deleted": name}
// (the API answers 204 without a body).
func deleteCommand(ctx context.Context, c *cmdLine, args []string, stderr io.Writer, request func(name string) (string, url.Values), done string) error {
	pos, err := c.parseN(args, 1, 1)
	if err != nil {
		return err
	}
	return withTarget(ctx, c.cf, stderr, func(t *target) error {
		path, q := request(pos[0])
		if _, err := t.api.call(ctx, http.MethodDelete, path, q, nil); err != nil {
			return err
		}
		if c.cf.json() {
			return encodeJSON(c.stdout, deletedJSON{Deleted: pos[0]})
		}
		_, err := fmt.Fprintf(c.stdout, done+"\n", pos[0])
		return err
	})
}

// deletedJSON is what --output json prints for a delete the API answers
// with 204 and no body: the name deleted, and for a tag its dataset.
type deletedJSON struct {
	Dataset string `json:"dataset,omitempty"`
	Deleted string `json:"deleted"`
}

// orJSON ends a command that prints the API's answer raw with --output
// json: err if set, else raw printed.
func orJSON(w io.Writer, raw []byte, err error) error {
	if err != nil {
		return err
	}
	return printJSON(w, raw)
}

// path0 is a request of a fixed path and no query.
func path0(path string) func([]string) (string, url.Values) {
	return func([]string) (string, url.Values) { return path, nil }
}
