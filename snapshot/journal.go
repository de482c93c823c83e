package snapshot

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/snapstore/snapstore/store"
)

// A journal is an append-only, time-ordered list of entries of one kind
// kept in the metadata table for packages above snapshot (the server's
// audit trail). Each entry is a row of its own, keyed by its time reversed
// and a random suffix (keys.go), so that:
//
//   - appends never read: processes sharing a store (the nodes of a
//     cluster on HBase) append to one journal without coordination, and
//     two entries of the same nanosecond do not collide;
//   - a scan from the start of the journal's prefix reads the newest entry
//     first, and a time range is a key range;
//   - trimming entries older than a time is a scan of the key range past
//     that time and a delete of each row.

// JournalEntry is one entry of a journal.
type JournalEntry struct {
	// ID identifies the entry (32 hex digits): a position for
	// JournalQuery.After, unique across processes.
	ID string
	// Time is the time the entry was appended with, to the nanosecond.
	Time time.Time
	// Value is the entry as appended; the caller owns it.
	Value []byte
}

// JournalQuery selects entries of a journal, newest first.
type JournalQuery struct {
	// Since and Until bound the entries' times, both inclusive; zero
	// means unbounded.
	Since, Until time.Time
	// After continues a listing after the entry of this ID (the last one
	// of the previous page); empty starts at the newest.
	After string
	// Limit is the most entries returned; it must be positive.
	Limit int
	// Match, when set, keeps only the entries whose value it accepts; it
	// must not keep value.
	Match func(value []byte) bool
	// MaxScan, when positive, bounds the entries a page reads: once it
	// has read that many without filling the page, the page ends there
	// (with fewer entries than Limit, maybe none) and next continues
	// after the last entry read. It keeps a selective Match cheap.
	MaxScan int
}

// journalIDLen is the length of an entry's key after its kind's prefix:
// the reversed time (8 bytes) and the random suffix (8 bytes).
const journalIDLen = 16

// validJournalKind reports ErrInvalidArgument for a kind that cannot
// name a journal: empty, or holding a NUL (the key's separator).
func validJournalKind(kind string) error {
	if kind == "" || strings.IndexByte(kind, 0) >= 0 {
		return fmt.Errorf("%w: journal kind must be non-empty without NUL", ErrInvalidArgument)
	}
	return nil
}

// AppendJournal appends an entry of value at time at to the journal kind
// and returns its ID. It is durable when it returns. Like
// CompareAndSetRecord it is allowed on a read-only DB: an entry is a row
// of its own that no other write touches.
func (db *DB) AppendJournal(ctx context.Context, kind string, at time.Time, value []byte) (string, error) {
	if err := db.check(); err != nil {
		return "", err
	}
	if err := validJournalKind(kind); err != nil {
		return "", err
	}
	var suffix [8]byte
	if _, err := rand.Read(suffix[:]); err != nil {
		return "", fmt.Errorf("snapshot: appending to journal %s: %w", kind, err)
	}
	id := binary.BigEndian.AppendUint64(nil, reverseTime(at))
	id = append(id, suffix[:]...)
	b := &store.Batch{Table: db.meta, Sync: true}
	b.Put(append(journalPrefix(kind), id...), colV, 0, append([]byte{}, value...))
	if err := db.st.Apply(ctx, b); err != nil {
		return "", fmt.Errorf("snapshot: appending to journal %s: %w", kind, err)
	}
	return hex.EncodeToString(id), nil
}

