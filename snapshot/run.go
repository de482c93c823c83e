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

// batchBytes bounds the bytes of changed cells a run's data batch holds
// (its arena): a batch of wide rows (16 MB values) is applied after it
// passes this size, whatever its count of mutations, so a run's memory
// stays near batchBytes plus a few times its widest row.
const batchBytes = 32 << 20

// RunOptions describe one run.
type RunOptions struct {
	// Schema is the schema of the rows the run will Put; Key must be set.
	Schema Schema
	Source SourceInfo
	// Force commits even when a guard would refuse.
	Force bool
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
	cols    [][]byte // column names as qualifiers, schema order
	byName  []int    // schema indexes sorted by column name
	keyIdx  []int    // schema indexes of the key columns, key order
	keyName []byte   // first key column, used to test row existence
	place   placer   // the partition of each row (partition_key.go)
	placed  int      // the partition of the last row Put

	// the version the run compares with
	prev     *VersionInfo // nil when the dataset has none
	prevVis  txn.Visibility
	readOpts store.ReadOptions

	stats   RunStats
	sum     uint64
	digest  *xxhash.Digest
	keyBuf  []byte
	enc     []byte // encoded values of the current row
	encOff  []int  // enc[encOff[i]:encOff[i+1]] is column i
	res     []resolvedCol
	tmp     []resolvedCol
	started time.Time

	err  error // sticky store error; the run can only be aborted
	done bool

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
	arena, sarena  []byte
	cur            *rowReader // iterator over the previous version, nil when none
	loaded         bool       // cur.row and cur.cells hold a row not yet passed
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
