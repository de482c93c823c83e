package snapshot

// Carried ranges of a partitioned run: the coordinator compared the
// source's checksums of key ranges with those the current version's
// digest recorded, and reads and sends only the rows of the ranges that
// differ. Every partition's writer then compares only those ranges with
// the previous version (D5: its rows there that were not sent get their
// row delete marker) and passes over the others, whose rows stay as they
// are, writing nothing for them, as Run.Carry does. A range is of row
// keys, so that it crosses every partition whatever the partition key.
//
// Nobody has the count and checksum (D6) of a carried range's rows in one
// partition, so the writers count what they compare instead: each
// partition reports the rows of the previous version it passed outside
// the carried ranges, and their checksum (ComparedRows). The previous
// version's counts less all partitions' compared rows are the carried
// rows, which Commit adds to the run's counts and checksum; their count
// must be what the coordinator's digest says the carried ranges hold, or
// the run fails (a writer that did not pass the ranges over, as a node
// that knows nothing of them, reports no compared rows and fails it too).

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
)

// KeyRange is the row keys after After (nil: from the first) up to and
// including Through, encoded as AppendKey encodes a whole key.
type KeyRange struct {
	After   []byte `json:"after,omitempty"`
	Through []byte `json:"through"`
}

// ComparedRows is what the writer of a partition that carries ranges over
// compared with the previous version: the rows of that version it passed
// outside the ranges, and their checksum (D6, hex as RunStats.Checksum).
type ComparedRows struct {
	Rows     int64  `json:"rows"`
	Checksum string `json:"checksum"`
}

// carriedRanges is a PartitionWriter's carried ranges and what it
// compared outside them.
type carriedRanges struct {
	ahead []KeyRange // the ranges not yet passed, in key order
	rows  int64      // rows of the previous version compared
	sum   uint64     // their checksum
}

// checkKeyRanges checks that ranges ascend and do not overlap, each
// non-empty.
func checkKeyRanges(ranges []KeyRange) error {
	var last []byte
	for i, kr := range ranges {
		switch {
		case kr.Through == nil:
			return fmt.Errorf("%w: carried range %d has no last key", ErrInvalidArgument, i)
		case kr.After != nil && bytes.Compare(kr.After, kr.Through) >= 0:
			return fmt.Errorf("%w: carried range %d is empty", ErrInvalidArgument, i)
		case i > 0 && (kr.After == nil || bytes.Compare(kr.After, last) < 0):
			return fmt.Errorf("%w: carried range %d begins before the end of the one before it", ErrInvalidArgument, i)
		}
		last = kr.Through
	}
	return nil
}

// carryBefore passes partition p's walk over the carried ranges that end
// before key, a key Put gives; ErrInvalidArgument when key lies in the
// next one (the coordinator sends no row of a carried range).
func (r *Run) carryBefore(ctx context.Context, p *runPart, key []byte, vals []Value) error {
	cr := r.carried
	for len(cr.ahead) > 0 && bytes.Compare(cr.ahead[0].Through, key) < 0 {
		if err := r.passCarried(ctx, p); err != nil {
			return err
		}
	}
	if len(cr.ahead) > 0 && (cr.ahead[0].After == nil || bytes.Compare(key, cr.ahead[0].After) > 0) {
		return fmt.Errorf("%w: row %s lies in a range the run carries over", ErrInvalidArgument, r.putKeyText(vals))
	}
	return nil
}

// passCarried passes partition p's walk over the next carried range.
func (r *Run) passCarried(ctx context.Context, p *runPart) error {
	kr := r.carried.ahead[0]
	if p.lastKey != nil && bytes.Compare(kr.Through, p.lastKey) <= 0 {
		return fmt.Errorf("%w: carrying rows up to a key not after the last one", ErrInvalidArgument)
	}
	if err := r.passRange(ctx, p, kr.After, kr.Through); err != nil {
		return err
	}
	r.carried.ahead = r.carried.ahead[1:]
	return nil
}

// compared counts a row of the previous version that the walk passed
// outside the carried ranges, in a writer that carries ranges over.
func (r *Run) compared(prev *resolvedRow) {
	if r.carried == nil {
		return
	}
	r.carried.rows++
	r.carried.sum += r.prevHash(prev)
}

