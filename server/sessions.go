package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/snapstore/snapstore/snapshot"
)

// Console sessions are signed cookies that no node stores (consoleauth.go);
// a logout ends one before its expiry by a record of the metadata table,
// so that every node of a cluster on one table refuses it: a record per
// ended session, named by the SHA-256 of the session's login part (the
// part of the cookie value its idle deadline does not change; the record
// cannot be replayed as a session) and holding the session's expiry, past
// which the session is refused anyway and the record is deleted. A node
// keeps the records in memory and reads them again when they are older
// than TokenRefresh, as it does the API tokens: a session ended on one
// node is refused by every node within that delay, at once by the node
// that ended it. This is the revocation list of OAuth's token revocation
// (RFC 7009) kept as small as the sessions that may still be live.

// recordEndedSession is the record kind of ended console sessions, by the
// hex SHA-256 of the cookie value.
const recordEndedSession = "server.session_ended"

// endedSession is an ended session as stored.
type endedSession struct {
	Expires time.Time `json:"expires"`
}

// endedSessions is a node's copy of the ended sessions. It is safe for
// concurrent use.
type endedSessions struct {
	db *snapshot.DB

	// mu guards the fields below; held across a reload, as apiTokens does.
	mu     sync.Mutex
	ended  map[string]time.Time // by record name: the session's expiry
	loaded time.Time            // zero: never loaded
}

func newEndedSessions(db *snapshot.DB) *endedSessions {
	return &endedSessions{db: db}
}

// sessionRecordName is the record name of a session's login part.
func sessionRecordName(login string) string {
	d := sha256.Sum256([]byte(login))
	return hex.EncodeToString(d[:])
}

// isEnded reports whether the session of the login part was ended,
// reading the records again when the copy is older than TokenRefresh. An
// error is the store's.
func (e *endedSessions) isEnded(ctx context.Context, login string, now time.Time) (bool, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.loaded.IsZero() || now.Sub(e.loaded) >= TokenRefresh || now.Before(e.loaded) {
		if err := e.reloadLocked(ctx, now); err != nil {
			return false, err
		}
	}
	_, ok := e.ended[sessionRecordName(login)]
	return ok, nil
}

// reloadLocked reads every ended session, deleting those past their
// expiry: those sessions are refused by their expiry already.
func (e *endedSessions) reloadLocked(ctx context.Context, now time.Time) error {
	recs, err := e.db.ListRecords(ctx, recordEndedSession)
	if err != nil {
		return err
	}
	m := make(map[string]time.Time, len(recs))
	for _, r := range recs {
		var s endedSession
		if err := json.Unmarshal(r.Value, &s); err != nil {
			return fmt.Errorf("%w: ended session record %q: %v", snapshot.ErrCorrupt, r.Name, err)
		}
		if !now.Before(s.Expires) {
			// Another node may delete it first; the condition makes that
			// harmless.
			if _, err := e.db.CompareAndSetRecord(ctx, recordEndedSession, r.Name, r.Value, nil); err != nil {
				return err
			}
			continue
		}
		m[r.Name] = s.Expires
	}
	e.ended, e.loaded = m, now
	return nil
}

// end records the session of the login part as ended until its expiry.
func (e *endedSessions) end(ctx context.Context, login string, expires time.Time) error {
	b, err := json.Marshal(endedSession{Expires: expires.UTC()})
	if err != nil {
		return err
	}
	name := sessionRecordName(login)
	// Conditional, so that it is allowed on a read-only table as the
	// records that coordinate nodes are; false: ended already.
	if _, err := e.db.CompareAndSetRecord(ctx, recordEndedSession, name, nil, b); err != nil {
		return err
	}
	e.mu.Lock()
	if e.ended != nil {
		e.ended[name] = expires
	}
	e.mu.Unlock()
	return nil
}
