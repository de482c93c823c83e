package snapshot

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/snapstore/snapstore/store"
)

// leaseRecord is the writer lease (W1), JSON in the metadata table.
type leaseRecord struct {
	Owner   string    `json:"owner"`
	Expires time.Time `json:"expires"`
}

// newOwnerID names this DB in the lease: host, pid and 8 random bytes, so
// that two DBs of one process differ too.
func newOwnerID() string {
	host, _ := os.Hostname()
	var b [8]byte
	rand.Read(b[:])
	return fmt.Sprintf("%s/%d/%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

func (db *DB) readLease(ctx context.Context) (leaseRecord, bool, error) {
	cells, err := db.st.Get(ctx, db.meta, keyLease, store.ReadOptions{MaxVersions: 1})
	if err != nil {
		return leaseRecord{}, false, err
	}
	for _, c := range cells {
		if c.Kind == store.KindPut && bytes.Equal(c.Column, colV) {
			var l leaseRecord
			if err := json.Unmarshal(c.Value, &l); err != nil {
				return leaseRecord{}, false, fmt.Errorf("%w: writer lease: %v", ErrCorrupt, err)
			}
			return l, true, nil
		}
	}
	return leaseRecord{}, false, nil
}

func (db *DB) writeLease(ctx context.Context, expires time.Time) error {
	v, err := json.Marshal(leaseRecord{Owner: db.owner, Expires: expires.UTC()})
	if err != nil {
		return err
	}
	b := &store.Batch{Table: db.meta, Sync: true}
	b.Put(keyLease, colV, 0, v)
	return db.st.Apply(ctx, b)
}

// takeLease takes the writer lease at Open (W1): refused while another
// owner's lease has not expired; written, then read back after a settle
// delay, so that of two writers started together the one overwritten
// sees it and gives up.
func (db *DB) takeLease(ctx context.Context) error {
	ttl := db.opts.WriterLease
	l, ok, err := db.readLease(ctx)
	if err != nil {
		return fmt.Errorf("reading the writer lease: %w", err)
	}
	now := db.opts.now()
	if ok && l.Owner != db.owner && now.Before(l.Expires) {
		return fmt.Errorf("%w: %s holds it until %s", ErrWriterLeaseHeld, l.Owner, l.Expires.Format(time.RFC3339))
	}
	if err := db.writeLease(ctx, now.Add(ttl)); err != nil {
		return fmt.Errorf("writing the writer lease: %w", err)
	}
	select {
	case <-time.After(min(ttl/10, 500*time.Millisecond)):
	case <-ctx.Done():
		return ctx.Err()
	}
	l, ok, err = db.readLease(ctx)
	if err != nil {
		return fmt.Errorf("reading the writer lease back: %w", err)
	}
	if !ok || l.Owner != db.owner {
		return fmt.Errorf("%w: %s took it at the same time", ErrWriterLeaseHeld, l.Owner)
	}
	db.leaseUntil.Store(now.Add(ttl).UnixNano())
	db.stopc, db.donec = make(chan struct{}), make(chan struct{})
	go db.renewLease()
	return nil
}

// renewLease renews the lease every third of its length until Close. A
// renewal that finds another owner in the record loses the lease for good
// (the other process took it after ours expired); a failed renewal keeps
// the old expiry, so writes stop when it passes (writable), and is retried
// every second, so that writes resume soon after the store returns.
func (db *DB) renewLease() {
	defer close(db.donec)
	ttl := db.opts.WriterLease
	wait := ttl / 3
	for {
		select {
		case <-db.stopc:
			return
		case <-time.After(wait):
		}
		ctx, cancel := context.WithTimeout(context.Background(), ttl/3)
		now := db.opts.now()
		l, ok, err := db.readLease(ctx)
		switch {
		case err != nil:
		case ok && l.Owner != db.owner:
			db.leaseLost.Store(true)
			db.logger.Error("writer lease taken by another process: this process no longer writes", "owner", l.Owner)
			cancel()
			return
		default:
			err = db.writeLease(ctx, now.Add(ttl))
		}
		cancel()
		if err != nil {
			db.logger.Warn("renewing the writer lease", "err", err)
			wait = min(time.Second, ttl/3)
			continue
		}
		db.leaseUntil.Store(now.Add(ttl).UnixNano())
		wait = ttl / 3
	}
}

// releaseLease stops the renewals and deletes the record when it is still
// ours, so that the next writer need not wait for it to expire.
func (db *DB) releaseLease() error {
	if db.stopc == nil {
		return nil
	}
	close(db.stopc)
	<-db.donec
	if db.leaseLost.Load() {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, ok, err := db.readLease(ctx)
	if err != nil || !ok || l.Owner != db.owner {
		return err
	}
	b := &store.Batch{Table: db.meta, Sync: true}
	b.DeleteVersion(keyLease, colV, 0)
	return db.st.Apply(ctx, b)
}
