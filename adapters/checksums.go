package adapters

// Skipping what did not change. A source that computes checksums inside
// the run's consistent snapshot (source.Checksummer: adapters/mysql,
// adapters/postgres, adapters/sqlite, each for the keys whose order it
// shares with snapstore's key encoding) lets a run avoid reading what the
// current version already holds. The checksums of a version are its digest, stored with
// the version (snapshot.Run.SetSourceDigest): the table cut into key
// ranges (chunks) of about
// chunk_rows rows, each with its last key, its rows, the sum of their
// snapstore checksums (snapshot.D6) and, when known, the source's
// checksum of the range.
//
// A run reads in one of three modes, chosen from the digest of the current
// version and what the run that made it saw (the share of chunks that
// changed), so that a table keeps the cheapest mode for the way it
// changes:
//
//	chunks  the digest has the chunks' checksums and the last run changed
//	        fewer than half of them: each chunk's checksum is computed and
//	        only the chunks that differ are read; the others are carried
//	        over (snapshot.Run.Carry). When the first 16 chunks show more
//	        than half changed, the rest is read in full.
//	verify  as chunks, when no chunk changed: the current version is
//	        recorded as verified (snapshot.DB.Verify) and no version is
//	        committed.
//	full    the table is read whole, ahead of the run (prefetch.go). When
//	        the last run changed fewer than half of the chunks, the run also
//	        computes the chunks' checksums at the end, for chunk mode next
//	        time.
//
// The server's own whole-table checksum (MySQL's CHECKSUM TABLE) would
// verify an unchanged table for a fifth of a read, but it cannot be
// trusted: it runs the bytes of adjacent variable-length columns
// together ('x#','y' and 'x','#y', 'xy','' and 'x','y' give one
// checksum on MariaDB 10.11), adds the rows' CRC32s, and leaves VIRTUAL
// columns out. A run that verified by it would keep serving rows the
// source changed.
//
// The adapter option commit_unchanged turns verification off: every run
// commits a version, as before (chunks are still carried over).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/snapstore/snapstore/api"
	"github.com/snapstore/snapstore/snapshot"
)

// Read modes, as RunRecord.Mode names them.
const (
	ModeFull   = "full"
	ModeChunks = "chunks"
	ModeVerify = "verify"
	// ModeDiff: the source's changes applied to the current version
	// (diffread.go).
	ModeDiff = "diff"
)

// chunkProbe is how many chunks chunk mode checks before it decides to
// read the rest in full when more than half of them changed.
const chunkProbe = 16

// digest is what a version records of its source (the package comment).
type digest struct {
	Version   int     `json:"v"`
	Signature string  `json:"sig"`
	Checksums bool    `json:"crc,omitempty"` // the chunks have the source's checksums
	Changed   float64 `json:"changed"`       // share of chunks the run that made it changed
	// Unsummed: the chunks have no Sum, as a partitioned run's
	// coordinator records them (partitioned.go): such a digest verifies
	// a run, but carries no range over.
	Unsummed bool    `json:"nosum,omitempty"`
	Chunks   []chunk `json:"chunks"`
}

// chunk is a key range of a digest: the keys after the previous chunk's Hi
// up to its own (the last chunk is open ended when read).
type chunk struct {
	Hi   string `json:"hi"` // the last key (digestKey)
	Rows int64  `json:"rows"`
	CRC  uint64 `json:"crc,omitempty"`
	Sum  uint64 `json:"sum"` // snapshot.D6 sum of its rows
}

const digestVersion = 1

// readDigest returns the source digest of the dataset's current version
// cur that a run of schema whose source's checksums have signature sig
// ("" when it has none) can compare with, else nil and, when the source
// has checksums, why there is none, as RunRecord.ModeReason says it.
func (s *Service) readDigest(ctx context.Context, dataset string, cur *snapshot.VersionInfo, schema snapshot.Schema, sig string) (*digest, string) {
	switch {
	case sig == "":
		return nil, ""
	case cur == nil:
		return nil, "no checksums recorded yet: the dataset has no version"
	case !sameSchema(cur.Schema, schema):
		return nil, "its schema changed since the current version"
	}
	b, err := s.db.SourceDigest(ctx, dataset, cur.Version)
	return recordedDigest(b, err, sig)
}

