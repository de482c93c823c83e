package snapshot

// Reader pins in the store (doc.go G8). Where other processes share the
// store, a Reader of one process is unknown to the GC of another, so a
// read that may outlast what retention keeps records its version in the
// store, under a lease it renews, and GC on any process keeps every
// version a live pin names. The rule is Tephra's (GC removes only what no
// reader in progress can see) with HBase's scanner leases: a pin whose
// lease ran out counts for nothing, so the pins of a process that died
// vanish by themselves, and nothing but the store holds them.

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// pinKind is the record kind (package records) of the pins of dataset
// name; a pin's record name is its owner's (the DB's owner id) and a
// sequence number, its value a pinRecord.
func pinKind(dataset string) string { return "pin/" + dataset }

// pinRecord is the stored value of a pin.
type pinRecord struct {
	Version int64     `json:"version"`
	Expires time.Time `json:"expires"`
	Owner   string    `json:"owner"`
}

// pin is one Reader's pin. Until its record is first written (deadline),
// it costs nothing; from then on a timer renews the record every third of
// the lease until end.
type pin struct {
	db      *DB
	dataset string
	name    string
	version int64
	// deadline is when the record must exist: a lease before retention's
	// TTL may expire the version (G8).
	deadline time.Time

	mu      sync.Mutex
	timer   *time.Timer
	written bool // a record is (or may be) in the store
	done    bool // ended: nothing more is written
}

// pinSet is the pins of a DB's open Readers, so that Close can end them.
type pinSet struct {
	seq atomic.Int64
	mu  sync.Mutex
	m   map[*pin]struct{}
}

// usesPins reports whether this DB's Readers pin their versions in the
// store: where other processes may open it (G8), or where a test says so.
func (db *DB) usesPins() bool { return !db.processLocal || db.opts.pinsLocal }

// pinLease returns the pin lease: Options.PinLease, by default the slot
// lease.
func (db *DB) pinLease() time.Duration {
	if db.opts.PinLease > 0 {
		return db.opts.PinLease
	}
	return db.opts.SlotLease
}

// pinRead pins the version of r, a Reader just opened whose dataset keeps
// versions for ttl (0: forever), as G8 says: nothing while retention keeps
// the version longer than a lease from now (the record is written when
// that no longer holds and r is still open); else the record is written
// now, and the dataset's row then read again, so that a GC that expired
// the version before the record counted is seen (ErrVersionNotKept) and a
// GC after it finds the record.
func (db *DB) pinRead(ctx context.Context, r *Reader, ttl time.Duration) error {
	if !db.usesPins() || ttl == 0 {
		return nil
	}
	lease := db.pinLease()
	p := &pin{db: db, dataset: r.ds.name, version: r.info.Version,
		name:     db.owner + "/" + strconv.FormatInt(db.pins.seq.Add(1), 10),
		deadline: r.info.CommittedAt.Add(ttl - lease)}
	db.pins.mu.Lock()
	if db.pins.m == nil {
		db.pins.m = map[*pin]struct{}{}
	}
	db.pins.m[p] = struct{}{}
	db.pins.mu.Unlock()
	r.pin = p
	now := db.opts.now()
	if now.Before(p.deadline) {
		p.mu.Lock()
		p.timer = time.AfterFunc(p.deadline.Sub(now), p.renew)
		p.mu.Unlock()
		return nil
	}
	p.mu.Lock()
	err := p.writeLocked(ctx, now.Add(lease))
	if err == nil {
		p.timer = time.AfterFunc(lease/3, p.renew)
	}
	p.mu.Unlock()
	if err != nil {
		return fmt.Errorf("snapshot: pinning %s version %d: %w", p.dataset, p.version, err)
	}
	st, _, ok, err := db.readRow(ctx, p.dataset)
	switch {
	case err != nil:
		return err
	case !ok || st.Dropping != nil:
		return fmt.Errorf("%w: %q", ErrDatasetNotFound, p.dataset)
	case !st.kept(p.version):
		return versionNotKept(p.dataset, p.version, st.Current)
	}
	return nil
}

// writeLocked writes the pin's record with expiry expires; p.mu is held.
func (p *pin) writeLocked(ctx context.Context, expires time.Time) error {
	b, err := json.Marshal(pinRecord{Version: p.version, Expires: expires, Owner: p.db.owner})
	if err != nil {
		return err
	}
	p.written = true
	return p.db.rec.Put(ctx, pinKind(p.dataset), p.name, b)
}

// renew writes the record with a new lease and schedules the next
// renewal, a third of the lease later, so that one that fails is retried
// twice before the lease ends.
func (p *pin) renew() {
	lease := p.db.pinLease()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), lease/3)
	defer cancel()
	if err := p.writeLocked(ctx, p.db.opts.now().Add(lease)); err != nil {
		p.db.logger.Warn("renewing a reader's pin", "dataset", p.dataset, "version", p.version, "err", err)
	}
	p.timer = time.AfterFunc(lease/3, p.renew)
}

// end ends the pin at Reader.Close. A Reader that handed out a page token
// none of its own scans continued (linger) leaves the version pinned for
// one more lease, so that the next page, on whichever process, finds it
// kept: the record is written once more with that expiry when retention
// might expire the version before then, and left to lapse. Otherwise a record written is deleted.
func (p *pin) end(linger bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done {
		return
	}
	p.done = true
	if p.timer != nil {
		p.timer.Stop()
	}
	p.db.pins.mu.Lock()
	delete(p.db.pins.m, p)
	p.db.pins.mu.Unlock()
	lease := p.db.pinLease()
	ctx, cancel := context.WithTimeout(context.Background(), lease/3)
	defer cancel()
	now := p.db.opts.now()
	var err error
	switch {
	case linger && (p.written || !now.Add(lease).Before(p.deadline)):
		err = p.writeLocked(ctx, now.Add(lease))
	case p.written:
		err = p.db.rec.Delete(ctx, pinKind(p.dataset), p.name)
	}
	if err != nil {
		p.db.logger.Warn("ending a reader's pin", "dataset", p.dataset, "version", p.version, "err", err)
	}
}

// endPins ends the pins of the Readers still open when the DB closes.
func (db *DB) endPins() {
	db.pins.mu.Lock()
	var ps []*pin
	for p := range db.pins.m {
		ps = append(ps, p)
	}
	db.pins.mu.Unlock()
	for _, p := range ps {
		p.end(false)
	}
}

// pinnedVersions returns the versions of dataset name that live pins name
// at now, by any process (G8). With clean set, it deletes the records of
// pins whose lease ran out, each only if it still holds what was read, so
// that a renewal in between survives.
func (db *DB) pinnedVersions(ctx context.Context, name string, now time.Time, clean bool) (map[int64]bool, error) {
	recs, err := db.rec.List(ctx, pinKind(name))
	if err != nil {
		return nil, fmt.Errorf("snapshot: reading the pins of %s: %w", name, err)
	}
	out := map[int64]bool{}
	for _, rec := range recs {
		var pr pinRecord
		if err := json.Unmarshal(rec.Value, &pr); err != nil {
			db.logger.Warn("a pin record that does not decode counts for nothing", "dataset", name, "pin", rec.Name, "err", err)
			continue
		}
		if now.Before(pr.Expires) {
			out[pr.Version] = true
			continue
		}
		if clean {
			if _, err := db.rec.CompareAndSet(ctx, pinKind(name), rec.Name, rec.Value, nil); err != nil {
				db.logger.Warn("deleting a lapsed pin", "dataset", name, "pin", rec.Name, "err", err)
			}
		}
	}
	return out, nil
}