// finishCarried passes partition p's walk over the carried ranges left,
// ahead of the delete markers of the rows after the last key.
func (r *Run) finishCarried(ctx context.Context, p *runPart) error {
	for r.carried != nil && len(r.carried.ahead) > 0 {
		if err := r.passCarried(ctx, p); err != nil {
			return err
		}
	}
	return nil
}

// comparedRows is the report's ComparedRows, nil when the writer carries
// nothing over.
func (r *Run) comparedRows() *ComparedRows {
	if r.carried == nil {
		return nil
	}
	return &ComparedRows{Rows: r.carried.rows, Checksum: strconv.FormatUint(r.carried.sum, 16)}
}

// setCarried makes a PartitionWriter carry ranges over (PartitionSpec.
// Carried): it needs a previous version of the run's schema, which the
// ranges are of.
func (r *Run) setCarried(ranges []KeyRange) error {
	if len(ranges) == 0 {
		return nil
	}
	if err := checkKeyRanges(ranges); err != nil {
		return err
	}
	if r.prev == nil || !sameSchema(r.prev.Schema, r.opts.Schema) {
		return fmt.Errorf("%w: carrying ranges over needs a previous version of the run's schema", ErrInvalidArgument)
	}
	r.carried = &carriedRanges{ahead: ranges}
	return nil
}

// partitionCarry is what a PartitionedRun carries over (Carry).
type partitionCarry struct {
	rows int64  // the rows of the carried ranges, as the digest has them
	cmp  int64  // the reports' compared rows
	sum  uint64 // and their checksum
}

// Carry declares that the run's partitions carry ranges of version over
// (PartitionSpec.Carried, which the coordinator gives every partition's
// writer), holding rows rows: every report must then say what its
// partition compared (ComparedRows), and Commit adds the carried rows to
// the run's counts and checksum. ErrRunClosed when version is not the
// one the run compares with.
func (pr *PartitionedRun) Carry(version, rows int64) error {
	if v := pr.Version(); v == 0 || v != version {
		return fmt.Errorf("%w: the carried ranges are of version %d of %s, the run compares with %d", ErrRunClosed, version, pr.r.ds.name, v)
	}
	if pr.n > 0 {
		return fmt.Errorf("%w: Carry after a partition reported", ErrInvalidArgument)
	}
	pr.carry = &partitionCarry{rows: rows}
	return nil
}

// addCompared adds a report's compared rows when the run carries ranges
// over.
func (pr *PartitionedRun) addCompared(rep PartitionReport) error {
	if pr.carry == nil {
		return nil
	}
	if rep.Compared == nil {
		return fmt.Errorf("%w: partition %d reports no compared rows, its writer did not carry the run's ranges over", ErrInvalidArgument, rep.Partition)
	}
	sum, err := strconv.ParseUint(rep.Compared.Checksum, 16, 64)
	if err != nil {
		return fmt.Errorf("%w: partition %d: compared checksum %q", ErrInvalidArgument, rep.Partition, rep.Compared.Checksum)
	}
	pr.carry.cmp += rep.Compared.Rows
	pr.carry.sum += sum
	return nil
}

// addCarried adds the carried rows to the run's counts and checksum: the
// previous version's less what the partitions compared; their value
// shapes are the previous version's (shapes.go: the rows a run keeps
// without putting them).
func (pr *PartitionedRun) addCarried() error {
	c, prev := pr.carry, pr.r.prev
	if c == nil {
		return nil
	}
	sum, err := strconv.ParseUint(prev.Stats.Checksum, 16, 64)
	if err != nil {
		return fmt.Errorf("%w: the checksum %q of version %d: %w", ErrCorrupt, prev.Stats.Checksum, prev.Version, err)
	}
	rows := prev.Stats.Rows - c.cmp
	if rows != c.rows {
		return fmt.Errorf("%w: the partitions compared %d of the %d rows of version %d of %s, leaving %d to carry over; the carried ranges hold %d",
			ErrCorrupt, c.cmp, prev.Stats.Rows, prev.Version, pr.r.ds.name, rows, c.rows)
	}
	s := &pr.r.stats
	s.Rows += rows
	s.Unchanged += rows
	pr.r.sum += sum - c.sum
	if rows > 0 {
		pr.r.shapes.inherit(pr.r.opts.Schema, prev)
	}
	pr.r.publishStats()
	return nil
}