// readTableDigest is readDigest for the table name of a dataset of
// several tables, whose current version cur holds it.
func (s *Service) readTableDigest(ctx context.Context, dataset, name string, cur *snapshot.VersionInfo, schema snapshot.Schema, sig string) (*digest, string) {
	if sig == "" {
		return nil, ""
	}
	var t snapshot.TableInfo
	ok := false
	if cur != nil {
		t, ok = cur.Table(name)
	}
	switch {
	case !ok:
		return nil, "no checksums recorded yet: the table is new to the dataset"
	case !sameSchema(t.Schema, schema):
		return nil, "its schema changed since the current version"
	}
	b, err := s.db.TableSourceDigest(ctx, dataset, name, cur.Version)
	return recordedDigest(b, err, sig)
}

// recordedDigest parses the digest b a version recorded (err: reading it
// failed) when it has signature sig, and says why there is none to
// compare with.
func recordedDigest(b []byte, err error, sig string) (*digest, string) {
	switch {
	case err != nil:
		return nil, "the recorded checksums could not be read"
	case b == nil:
		return nil, "no checksums recorded with the current version"
	}
	if d := parseDigest(b, sig); d != nil {
		return d, ""
	}
	return nil, "the recorded checksums are of another format or checksum"
}

// fullReason says why the pull read its table in full although its source
// computes checksums (RunRecord.ModeReason, RunTable.ModeReason): its key
// allows no ranges, there was no digest to compare with (readDigest), or
// the digest kept chunk mode out. "" when the source has no checksums, or
// nothing kept chunk mode out.
func (p *pull) fullReason() string {
	d := p.prev
	switch {
	case p.cs == nil:
		return ""
	case !p.chunkable:
		return "no range checksums: " + p.rangesWhy
	case p.digestWhy != "":
		return p.digestWhy
	case d == nil:
		return ""
	case d.Unsummed:
		return "its recorded ranges carry no sums (a partitioned run recorded them)"
	case d.Changed >= 0.5 && p.insertedAll():
		return "no range checksums recorded yet: the last run inserted every row"
	case d.Changed >= 0.5 && len(d.Chunks) == 1:
		return "a one-range table: its range changed at the last run"
	case d.Changed >= 0.5:
		return fmt.Sprintf("%.0f%% of its ranges changed at the last run, more than half", 100*d.Changed)
	case !d.Checksums:
		return "its recorded ranges have no checksums: they disagreed with the rows read"
	case p.chunks != nil && p.chunks.full:
		return fmt.Sprintf("more than half of its first %d ranges changed", chunkProbe)
	}
	return ""
}

// insertedAll reports whether the current version's run inserted every
// row it holds, as a first run does (its digest records every range
// changed, without checksums).
func (p *pull) insertedAll() bool {
	if p.cur == nil {
		return false
	}
	st := p.cur.Stats
	return st.Rows > 0 && st.Inserted == st.Rows && st.Updated == 0 && st.Deleted == 0
}

// parseDigest decodes a stored digest b; nil when there is none, or it
// was made by another version of the format or checksums of another
// signature than sig.
func parseDigest(b []byte, sig string) *digest {
	if b == nil {
		return nil
	}
	d := new(digest)
	if err := json.Unmarshal(b, d); err != nil || d.Version != digestVersion || d.Signature != sig {
		return nil
	}
	return d
}

// sameSchema reports whether a run of schema b would write what a version
// of schema a holds: the same columns, kinds, types and key.
func sameSchema(a, b snapshot.Schema) bool {
	if len(a.Columns) != len(b.Columns) || len(a.Key) != len(b.Key) {
		return false
	}
	for i := range a.Columns {
		if a.Columns[i] != b.Columns[i] {
			return false
		}
	}
	for i := range a.Key {
		if a.Key[i] != b.Key[i] {
			return false
		}
	}
	return true
}

// chunkState is the chunk pass of a run in chunk mode: which chunks of the
// previous digest changed, and their new checksums.
type chunkState struct {
	prev    *digest
	changed []bool
	rows    []int64
	crc     []uint64
	full    bool // too many changed: read the rest in full
	nchg    int
}

