package notify

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The headers of a webhook request. A request is signed as Stripe and
// GitHub sign theirs: the signature is HMAC-SHA256, keyed with the
// webhook's secret, of the timestamp header's value, a dot, and the body
// as sent; a receiver recomputes it, compares in constant time, and
// refuses a timestamp too far from its clock (a replay).
const (
	// HeaderSignature is "sha256=" and the signature in lower-case hex.
	HeaderSignature = "X-Snapstore-Signature"
	// HeaderTimestamp is the signing time in Unix seconds.
	HeaderTimestamp = "X-Snapstore-Timestamp"
	// HeaderEvent is the event's name.
	HeaderEvent = "X-Snapstore-Event"
	// HeaderDelivery is the event's id, the same on every attempt.
	HeaderDelivery = "X-Snapstore-Delivery"
)

// DefaultTolerance is the largest difference between a request's
// timestamp and the receiver's clock that Verify accepts when given 0.
const DefaultTolerance = 5 * time.Minute

// Errors of Verify.
var (
	// ErrNoSignature: the signature or timestamp header is missing or
	// malformed.
	ErrNoSignature = errors.New("notify: no valid signature header")
	// ErrBadSignature: the signature does not match the body.
	ErrBadSignature = errors.New("notify: signature does not match")
	// ErrStale: the timestamp is outside the tolerance.
	ErrStale = errors.New("notify: timestamp outside the tolerance")
)

// Sign returns the value of HeaderSignature for body signed at
// timestamp (HeaderTimestamp's value) with secret.
func Sign(secret []byte, timestamp string, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(timestamp))
	m.Write([]byte{'.'})
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// Verify checks the signature of a request with header h and body as
// received, against secret, at time now: the procedure a receiver
// follows (docs/notifications.md). tolerance 0 means DefaultTolerance.
func Verify(secret []byte, h http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	if tolerance <= 0 {
		tolerance = DefaultTolerance
	}
	ts, sig := h.Get(HeaderTimestamp), h.Get(HeaderSignature)
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || !strings.HasPrefix(sig, "sha256=") {
		return ErrNoSignature
	}
	if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return ErrStale
	}
	if !hmac.Equal([]byte(sig), []byte(Sign(secret, ts, body))) {
		return ErrBadSignature
	}
	return nil
}
