package server

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/snapstore/snapstore/api"
)

// The /v1/tokens routes (admin): API tokens, created with a role, an
// optional expiry and an optional grant (grants.go), answered once at creation, listed without any part of
// the secret, with the config file's tokens, revoked by name (apitokens.go).

// tokenJSON is a token on the wire: never the token or its hash.
type tokenJSON struct {
	Name string `json:"name"`
	Role string `json:"role"`
	// Source is "config" for a token of the config file's auth.tokens,
	// "api" for one created through POST /v1/tokens.
	Source string `json:"source"`
	// Created is absent for a config token.
	Created *time.Time `json:"created,omitempty"`
	Expires *time.Time `json:"expires,omitempty"`
	Expired bool       `json:"expired"`
	// Datasets are the token's grant; absent for every dataset.
	Datasets []string `json:"datasets,omitempty"`
}

// Sources of a listed token.
const (
	tokenSourceConfig = "config"
	tokenSourceAPI    = "api"
)

func tokenToJSON(r tokenRecord, now time.Time) tokenJSON {
	created := r.Created.UTC()
	out := tokenJSON{Name: r.Name, Role: r.Role, Source: tokenSourceAPI, Created: &created, Datasets: r.Datasets}
	if !r.Expires.IsZero() {
		e := r.Expires.UTC()
		out.Expires = &e
		out.Expired = !now.Before(r.Expires)
	}
	return out
}

// createTokenRequest is the body of POST /v1/tokens.
type createTokenRequest struct {
	Name      string       `json:"name"`
	Role      string       `json:"role"`
	ExpiresIn api.Duration `json:"expires_in"`
	Datasets  []string     `json:"datasets"`
}

// check returns the role and grant of r, or every problem of them at
// once, joined (each a 400 naming its field).
// minTokenLife is the shortest expires_in of a token made through the
// API: the token's expiry is kept to the second, and one shorter would
// be created expired, or expire before whoever asked for it can use it.
const minTokenLife = time.Minute

func (r createTokenRequest) check() (Role, Grant, error) {
	var errs []error
	role, err := ParseRole(r.Role)
	if err != nil {
		errs = append(errs, BadField("body.role", "%v", err))
	}
	for i, p := range r.Datasets {
		if err := CheckDatasetPattern(p); err != nil {
			errs = append(errs, BadField(fmt.Sprintf("body.datasets[%d]", i), "%v", err))
		}
	}
	if r.ExpiresIn < 0 || r.ExpiresIn > 0 && time.Duration(r.ExpiresIn) < minTokenLife {
		errs = append(errs, BadField("body.expires_in", "want %s or longer (a token that expires before it can be used), or none; got %s", minTokenLife, time.Duration(r.ExpiresIn)))
	}
	if len(errs) > 0 {
		return role, Grant{}, errors.Join(errs...)
	}
	g, err := ParseGrant(r.Datasets)
	if err != nil {
		return role, Grant{}, BadField("body.datasets", "%v", err)
	}
	return role, g, nil
}

// createdToken is the answer of POST /v1/tokens: the only time the token
// is shown.
type createdToken struct {
	tokenJSON
	Token string `json:"token"`
}

// createToken answers POST /v1/tokens.
func (s *Server) createToken(c echo.Context) error {
	if !s.tokens.enabled() {
		return ErrAuthDisabled
	}
	var req createTokenRequest
	err := checkedBody(c, &req, func() error {
		_, _, err := req.check()
		return err
	})
	if req.Name != "" {
		setAuditTarget(c, "token", req.Name)
	}
	if err != nil {
		return err
	}
	role, g, err := req.check()
	if err != nil {
		return err
	}
	for _, t := range s.tokens.tokens {
		if t.Name == req.Name {
			return WithField(ErrTokenExists, "body.name")
		}
	}
	now := s.now().UTC().Truncate(time.Second)
	text := NewTokenText()
	rec := tokenRecord{Name: req.Name, Hash: HashToken(text), Role: role.String(), Created: now, Datasets: g.Patterns()}
	if req.ExpiresIn > 0 {
		rec.Expires = now.Add(time.Duration(req.ExpiresIn))
	}
	if err := s.apiTokens.create(c.Request().Context(), rec); err != nil {
		return WithField(err, "body.name")
	}
	s.log.Info("API token created", "name", rec.Name, "role", rec.Role, "expires", rec.Expires, TokenAttr(c.Get("token")))
	return c.JSON(http.StatusCreated, createdToken{tokenJSON: tokenToJSON(rec, now), Token: text})
}

// listTokens answers GET /v1/tokens: the config file's tokens and the
// API tokens, in name order (a name is one or the other: POST refuses a
// config token's name).
func (s *Server) listTokens(c echo.Context) error {
	recs, err := s.apiTokens.list(c.Request().Context())
	if err != nil {
		return err
	}
	now := s.now()
	out := make([]tokenJSON, 0, len(s.tokens.tokens)+len(recs))
	for _, t := range s.tokens.tokens {
		out = append(out, tokenJSON{Name: t.Name, Role: t.Role.String(), Source: tokenSourceConfig, Datasets: t.Datasets})
	}
	for _, r := range recs {
		out = append(out, tokenToJSON(r, now))
	}
	slices.SortStableFunc(out, func(a, b tokenJSON) int { return strings.Compare(a.Name, b.Name) })
	return answerList(c, "tokens", out)
}

// revokeToken answers DELETE /v1/tokens/{name}.
func (s *Server) revokeToken(c echo.Context) error {
	name, err := pathParam(c, "name")
	if err != nil {
		return err
	}
	if err := s.apiTokens.revoke(c.Request().Context(), name); err != nil {
		return err
	}
	s.log.Info("API token revoked", "name", name, TokenAttr(c.Get("token")))
	return c.NoContent(http.StatusNoContent)
}
