package snapshot

// The writer slot of a dataset (doc.go W1, W3) and the keeper goroutine
// that renews the slots a DB holds, learns outcomes it could not learn at
// once, and finishes drops.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/snapstore/snapstore/store"
)

// DefaultSlotLease is Options.SlotLease's default.
const DefaultSlotLease = 30 * time.Second

// writerSlot is the writer slot in a dataset's row: who holds it for
// which operation, until when, and its epoch, raised each time a writer
// takes it, so that a writer whose slot was taken cannot commit (W3).
type writerSlot struct {
	// Owner names the DB holding it (newOwnerID), "" when free.
	Owner   string    `json:"owner,omitempty"`
	Op      string    `json:"op,omitempty"`
	Epoch   int64     `json:"epoch"`
	Expires time.Time `json:"expires,omitzero"`
}

// heldSlot is the writer slot this DB holds on a dataset, as it last
// wrote it; the zero value holds none.
type heldSlot struct {
	epoch   int64
	expires time.Time
	// lost is set when a read of the row found another owner (W3).
	lost bool
}

// newOwnerID names a DB in writer slots: host, pid and 8 random bytes, so
// that two DBs of one process differ too.
func newOwnerID() string {
	host, _ := os.Hostname()
	var b [8]byte
	rand.Read(b[:])
	return fmt.Sprintf("%s/%d/%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// localOwners are the owners of the DBs open on each store that only one
// process opens at a time (store.ProcessLocal), by store.
var localOwners struct {
	sync.Mutex
	m map[store.Store]map[string]bool
}

// registerLocal records db as live on its store, when the store is
// process-local; unregisterLocal forgets it at Close.
func (db *DB) registerLocal() {
	if !db.processLocal {
		return
	}
	localOwners.Lock()
	defer localOwners.Unlock()
	if localOwners.m == nil {
		localOwners.m = map[store.Store]map[string]bool{}
	}
	if localOwners.m[db.st] == nil {
		localOwners.m[db.st] = map[string]bool{}
	}
	localOwners.m[db.st][db.owner] = true
}

func (db *DB) unregisterLocal() {
	if !db.processLocal {
		return
	}
	localOwners.Lock()
	defer localOwners.Unlock()
	delete(localOwners.m[db.st], db.owner)
	if len(localOwners.m[db.st]) == 0 {
		delete(localOwners.m, db.st)
	}
}

// ownerGone reports whether owner is known to have ended: on a store only
// one process opens at a time (store.ProcessLocal), any owner but the DBs
// open on this very store, which a process that ended, or an earlier open
// of the store, recorded.
func (db *DB) ownerGone(owner string) bool {
	if db.opts.deadOwners[owner] {
		return true
	}
	if !db.processLocal {
		return false
	}
	localOwners.Lock()
	defer localOwners.Unlock()
	return !localOwners.m[db.st][owner]
}

// takeSlot makes this DB the holder of st's writer slot for op, for a
// lease from now: a change of writeRow. The slot must be free, expired
// by this DB's clock, held by a process that is gone, or this DB's own;
// else ErrRunInProgress naming the holder. A transaction left in progress
// is one of a writer that is gone (this DB runs no operation on the
// dataset, D8): it becomes invalid in the same write (txn.I5). Taking
// from another holder or from free raises the epoch.
func (db *DB) takeSlot(st *rowState, name, op string, now time.Time) error {
	s := st.Slot
	// Since when the transactions left in progress are invalid: a holder
	// whose slot expired sent no write after the expiry (W3), which is
	// where the grace before pruning them counts from (G6).
	since := now
	switch {
	case s.Owner == db.owner:
	case s.Owner == "" || db.ownerGone(s.Owner):
		st.Slot.Epoch++
	case !now.Before(s.Expires):
		st.Slot.Epoch++
		since = s.Expires
	default:
		return fmt.Errorf("%w: %s of %s by %s holds it until %s", ErrRunInProgress, s.Op, name, s.Owner, s.Expires.UTC().Format(time.RFC3339))
	}
	if ids := st.Txns.AbortAll(since); len(ids) > 0 {
		db.logger.Info("transactions of a writer that is gone are now invalid", "txns", ids, "owner", s.Owner)
	}
	st.Slot.Owner, st.Slot.Op, st.Slot.Expires = db.owner, op, now.Add(db.opts.SlotLease)
	return nil
}

// WriterBusy reports, without writing, whether a run of dataset name
// would be refused now: ErrRunInProgress, naming the holder, when a run,
// GC, rollback or drop of it is under way in this DB, or when another
// process holds its writer slot and its lease has not expired, as the
// dataset's row reads now (one read: the view may not show a slot taken
// since the last refresh); nil when the slot is free, or there is no such
// dataset. It lets a caller refuse a run before it starts one; BeginRun
// still decides, since the slot may be taken in between.
func (db *DB) WriterBusy(ctx context.Context, name string) error {
	if err := db.check(); err != nil {
		return err
	}
	db.mu.Lock()
	ds := db.datasets[name]
	db.mu.Unlock()
	if ds != nil {
		ds.mu.Lock()
		writer := ds.writer
		ds.mu.Unlock()
		if writer != "" {
			return fmt.Errorf("%w: %s of %s holds it", ErrRunInProgress, writer, name)
		}
	}
	st, _, exists, err := db.readRow(ctx, name)
	if err != nil || !exists {
		return err
	}
	s := st.Slot
	if s.Owner == "" || s.Owner == db.owner || !db.opts.now().Before(s.Expires) || db.ownerGone(s.Owner) {
		return nil
	}
	return fmt.Errorf("%w: %s of %s by %s holds it until %s", ErrRunInProgress, s.Op, name, s.Owner, s.Expires.UTC().Format(time.RFC3339))
}

// slotTakable reports whether this DB could take ds's writer slot now,
// as far as its view of the row tells (takeSlot decides).
func (db *DB) slotTakable(ds *dataset, now time.Time) bool {
	ds.mu.Lock()
	s := ds.st.Slot
	ds.mu.Unlock()
	return s.Owner == "" || s.Owner == db.owner || !now.Before(s.Expires) || db.ownerGone(s.Owner)
}

// holdsSlot returns ErrSlotLost unless st's slot is this DB's, taken at
// epoch (W3).
func (db *DB) holdsSlot(st *rowState, epoch int64) error {
	if st.Slot.Owner == db.owner && st.Slot.Epoch == epoch && epoch != 0 {
		return nil
	}
	if st.Slot.Owner == "" {
		return fmt.Errorf("%w: taken at epoch %d, the slot is free at epoch %d (released or taken over since)", ErrSlotLost, epoch, st.Slot.Epoch)
	}
	return fmt.Errorf("%w: taken at epoch %d, the slot is writer %s's at epoch %d", ErrSlotLost, epoch, st.Slot.Owner, st.Slot.Epoch)
}

// releaseSlot frees st's slot (the epoch stays).
func releaseSlot(st *rowState) { st.Slot.Owner, st.Slot.Op, st.Slot.Expires = "", "", time.Time{} }

// slotFromState records in memory the slot this DB holds after st was
// installed; ds.mu is held.
func (ds *dataset) slotFromStateLocked(owner string) {
	switch s := ds.st.Slot; {
	case s.Owner == owner && owner != "":
		ds.slot = heldSlot{epoch: s.Epoch, expires: s.Expires}
	case s.Owner == "":
		ds.slot = heldSlot{}
	case ds.slot.epoch != 0:
		ds.slot = heldSlot{lost: true}
	}
}

// slotDeadline returns how long the writes of an operation holding ds's
// slot at epoch may still be made: until the slot expires by this DB's
// clock (W3). ErrSlotLost when it is lost or expired.
func (db *DB) slotDeadline(ds *dataset, epoch int64) (time.Duration, error) {
	ds.mu.Lock()
	s := ds.slot
	ds.mu.Unlock()
	if s.lost || s.epoch != epoch {
		return 0, fmt.Errorf("%w: another writer took %s", ErrSlotLost, ds.name)
	}
	d := s.expires.Sub(db.opts.now())
	if d <= 0 {
		return 0, fmt.Errorf("%w: the slot of %s expired at %s without renewal", ErrSlotLost, ds.name, s.expires.UTC().Format(time.RFC3339))
	}
	return d, nil
}

// slotContext returns ctx bounded by the slot's deadline (W3), so that a
// write of a writer whose slot expired is never sent.
func (db *DB) slotContext(ctx context.Context, ds *dataset, epoch int64) (context.Context, context.CancelFunc, error) {
	d, err := db.slotDeadline(ds, epoch)
	if err != nil {
		return ctx, func() {}, err
	}
	ctx, cancel := context.WithTimeout(ctx, d)
	return ctx, cancel, nil
}

// startKeeper starts the keeper goroutine of a writer DB.
func (db *DB) startKeeper() {
	db.stopc, db.donec = make(chan struct{}), make(chan struct{})
	go db.keep()
}

// stopKeeper stops the keeper and waits for it.
func (db *DB) stopKeeper() {
	if db.stopc == nil {
		return
	}
	close(db.stopc)
	<-db.donec
	db.stopc = nil
}

// keep runs until stopKeeper, every keepEvery: it renews the slots this DB
// holds once a third of their lease has passed (W1), tries the outcomes
// still to be learned (dataset.pending), and finishes drops (D10).
func (db *DB) keep() {
	defer close(db.donec)
	t := time.NewTicker(db.opts.keepEvery)
	defer t.Stop()
	for {
		select {
		case <-db.stopc:
			return
		case <-t.C:
		}
		for _, ds := range db.allDatasets() {
			select {
			case <-db.stopc:
				return
			default:
			}
			db.keepDataset(ds)
		}
	}
}

func (db *DB) keepDataset(ds *dataset) {
	ctx, cancel := context.WithTimeout(context.Background(), db.opts.SlotLease)
	defer cancel()
	ds.mu.Lock()
	s, pending, dropping, writer := ds.slot, ds.pending, ds.st.Dropping != nil, ds.writer
	ds.mu.Unlock()
	if err := db.learnPending(ctx, ds); err != nil {
		db.logger.Warn("learning the outcome of a write", "dataset", ds.name, "err", err)
	}
	now := db.opts.now()
	if s.epoch != 0 && !s.lost && now.After(s.expires.Add(db.opts.SlotRenew-db.opts.SlotLease)) {
		if err := db.renewSlot(ctx, ds, s.epoch); err != nil {
			db.logger.Warn("renewing a writer slot", "dataset", ds.name, "err", err)
		}
	}
	if dropping && writer == "" && pending == nil && db.slotTakable(ds, now) {
		if err := db.finishDrop(ctx, ds); err != nil {
			db.logger.Warn("finishing a drop", "dataset", ds.name, "err", err)
		}
	}
}

// learnPending settles a write of the row whose outcome is unknown
// (fenceRow), learns the outcome ds still waits for (dataset.pending), if
// any, and frees the dataset once it is learned.
func (db *DB) learnPending(ctx context.Context, ds *dataset) error {
	if err := db.fenceRow(ctx, ds); err != nil {
		return err
	}
	ds.mu.Lock()
	pending := ds.pending
	ds.mu.Unlock()
	if pending == nil {
		return nil
	}
	if err := pending(ctx); err != nil {
		return err
	}
	ds.mu.Lock()
	ds.pending = nil
	if ds.run == nil {
		ds.writer = ""
	}
	ds.mu.Unlock()
	return nil
}

// renewSlot extends the slot this DB holds at epoch by a lease from now.
func (db *DB) renewSlot(ctx context.Context, ds *dataset, epoch int64) error {
	_, err := db.writeRow(ctx, ds, func(st *rowState) error {
		if err := db.holdsSlot(st, epoch); err != nil {
			return err
		}
		st.Slot.Expires = db.opts.now().Add(db.opts.SlotLease)
		return nil
	})
	if err != nil {
		return fmt.Errorf("snapshot: renewing the writer slot of %s: %w", ds.name, err)
	}
	return nil
}
