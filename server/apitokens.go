package server

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/snapstore/snapstore/snapshot"
)

// Tokens created through the API (POST /v1/tokens) are records of the
// metadata table, so that every node of a cluster on one HBase table sees
// the same ones: a record per token name holding its hash (never the
// token), role, creation time and expiry. A node keeps the records in
// memory and reads them again when they are older than TokenRefresh, before
// it answers a token it has; a token revoked on one node is refused by
// every node within TokenRefresh.

// TokenRefresh bounds how old a node's copy of the API tokens may be when
// it checks one: a token created or revoked on another node is seen
// within this delay.
const TokenRefresh = 2 * time.Second

// recordToken is the record kind of API tokens, by token name.
const recordToken = "server.token"

// The refusals of API tokens.
var (
	// ErrTokenExpired is a request with an API token past its expiry (401).
	ErrTokenExpired = errors.New("server: the token expired")
	// ErrTokenNotFound names a token that no API token has (404).
	ErrTokenNotFound = errors.New("server: no such API token")
	// ErrTokenExists is a new API token whose name a token has (409).
	ErrTokenExists = errors.New("server: a token of this name exists")
	// ErrAuthDisabled refuses API tokens on a server without auth.tokens,
	// which checks no token (409).
	ErrAuthDisabled = errors.New("server: this server has no auth.tokens and checks no token; configure one to use API tokens")
)

// tokenRecord is an API token as stored.
type tokenRecord struct {
	Name    string    `json:"name"`
	Hash    string    `json:"hash"`
	Role    string    `json:"role"`
	Created time.Time `json:"created"`
	// Expires is zero for a token that does not expire.
	Expires time.Time `json:"expires,omitzero"`
	// Datasets limits the token to the datasets matching one of these
	// patterns (grants.go); empty for every dataset.
	Datasets []string `json:"datasets,omitempty"`
}

// apiToken is a tokenRecord as checked: its parsed role and grant.
type apiToken struct {
	rec   tokenRecord
	role  Role
	grant Grant
}

// apiTokens is a node's copy of the API tokens. It is safe for
// concurrent use.
type apiTokens struct {
	db *snapshot.DB
	// sessionKey signs the console sessions of API tokens: drawn at start,
	// since nothing stored may sign them (the store holds only hashes, which
	// its readers could use), so such a session is good on the node that
	// made it until it restarts.
	sessionKey []byte

	// mu guards the fields below. It is held across the read of the
	// records, so that one reload serves every request waiting for it.
	mu       sync.Mutex
	byDigest map[[sha256.Size]byte]apiToken
	loaded   time.Time // zero: never loaded
}

func newAPITokens(db *snapshot.DB) *apiTokens {
	return &apiTokens{db: db, sessionKey: sessionKey(NewTokenText())}
}

// find returns the API token whose hash is digest, reading the records
// again when the copy is older than TokenRefresh. An error is the store's.
// The lookup is by the SHA-256 of the presented token, as GitHub and Vault
// look tokens up: how long it takes can tell only about digests, from
// which no token can be found, so it needs no constant-time comparison.
func (a *apiTokens) find(ctx context.Context, digest [sha256.Size]byte, now time.Time) (apiToken, bool, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.loaded.IsZero() || now.Sub(a.loaded) >= TokenRefresh || now.Before(a.loaded) {
		if err := a.reloadLocked(ctx, now); err != nil {
			return apiToken{}, false, err
		}
	}
	t, ok := a.byDigest[digest]
	return t, ok, nil
}

// reloadLocked reads every API token record.
func (a *apiTokens) reloadLocked(ctx context.Context, now time.Time) error {
	recs, err := a.list(ctx)
	if err != nil {
		return err
	}
	m := make(map[[sha256.Size]byte]apiToken, len(recs))
	for _, r := range recs {
		d, err := ParseTokenHash(r.Hash)
		if err != nil {
			continue // list dropped it already
		}
		role, err := ParseRole(r.Role)
		if err != nil {
			continue
		}
		g, err := ParseGrant(r.Datasets)
		if err != nil {
			continue // a token whose grant cannot be read reaches nothing
		}
		m[d] = apiToken{rec: r, role: role, grant: g}
	}
	a.byDigest, a.loaded = m, now
	return nil
}

// named returns the API token of name, reading the records again as
// find does.
func (a *apiTokens) named(ctx context.Context, name string, now time.Time) (apiToken, bool, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.loaded.IsZero() || now.Sub(a.loaded) >= TokenRefresh || now.Before(a.loaded) {
		if err := a.reloadLocked(ctx, now); err != nil {
			return apiToken{}, false, err
		}
	}
	for _, t := range a.byDigest {
		if t.rec.Name == name {
			return t, true, nil
		}
	}
	return apiToken{}, false, nil
}

// forget drops the copy, so that the next check reads the records: after
// a change on this node, which this node then sees at once.
func (a *apiTokens) forget() {
	a.mu.Lock()
	a.loaded = time.Time{}
	a.mu.Unlock()
}

// list returns the API token records in name order.
func (a *apiTokens) list(ctx context.Context) ([]tokenRecord, error) {
	recs, err := a.db.ListRecords(ctx, recordToken)
	if err != nil {
		return nil, err
	}
	out := make([]tokenRecord, 0, len(recs))
	for _, r := range recs {
		var t tokenRecord
		if err := json.Unmarshal(r.Value, &t); err != nil {
			return nil, fmt.Errorf("%w: API token record %q: %v", snapshot.ErrCorrupt, r.Name, err)
		}
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// create stores a new API token record; ErrTokenExists when one has its
// name.
func (a *apiTokens) create(ctx context.Context, r tokenRecord) error {
	if a.db.ReadOnly() {
		return snapshot.ErrReadOnly
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	ok, err := a.db.CompareAndSetRecord(ctx, recordToken, r.Name, nil, b)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: %q", ErrTokenExists, r.Name)
	}
	a.forget()
	return nil
}

// revoke deletes the API token record of name; ErrTokenNotFound when
// there is none.
func (a *apiTokens) revoke(ctx context.Context, name string) error {
	if _, err := a.db.GetRecord(ctx, recordToken, name); err != nil {
		if errors.Is(err, snapshot.ErrRecordNotFound) {
			return fmt.Errorf("%w: %q", ErrTokenNotFound, name)
		}
		return err
	}
	if err := a.db.DeleteRecord(ctx, recordToken, name); err != nil {
		return err
	}
	a.forget()
	return nil
}
