package adapters

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/snapstore/snapstore/api"
	"github.com/snapstore/snapstore/snapshot"
)

// SecretsRotation reports what Service.RotateSecrets rewrote (E5).
type SecretsRotation struct {
	// KeyID is the id of the key every stored secret is now encrypted
	// with (the first configured key).
	KeyID string `json:"key_id"`
	// Secrets counts the secret option values encrypted again: those in
	// clear and those encrypted with another key.
	Secrets int `json:"secrets"`
	// Connections counts the stored connections rewritten.
	Connections int `json:"connections"`
}

// maxRotateAttempts bounds the conditional writes of one record that
// lose to a concurrent replace before RotateSecrets gives up on it.
const maxRotateAttempts = 5

// RotateSecrets encrypts again with the first key every stored secret of
// an API connection that is in clear or encrypted with another key (E5),
// each record with a conditional write (snapshot.DB.CompareAndSetRecord)
// so that a definition replaced meanwhile, on this node or another of a
// shared store, is never overwritten: the write is retried on what the
// record holds then. Safe to repeat: a second call rewrites nothing. A
// record it cannot rewrite (encrypted with a key that is not configured:
// ErrSecretKeyUnknown) is skipped and named in the error, after the
// others are rewritten. snapshot.ErrReadOnly on a read-only process.
func (s *Service) RotateSecrets(ctx context.Context) (SecretsRotation, error) {
	var out SecretsRotation
	if s.db.ReadOnly() {
		return out, fmt.Errorf("%w: secrets are rotated by a process that writes the store", snapshot.ErrReadOnly)
	}
	first, err := s.secrets.firstKey()
	if err != nil {
		return out, err
	}
	out.KeyID = first.id
	recs, err := s.db.ListRecords(ctx, recordConnection)
	if err != nil {
		return out, fmt.Errorf("adapters: rotating secrets: %w", err)
	}
	var errs []error
	for _, r := range recs {
		n, err := s.rotateRecord(ctx, r.Name, r.Value)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if n > 0 {
			out.Secrets += n
			out.Connections++
		}
	}
	s.log.Info("stored secrets encrypted again", "key_id", out.KeyID, "secrets", out.Secrets, "connections", out.Connections, "failed", len(errs))
	return out, errors.Join(errs...)
}

// rotateRecord rewrites the stored connection name, which holds value,
// with its secrets encrypted with the first key, and returns how many it
// encrypted again; a conditional write that loses rereads the record and
// tries again.
func (s *Service) rotateRecord(ctx context.Context, name string, value []byte) (int, error) {
	for attempt := 1; ; attempt++ {
		next, n, err := s.resealRecord(name, value)
		if err != nil || n == 0 {
			return 0, err
		}
		ok, err := s.db.CompareAndSetRecord(ctx, recordConnection, name, value, next)
		if err != nil {
			return 0, fmt.Errorf("adapters: rotating the secrets of connection %q: %w", name, err)
		}
		if ok {
			return n, nil
		}
		if attempt == maxRotateAttempts {
			return 0, fmt.Errorf("adapters: rotating the secrets of connection %q: it changed %d times meanwhile; run the rotation again", name, attempt)
		}
		value, err = s.db.GetRecord(ctx, recordConnection, name)
		if errors.Is(err, snapshot.ErrRecordNotFound) {
			return 0, nil // dropped meanwhile
		}
		if err != nil {
			return 0, fmt.Errorf("adapters: rotating the secrets of connection %q: %w", name, err)
		}
	}
}

// resealRecord returns the stored connection record value with its
// secrets encrypted with the first key, and how many it encrypted again
// (0: nothing to rewrite, next is nil).
func (s *Service) resealRecord(name string, value []byte) (next []byte, n int, err error) {
	var rec defRecord[api.Connection]
	dec := json.NewDecoder(bytes.NewReader(value))
	dec.UseNumber() // options written back as they were read
	if err := dec.Decode(&rec); err != nil {
		return nil, 0, fmt.Errorf("adapters: rotating the secrets of connection %q: unreadable record: %w", name, err)
	}
	if n, err = s.secrets.reseal(rec.Spec); err != nil || n == 0 {
		return nil, 0, err
	}
	if next, err = json.Marshal(rec); err != nil {
		return nil, 0, fmt.Errorf("adapters: encoding connection %q: %w", name, err)
	}
	return next, n, nil
}

// logClearSecrets warns with how many stored secrets are in clear,
// stored before they were encrypted (E5 encrypts them); it logs nothing
// when there are none.
func (s *Service) logClearSecrets(ctx context.Context) error {
	recs, err := s.db.ListRecords(ctx, recordConnection)
	if err != nil {
		return fmt.Errorf("adapters: counting stored secrets: %w", err)
	}
	n := 0
	for _, r := range recs {
		var rec defRecord[api.Connection]
		if json.Unmarshal(r.Value, &rec) == nil {
			n += clearSecrets(rec.Spec)
		}
	}
	if n > 0 {
		s.log.Warn("stored secrets not encrypted yet; snapstore secrets rotate encrypts them", "count", n)
	}
	return nil
}