// JournalPage returns the entries of journal kind that q selects, newest
// first, at most q.Limit, and next: "" when no entry remains, else the
// After of the next page (the ID of the last entry read). ErrInvalidArgument
// for a bad kind, limit or After.
func (db *DB) JournalPage(ctx context.Context, kind string, q JournalQuery) (page []JournalEntry, next string, err error) {
	if err := db.check(); err != nil {
		return nil, "", err
	}
	if err := validJournalKind(kind); err != nil {
		return nil, "", err
	}
	if q.Limit <= 0 {
		return nil, "", fmt.Errorf("%w: journal page limit %d", ErrInvalidArgument, q.Limit)
	}
	p := journalPrefix(kind)
	start, end := p, prefixEnd(p)
	if !q.Until.IsZero() {
		start = binary.BigEndian.AppendUint64(append([]byte{}, p...), reverseTime(q.Until))
	}
	if !q.Since.IsZero() {
		if r := reverseTime(q.Since); r < math.MaxUint64 {
			end = binary.BigEndian.AppendUint64(append([]byte{}, p...), r+1)
		}
	}
	if q.After != "" {
		id, err := hex.DecodeString(q.After)
		if err != nil || len(id) != journalIDLen {
			return nil, "", fmt.Errorf("%w: journal position %q", ErrInvalidArgument, q.After)
		}
		// The first key after the entry's: its row with a zero byte added.
		if after := append(append(append([]byte{}, p...), id...), 0); bytes.Compare(after, start) > 0 {
			start = after
		}
	}
	if bytes.Compare(start, end) >= 0 {
		return nil, "", nil
	}
	it, err := db.st.Scan(ctx, db.meta, store.ScanOptions{ReadOptions: store.ReadOptions{Columns: [][]byte{colV}, MaxVersions: 1}, Start: start, End: end})
	if err != nil {
		return nil, "", fmt.Errorf("snapshot: reading journal %s: %w", kind, err)
	}
	var last []byte // the ID of the last entry read
	scanned := 0
	for it.Next() {
		c := it.Cell()
		if c.Kind != store.KindPut || !bytes.Equal(c.Column, colV) || len(c.Row) != len(p)+journalIDLen {
			continue
		}
		id := c.Row[len(p):]
		if len(page) == q.Limit || q.MaxScan > 0 && scanned == q.MaxScan {
			next = hex.EncodeToString(last)
			break
		}
		scanned++
		last = append(last[:0], id...)
		if q.Match != nil && !q.Match(c.Value) {
			continue
		}
		page = append(page, JournalEntry{
			ID:    hex.EncodeToString(id),
			Time:  unreverseTime(binary.BigEndian.Uint64(id)),
			Value: append([]byte{}, c.Value...),
		})
	}
	if err := it.Close(); err != nil {
		return nil, "", fmt.Errorf("snapshot: reading journal %s: %w", kind, err)
	}
	return page, next, nil
}

// journalTrimBatch is how many entries TrimJournal deletes per batch.
const journalTrimBatch = 512

// TrimJournal deletes the entries of journal kind older than before and
// returns how many it deleted. Allowed on a read-only DB, as AppendJournal
// is; several processes may trim at once (a delete of a deleted row is a
// no-op).
func (db *DB) TrimJournal(ctx context.Context, kind string, before time.Time) (int, error) {
	if err := db.check(); err != nil {
		return 0, err
	}
	if err := validJournalKind(kind); err != nil {
		return 0, err
	}
	p := journalPrefix(kind)
	r := reverseTime(before)
	if r == math.MaxUint64 {
		return 0, nil // nothing is older than the oldest time
	}
	start := binary.BigEndian.AppendUint64(append([]byte{}, p...), r+1)
	it, err := db.st.Scan(ctx, db.meta, store.ScanOptions{ReadOptions: store.ReadOptions{Columns: [][]byte{colV}, MaxVersions: 1}, Start: start, End: prefixEnd(p)})
	if err != nil {
		return 0, fmt.Errorf("snapshot: trimming journal %s: %w", kind, err)
	}
	n := 0
	b := &store.Batch{Table: db.meta, Sync: true}
	flush := func() error {
		if b.Len() == 0 {
			return nil
		}
		err := db.st.Apply(ctx, b)
		b = &store.Batch{Table: db.meta, Sync: true}
		return err
	}
	for it.Next() {
		c := it.Cell()
		b.DeleteVersion(append([]byte{}, c.Row...), colV, c.Timestamp)
		n++
		if b.Len() >= journalTrimBatch {
			if err := flush(); err != nil {
				it.Close()
				return 0, fmt.Errorf("snapshot: trimming journal %s: %w", kind, err)
			}
		}
	}
	if err := it.Close(); err != nil {
		return 0, fmt.Errorf("snapshot: trimming journal %s: %w", kind, err)
	}
	if err := flush(); err != nil {
		return 0, fmt.Errorf("snapshot: trimming journal %s: %w", kind, err)
	}
	return n, nil
}

// reverseTime maps t to a key part that sorts newer times first: the
// complement of its Unix nanoseconds offset so that every time in
// time.Time's UnixNano range maps to one value.
func reverseTime(t time.Time) uint64 {
	return math.MaxUint64 - (uint64(t.UnixNano()) ^ 1<<63)
}

// unreverseTime is reverseTime's inverse.
func unreverseTime(r uint64) time.Time {
	return time.Unix(0, int64((math.MaxUint64-r)^1<<63)).UTC()
}
