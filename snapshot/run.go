package snapshot

import (
	"sync"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/snapstore/snapstore/store"
	"github.com/snapstore/snapstore/txn"
)

// batchSize is the number of mutations after which a run applies a batch
// (without Sync; the commit syncs once).
const batchSize = 4096

// batchBytes bounds the bytes of row versions a run's data batch holds
// (runPart.dataBytes): a batch of wide rows (16 MB values) is handed to
// the writer after it passes this size, whatever its count of mutations,
// so a run's memory stays near writeDepth times batchBytes plus its widest
// row (run_write.go).
const batchBytes = 8 << 20

// RunOptions describe one run.
type RunOptions struct {
	// Schema is the schema of the rows the run will Put; Key must be set.
	Schema Schema
	Source SourceInfo
	// Force commits even when a guard would refuse.
	Force bool
	// VerifyUnchanged makes a Commit that finds nothing changed (no row
	// inserted, updated or deleted, the same schema) record the previous
	// version as verified instead of committing a copy of it (verify.go,
	// Run.Verified).
	VerifyUnchanged bool
}

// Run is one in-progress write of a dataset's next version: BeginRun
// starts it (run_begin.go), Put adds the source rows (run_put.go), Commit
// (run_commit.go) or Abort (run_abort.go) ends it. Not safe for
// concurrent use, except Stats.
type Run struct {
	db    *DB
	ds    *dataset
	id    int64
	epoch int64 // of the writer slot the run holds (W3)
	op    string
	opts  RunOptions
	// restoredFrom is the version a rollback's run restores (rollback.go).
	restoredFrom int64
	guard        Guard
	parts        []*runPart // nil for a partition another writer has (run_partition.go)
	nparts       int
	// part is the one partition of a PartitionWriter, -1 for a Run: such
	// a writer holds no writer slot (the coordinator's fences the commit).
	part int

	// schema
	cols   [][]byte // column names, schema order
	keyIdx []int    // schema indexes of the key columns, key order
	// the column dictionary (rowversion.go): n columns; runOf[d] is the
	// schema index of dictionary column d, -1 when the run lacks it
	n      int
	runOf  []int
	place  placer // the partition of each row (partition_key.go)
	placed int    // the partition of the last row Put

	// the version the run compares with
	prev     *VersionInfo // nil when the dataset has none
	prevVis  txn.Visibility
	readOpts store.ReadOptions

	stats  RunStats
	sum    uint64
	digest *xxhash.Digest
	keyBuf []byte
	// enc holds the current row as the cells of its full version: after
	// versionReserve bytes (room for the version's header), each schema
	// column's dictionary index and packed value, enc[encOff[i]:encEnd[i]]
	// the value of schema column i.
	enc    []byte
	encOff []int
	encEnd []int
	// dictOf is the dictionary index of each schema column; inOrder says
	// they ascend, so that enc is the body of the row's full version.
	dictOf  []int
	inOrder bool
	ckBuf   []byte      // addChecksum's
	shapes  shapeRecord // the version's value shapes (shapes.go)
	cellIdx []int       // the cells of the row version to write:
	cellVal [][]byte    // dictionary indexes and packed values
	getSt   resolvedRow // a previous row read by a point read
	started time.Time

	w         *runWriter     // writes the batches (run_write.go)
	sealed    []store.Load   // loads sealed by lastWrites, flushed at the commit
	srcDigest []byte         // the source's digest, stored with the version (verify.go)
	verified  bool           // Commit recorded the previous version verified
	changes   bool           // a run of changes (run_changes.go)
	carried   *carriedRanges // a PartitionWriter's ranges carried over (run_partition_carry.go)
	err       error          // sticky store error; the run can only be aborted
	done      bool

	// pubMu guards pub, the counts Stats returns (published every 1024
	// rows and when the run ends), so Stats may be called from any
	// goroutine while Put runs.
	pubMu sync.Mutex
	pub   RunStats
}

// runPart is a run's state for one partition. Keys are first taken to
// come in ascending order (phase A, D5; run_phase_a.go): the previous
// version is walked forward alongside, and its rows the source skipped get
// their row delete marker at once. The first key below its predecessor
// switches the partition to phase B for the rest of the run
// (run_phase_b.go): keys are recorded in the scratch table (scratch.go)
// and deletions above switchKey are found at commit (run_deletes.go).
type runPart struct {
	table, scratch string
	data, seen     store.Batch
	load           store.Load // the partition's load (run_write.go), nil when applied
	arena, sarena  []byte
	dataBytes      int        // bytes of p.data's cells: in arena, or lent (Run.writeVersion)
	cur            *rowCursor // the previous version's rows, nil when none
	loaded         bool       // cur holds a row not yet passed
	lastKey        []byte     // last key put in this partition
	switched       bool       // phase B
	switchKey      []byte     // the largest key of phase A
	floor          []byte     // the last previous row passed or the last seek target
	floorIncl      bool       // floor itself is known absent (set by a seek)
	seq            uint64     // scratch sequence numbers
}

// TxnID returns the run's transaction id, the version it will commit.
func (r *Run) TxnID() int64 { return r.id }

// prevVersion returns the version the run compares with, 0 when none.
func (r *Run) prevVersion() int64 {
	if r.prev == nil {
		return 0
	}
	return r.prev.Version
}

// usable returns why the run can take no more Puts or Commit, or nil.
func (r *Run) usable() error {
	if r.done {
		return ErrRunClosed
	}
	if r.err != nil {
		return r.err
	}
	return r.db.check()
}

// closeIters closes the partitions' iterators over the previous version.
func (r *Run) closeIters() {
	for _, p := range r.parts {
		if p != nil && p.cur != nil {
			p.cur.close()
			p.cur = nil
		}
	}
}

// hook calls Options.hook, the crash test's kill point.
func (r *Run) hook(point string, n int64) {
	if h := r.db.opts.hook; h != nil {
		h(point, n)
	}
}
