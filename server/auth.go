package server

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
)

// Role is what a bearer token may do. Roles are ordered: each includes the
// ones before it.
type Role int

const (
	// RoleNone marks operations that need no token (/healthz, /readyz,
	// /openapi.json).
	RoleNone Role = iota
	// RoleReader reads datasets, versions, diffs, adapters, runs and metrics.
	RoleReader
	// RoleOperator also starts runs and reads data connections (redacted),
	// tests them and lists their resources.
	RoleOperator
	// RoleAdmin may do everything: create, replace and drop connections and
	// adapters, GC, tags, rollback, dropping datasets.
	RoleAdmin
	// RoleCluster marks operations that only the nodes of a cluster call,
	// with the cluster credential (cluster.go); no bearer token has it.
	RoleCluster
)

// String returns "none", "reader", "operator" or "admin".
func (r Role) String() string {
	switch r {
	case RoleNone:
		return "none"
	case RoleReader:
		return "reader"
	case RoleOperator:
		return "operator"
	case RoleAdmin:
		return "admin"
	case RoleCluster:
		return "cluster"
	}
	return fmt.Sprintf("role(%d)", int(r))
}

// ParseRole parses "reader", "operator" or "admin".
func ParseRole(s string) (Role, error) {
	switch s {
	case "reader":
		return RoleReader, nil
	case "operator":
		return RoleOperator, nil
	case "admin":
		return RoleAdmin, nil
	}
	return RoleNone, fmt.Errorf("unknown role %q (want reader, operator or admin)", s)
}

// Token is one bearer token accepted by the server, given by its text
// (Token) or by its hash (Hash, as HashToken writes it). Name identifies
// it in logs (the token text never appears anywhere). Datasets limits it
// to the datasets matching one of its patterns (grants.go); empty means
// every dataset.
type Token struct {
	Name     string
	Token    string
	Hash     string
	Role     Role
	Datasets []string

	grant Grant // parsed Datasets
}

// tokenSet checks presented tokens in constant time against SHA-256 digests
// of the configured ones, and keeps for each the key that signs the
// console's sessions of that token (consoleauth.go).
type tokenSet struct {
	digests     [][sha256.Size]byte
	sessionKeys [][]byte
	tokens      []Token // Token and Hash fields cleared
}

func newTokenSet(ts []Token) (*tokenSet, error) {
	s := &tokenSet{}
	seen := map[[sha256.Size]byte]bool{}
	// Tokens given by their hash sign their console sessions with a key
	// drawn at start, since the hash is in the config file for anyone
	// who reads it: their sessions end when the process does.
	processKey := []byte(NewTokenText())
	for i, t := range ts {
		var d [sha256.Size]byte
		var key []byte
		switch {
		case t.Token != "" && t.Hash != "":
			return nil, fmt.Errorf("server: token %d (%q): both a token and a hash", i, t.Name)
		case t.Token != "":
			d = sha256.Sum256([]byte(t.Token))
			key = sessionKey(t.Token)
		case t.Hash != "":
			var err error
			if d, err = ParseTokenHash(t.Hash); err != nil {
				return nil, fmt.Errorf("server: token %d (%q): %w", i, t.Name, err)
			}
			key = sessionKey(string(processKey) + string(d[:]))
		default:
			return nil, fmt.Errorf("server: token %d (%q): empty token", i, t.Name)
		}
		if t.Role < RoleReader || t.Role > RoleAdmin {
			return nil, fmt.Errorf("server: token %d (%q): bad role %v", i, t.Name, t.Role)
		}
		if seen[d] {
			return nil, fmt.Errorf("server: token %d (%q): duplicate token", i, t.Name)
		}
		g, err := ParseGrant(t.Datasets)
		if err != nil {
			return nil, fmt.Errorf("server: token %d (%q): %w", i, t.Name, err)
		}
		seen[d] = true
		s.digests = append(s.digests, d)
		s.sessionKeys = append(s.sessionKeys, key)
		s.tokens = append(s.tokens, Token{Name: t.Name, Role: t.Role, Datasets: g.Patterns(), grant: g})
	}
	return s, nil
}

func (s *tokenSet) enabled() bool { return len(s.digests) > 0 }

// lookup returns the token matching the Authorization header value, checking
// every configured token so the time taken does not depend on which matched.
func (s *tokenSet) lookup(header string) (Token, bool) {
	text, ok := bearerText(header)
	if !ok {
		return Token{}, false
	}
	i := s.find(text)
	if i < 0 {
		return Token{}, false
	}
	return s.tokens[i], true
}