// chunkPass computes the checksum of each chunk of d and compares it with
// the digest's; it stops early (full set) when the first chunkProbe chunks
// show more than half changed. The checksums are computed over css: the
// run's reader alone, or the readers of one point of the source
// (checksumpoint.go).
func chunkPass(ctx context.Context, css []checksummer, d *digest) (*chunkState, error) {
	st := &chunkState{prev: d, changed: make([]bool, len(d.Chunks)), rows: make([]int64, len(d.Chunks)), crc: make([]uint64, len(d.Chunks))}
	ranges, err := chunkRanges(d.Chunks, nil)
	if err != nil {
		return nil, fmt.Errorf("the digest of the current version: %w", err)
	}
	probed, probeChanged := 0, 0
	err = rangeChecksums(ctx, css, ranges, func(i int, rows int64, crc uint64) error {
		st.rows[i], st.crc[i] = rows, crc
		c := d.Chunks[i]
		if rows != c.Rows || crc != c.CRC {
			st.changed[i] = true
			st.nchg++
		}
		if i < chunkProbe {
			probed++
			if st.changed[i] {
				probeChanged++
			}
			if probed == chunkProbe && 2*probeChanged > chunkProbe {
				st.full = true
				return errStopChecksums
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return st, nil
}

// verifyRun records that the current version cur still holds the source,
// with digest d (nil: unchanged), and returns what the run record says.
func (s *Service) verifyRun(ctx context.Context, dataset string, cur *snapshot.VersionInfo, d *digest) (snapshot.VersionInfo, error) {
	var b []byte
	if d != nil {
		var err error
		if b, err = json.Marshal(d); err != nil {
			return snapshot.VersionInfo{}, err
		}
	}
	vi, err := s.db.Verify(ctx, dataset, cur.Version, s.now(), b)
	if err != nil {
		return snapshot.VersionInfo{}, fmt.Errorf("recording that dataset %q is unchanged: %w", dataset, err)
	}
	return vi, nil
}

// syncDatasetConfig sets the dataset's retention and guard to the
// adapter's when they differ (BeginRun does the same for a run that
// begins).
func (s *Service) syncDatasetConfig(ctx context.Context, spec api.Adapter) error {
	d, err := s.db.Dataset(ctx, spec.Dataset)
	if err != nil || d.Retention == retentionOf(spec) && d.Guard == guardOf(spec) {
		return nil
	}
	if err := s.db.SetConfig(ctx, snapshot.DatasetConfig{Name: spec.Dataset, Retention: retentionOf(spec), Guard: guardOf(spec)}); err != nil {
		return fmt.Errorf("setting the configuration of dataset %q: %w", spec.Dataset, err)
	}
	return nil
}

// chunkRecorder cuts a run's rows into the chunks of its digest as they
// are put: every chunkRows rows (or at the end of a range read) it closes a
// chunk with the last key, the rows and the run's checksum sum since the
// previous one, and whether the run changed anything in it. Without a run
// (nil: a partitioned run, whose owners compute the checksum) it records
// the keys and rows only.
type chunkRecorder struct {
	run       tableSink
	chunkRows int64
	chunks    []chunk
	changed   []bool
	rows      int64  // rows of the open chunk
	lastKey   string // its last key
	sum0      uint64 // the run's sum when it opened
	changes0  int64  // the run's changes when it opened
}

func newChunkRecorder(run tableSink, chunkRows int) *chunkRecorder {
	cr := &chunkRecorder{run: run, chunkRows: int64(chunkRows)}
	cr.open()
	return cr
}

// changes counts what the run wrote so far: rows inserted, updated and
// deleted.
func changes(st snapshot.RunStats) int64 { return st.Inserted + st.Updated + st.Deleted }

func (cr *chunkRecorder) open() {
	cr.rows = 0
	if cr.run == nil {
		return
	}
	var st snapshot.RunStats
	st, cr.sum0 = cr.run.Progress()
	cr.changes0 = changes(st)
}

// put records a row just put, its key the values of vals at keyIdx.
func (cr *chunkRecorder) put(vals []snapshot.Value, keyIdx []int) {
	cr.rows++
	cr.lastKey = digestKey(vals, keyIdx)
	if cr.rows == cr.chunkRows {
		cr.close(0)
	}
}

// close ends the open chunk (when it has rows) with its source checksum
// crc (0: unknown).
func (cr *chunkRecorder) close(crc uint64) {
	if cr.rows == 0 {
		return
	}
	c, changed := chunk{Hi: cr.lastKey, Rows: cr.rows, CRC: crc}, false
	if cr.run != nil {
		st, sum := cr.run.Progress()
		c.Sum, changed = sum-cr.sum0, changes(st) != cr.changes0
	}
	cr.chunks = append(cr.chunks, c)
	cr.changed = append(cr.changed, changed)
	cr.open()
}

// carried records a chunk carried over unchanged.
func (cr *chunkRecorder) carried(c chunk) {
	cr.chunks = append(cr.chunks, c)
	cr.changed = append(cr.changed, false)
	cr.open()
}

// changedShare is the share of the chunks recorded that changed.
func (cr *chunkRecorder) changedShare() float64 {
	if len(cr.chunks) == 0 {
		return 0
	}
	n := 0
	for _, c := range cr.changed {
		if c {
			n++
		}
	}
	return float64(n) / float64(len(cr.chunks))
}

// addChunkChecksums computes the source's checksum of each of chunks, the
// last ones of a digest whose ranges a read recorded (the first starts
// after lo, nil: at the first key; the last is open ended), for chunk
// mode next time. They are computed over css, as chunkPass's.
func addChunkChecksums(ctx context.Context, css []checksummer, chunks []chunk, lo []snapshot.Value) error {
	ranges, err := chunkRanges(chunks, lo)
	if err != nil {
		return err
	}
	return rangeChecksums(ctx, css, ranges, func(i int, rows int64, crc uint64) error {
		if rows != chunks[i].Rows {
			return fmt.Errorf("%w: chunk %d has %d rows, the read gave %d", errDigestMismatch, i, rows, chunks[i].Rows)
		}
		chunks[i].CRC = crc
		return nil
	})
}

// errDigestMismatch: the source's checksums disagree with what the run
// read in the same snapshot; the digest is dropped (the next run reads in
// full).
var errDigestMismatch = errors.New("source checksums disagree with the rows read")

// digestKey and parseDigestKey convert a key (the values of vals at
// keyIdx) to and from the text a digest stores: a one-column integer key
// as its decimal text ("u" before an unsigned one; JSON numbers would
// round beyond 2^53 in other readers), any other key as "j" and the JSON
// of its digestValues.
func digestKey(vals []snapshot.Value, keyIdx []int) string {
	if len(keyIdx) == 1 {
		switch v := vals[keyIdx[0]]; v.Kind {
		case snapshot.KindUint:
			return "u" + strconv.FormatUint(v.Uint, 10)
		case snapshot.KindInt:
			return strconv.FormatInt(v.Int, 10)
		}
	}
	key := make([]digestValue, len(keyIdx))
	for j, i := range keyIdx {
		v := vals[i]
		key[j] = digestValue{Kind: uint8(v.Kind), Int: v.Int, Uint: strconv.FormatUint(v.Uint, 10), Float: math.Float64bits(v.Float), Bytes: v.Bytes}
	}
	b, _ := json.Marshal(key)
	return "j" + string(b)
}

// digestValue is a key value in a digest: its kind and exact payload
// (encoding/json keeps an int64 exact; the uint64 and the float's bits
// are text, which every JSON reader keeps).
type digestValue struct {
	Kind  uint8  `json:"k"`
	Int   int64  `json:"i,omitempty"`
	Uint  string `json:"u,omitempty"`
	Float uint64 `json:"f,string,omitempty"`
	Bytes []byte `json:"b,omitempty"`
}

func parseDigestKey(s string) ([]snapshot.Value, error) {
	if j, ok := strings.CutPrefix(s, "j"); ok {
		var key []digestValue
		if err := json.Unmarshal([]byte(j), &key); err != nil || len(key) == 0 {
			return nil, fmt.Errorf("a bad key %q in a digest", s)
		}
		out := make([]snapshot.Value, len(key))
		for i, d := range key {
			u, err := strconv.ParseUint(d.Uint, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("a bad key %q in a digest", s)
			}
			out[i] = snapshot.Value{Kind: snapshot.Kind(d.Kind), Int: d.Int, Uint: u, Float: math.Float64frombits(d.Float), Bytes: d.Bytes}
		}
		return out, nil
	}
	if u, ok := strings.CutPrefix(s, "u"); ok {
		n, err := strconv.ParseUint(u, 10, 64)
		return []snapshot.Value{{Kind: snapshot.KindUint, Uint: n}}, err
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return []snapshot.Value{{Kind: snapshot.KindInt, Int: n}}, err
}