// bearerText returns the token of an Authorization header value
// "Bearer TOKEN".
func bearerText(header string) (string, bool) {
	const prefix = "bearer "
	if len(header) <= len(prefix) || !strings.EqualFold(header[:len(prefix)], prefix) {
		return "", false
	}
	t := strings.TrimSpace(header[len(prefix):])
	return t, t != ""
}

// find returns the index of the configured token equal to text, -1 for
// none, comparing with every one so that the time taken does not depend
// on which matched.
func (s *tokenSet) find(text string) int {
	d := sha256.Sum256([]byte(text))
	found := -1
	for i := range s.digests {
		if subtle.ConstantTimeCompare(d[:], s.digests[i][:]) == 1 {
			found = i
		}
	}
	return found
}

// CheckListen refuses to serve without tokens on anything but a loopback
// address: addr ("host:port") must name 127.0.0.0/8, ::1 or "localhost"
// when tokens is empty. An empty host (":8080") means every interface and is
// refused too.
func CheckListen(addr string, tokens []Token) error {
	if len(tokens) > 0 {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("server: listen address %q: %w", addr, err)
	}
	if !loopbackName(host) {
		return fmt.Errorf("server: listen address %q is not loopback and no auth tokens are configured; add auth.tokens or listen on 127.0.0.1", addr)
	}
	return nil
}

// CheckPlaintext refuses to serve tokens over plain HTTP on anything but
// a loopback address: they would cross the network in clear. The caller
// skips it when it serves TLS, or when a TLS-terminating proxy is in front
// (tls.plaintext_behind_proxy).
func CheckPlaintext(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("server: listen address %q: %w", addr, err)
	}
	if !loopbackName(host) {
		return fmt.Errorf("server: listen address %q is not loopback and the server has tokens but no TLS: they would cross the network in clear; set tls.cert_file and tls.key_file, or tls.plaintext_behind_proxy: true when a TLS-terminating proxy is in front", addr)
	}
	return nil
}

// loopbackName reports whether host is "localhost" or a loopback IP.
func loopbackName(host string) bool {
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(strings.Trim(host, "[]"))
	return err == nil && ip.IsLoopback()
}

// authorize checks the bearer token against the operation's role.
func (s *Server) authorize(c echo.Context, rt *route) error {
	if rt.role == RoleCluster {
		return s.authorizeNode(c)
	}
	if !s.tokens.enabled() || rt.role == RoleNone {
		return nil
	}
	header := c.Request().Header.Get(echo.HeaderAuthorization)
	tok, ok := s.tokens.lookup(header)
	if !ok {
		var err error
		if tok, ok, err = s.lookupAPIToken(c.Request().Context(), header); err != nil {
			if tok.Name != "" {
				// An expired token is still known: the refusal's audit
				// entry names it.
				c.Set("token", tok.Name)
			}
			return err
		}
	}
	if !ok {
		return echo.NewHTTPError(http.StatusUnauthorized, "a valid bearer token is required (Authorization: Bearer TOKEN)")
	}
	c.Set("token", tok.Name)
	setGrant(c, tok.grant)
	if tok.Role < rt.role {
		return echo.NewHTTPError(http.StatusForbidden, fmt.Sprintf("token %q has role %s; this operation needs %s", tok.Name, tok.Role, rt.role))
	}
	return nil
}

// lookupAPIToken returns the API token (POST /v1/tokens) of the
// Authorization header value: false for none, which is answered as an
// unknown token whether it never existed or was revoked, and
// ErrTokenExpired for one past its expiry (with a Token that holds its
// name only).
func (s *Server) lookupAPIToken(ctx context.Context, header string) (Token, bool, error) {
	text, ok := bearerText(header)
	if !ok {
		return Token{}, false, nil
	}
	now := s.now()
	t, ok, err := s.apiTokens.find(ctx, sha256.Sum256([]byte(text)), now)
	if err != nil || !ok {
		return Token{}, false, err
	}
	if !t.rec.Expires.IsZero() && !now.Before(t.rec.Expires) {
		return Token{Name: t.rec.Name}, false, fmt.Errorf("%w: token %q expired at %s", ErrTokenExpired, t.rec.Name, t.rec.Expires.UTC().Format(time.RFC3339))
	}
	return Token{Name: t.rec.Name, Role: t.role, Datasets: t.grant.Patterns(), grant: t.grant}, true, nil
}

// TokenAttr is the log attribute naming the token that asked (name, or
// the value the auth check set on an echo context): "token=ops", and
// nothing at all on a server without tokens, where none asked (slog
// handlers drop the zero Attr).
func TokenAttr(name any) slog.Attr {
	if n, ok := name.(string); ok && n != "" {
		return slog.String("token", n)
	}
	return slog.Attr{}
}
