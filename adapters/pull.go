package adapters

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/snapstore/snapstore/adapters/source"
	"github.com/snapstore/snapstore/api"
	"github.com/snapstore/snapstore/snapshot"
)

// pull is one run's read of its source table into a snapshot run, in
// named steps as Pebble splits a compaction: connect (the lease and the
// table reader), plan (the current version, the estimate, the schema and
// what the source's checksums allow), verify (a run whose chunks all
// match ends verified without a snapshot run), begin (the snapshot run),
// read (the whole table, or the changed chunks with the others carried
// over), seal (the new version's digest) and commit. Any error aborts the
// snapshot run; the current version is untouched (P5).
type pull struct {
	s     *Service
	ar    *activeRun
	spec  api.Adapter
	force bool
	runID string

	l   *lease
	src TableReader
	pt  source.Point  // the point of the source src reads at, when the checksums spread over its connections
	css []checksummer // the checksummers of pt's connections, src's first; nil without pt

	cur       *snapshot.VersionInfo // the dataset's current version, if any
	resource  string                // the table read, as "schema.name"
	schema    snapshot.Schema       // the source's, JSON columns embedded
	jsonCols  []int                 // the columns embedJSON turned into KindEmbeddedJSON
	cs        checksummer           // the source's checksums, nil when it has none
	signature string                // cs's ChecksumSignature, "" without cs
	chunkable bool                  // cs can cut the table into chunks (Chunkable)
	rangesWhy string                // why it cannot, when it cannot
	digestWhy string                // why prev is nil (readDigest)
	prev      *digest               // the current version's digest, when cs may use it
	chunks    *chunkState           // the chunk pass over prev, when one ran

	run       RunWriter
	w         rowSink        // where rows go: run, or one table's writer of a run of several tables
	local     tableSink      // run as a run of this process (digest, carrying over), or that table's writer
	tables    *tablesPull    // the run of several tables this pull reads one table of, nil for a dataset of one table
	first     bool           // the current version does not hold the table: the digest's chunks all changed
	rec       *chunkRecorder // the new digest's chunks, nil without one
	keyIdx    []int          // the schema indexes of the key columns, for rec
	committed bool           // Commit was called (it aborts by itself on error)
	carrying  bool           // a partitioned run whose owners carry the unchanged chunks over (partitioned.go)

	n       int64 // rows put
	res     pullResult
	dropped bool // the source's checksums disagreed with a read
}

// rowSink takes a table's rows: a RunWriter, or a TableWriter of a run
// of several tables.
type rowSink interface {
	Put(ctx context.Context, vals []snapshot.Value) error
	Stats() snapshot.RunStats
}

// tableSink is a rowSink of this process that also carries rows of the
// current version over and keeps the table's digest: a *snapshot.Run, or
// a *snapshot.TableWriter.
type tableSink interface {
	rowSink
	Carry(ctx context.Context, after, through []snapshot.Value, rows int64, sum uint64) error
	SetSourceDigest(digest []byte)
	Progress() (snapshot.RunStats, uint64)
}

// pull streams the source table of spec into a snapshot run and commits
// it (see the type pull).
func (s *Service) pull(ctx context.Context, ar *activeRun, spec api.Adapter, force bool) (pullResult, error) {
	p := &pull{s: s, ar: ar, spec: spec, force: force}
	if err := p.connect(ctx); err != nil {
		return pullResult{}, err
	}
	defer p.l.release()
	defer func() {
		p.src.Close()
		p.closePoint()
	}()
	if err := p.plan(ctx); err != nil {
		return pullResult{}, err
	}
	if verified, err := p.verify(ctx); verified || err != nil {
		return p.res, err
	}
	if err := p.begin(ctx); err != nil {
		return pullResult{}, err
	}
	defer p.abort(ctx)
	if err := p.read(ctx); err != nil {
		return pullResult{}, err
	}
	if err := p.seal(ctx); err != nil {
		return pullResult{}, err
	}
	return p.commit(ctx)
}

// connect leases the data connection and opens the table.
func (p *pull) connect(ctx context.Context) error {
	l, err := p.s.acquire(ctx, p.spec.Connection)
	if err != nil {
		return err
	}
	src, err := p.s.openResource(ctx, l, p.spec, 0)
	if err != nil {
		l.release()
		return err
	}
	p.l, p.src = l, src
	return nil
}

// plan reads the dataset's current version, records the estimated rows,
// and finds what the source's checksums allow (checksums.go); for a
// partitioned run, what its coordinator can do with them
// (partitioned.go).
func (p *pull) plan(ctx context.Context) error {
	s, spec, tbl := p.s, p.spec, p.src.Table()
	d, err := s.db.Dataset(ctx, spec.Dataset)
	if err == nil {
		p.cur = d.CurrentInfo
	}
	est := tbl.EstimatedRows
	if est <= 0 && p.cur != nil {
		// No estimate from the source (a view, statistics not computed
		// yet): the current version's row count is the next best.
		est = p.cur.Stats.Rows
	}
	p.ar.mu.Lock()
	p.ar.rec.RowsEstimated = est
	p.runID = p.ar.rec.ID
	p.ar.mu.Unlock()
	p.resource = tbl.Name
	if tbl.Schema != "" {
		p.resource = tbl.Schema + "." + tbl.Name
	}
	p.schema = p.src.Schema()
	p.jsonCols = embedJSON(&p.schema, spec.EmbedJSON)
	cs, _ := p.src.(checksummer)
	if Strategy(spec.Strategy) == StrategyPartitionByKey && !s.placedAsStored(spec, d, p.schema) {
		cs = nil
	}
	p.useChecksums(cs)
	p.first = p.cur == nil
	p.prev, p.digestWhy = s.readDigest(ctx, spec.Dataset, p.cur, p.schema, p.signature)
	if err := p.openChecksumPoint(ctx); err != nil {
		return err
	}
	if p.prev != nil && !spec.CommitUnchanged {
		// A run may end verified without beginning a snapshot run: the
		// dataset's retention and guard follow the adapter all the same.
		return s.syncDatasetConfig(ctx, spec)
	}
	return nil
}

// useChecksums makes cs the source's checksums of the table read (nil:
// none) and asks them, once, their signature and whether they can cut the
// table into chunks: what the digests, the chunk pass and the point of
// the checksums go by.
func (p *pull) useChecksums(cs checksummer) {
	p.cs, p.signature, p.chunkable, p.rangesWhy = cs, "", false, ""
	if cs != nil {
		p.signature = cs.ChecksumSignature()
		p.chunkable, p.rangesWhy = cs.Chunkable()
	}
}

// verify runs the chunk pass when the current version's digest allows
// chunk mode. When no chunk changed, the run ends here, verified (p.res
// set); the digest records that this run changed nothing.
func (p *pull) verify(ctx context.Context) (verified bool, err error) {
	prev := p.prev
	if err := p.passChunks(ctx); err != nil || p.chunks == nil {
		return false, err
	}
	if p.chunks.nchg != 0 || p.chunks.full || p.spec.CommitUnchanged {
		return false, nil
	}
	next := *prev
	next.Changed = 0
	vi, err := p.s.verifyRun(ctx, p.spec.Dataset, p.cur, &next)
	p.res = pullResult{vi: vi, mode: ModeVerify, verified: true, chunks: len(prev.Chunks), skipped: len(prev.Chunks)}
	return true, err
}

// passChunks runs the chunk pass (p.chunks) when the current version's
// digest allows chunk mode.
func (p *pull) passChunks(ctx context.Context) error {
	prev := p.prev
	if prev == nil || !prev.Checksums || prev.Changed >= 0.5 || !p.chunkable {
		return nil
	}
	var err error
	if p.chunks, err = chunkPass(ctx, p.checksummers(), prev); err != nil {
		return p.readErr(ctx, err)
	}
	return nil
}

// begin begins the snapshot run, enters the read phase, and sets up the
// new digest's chunks when the source has checksums.
func (p *pull) begin(ctx context.Context) error {
	s, spec := p.s, p.spec
	carried, err := p.carriedRanges()
	if err != nil {
		return err
	}
	p.carrying = carried != nil
	run, err := s.beginWriter(ctx, spec,
		snapshot.DatasetConfig{Name: spec.Dataset, Retention: retentionOf(spec), Guard: guardOf(spec)},
		snapshot.RunOptions{Schema: p.schema, Force: p.force, VerifyUnchanged: !spec.CommitUnchanged, Source: snapshot.SourceInfo{
			Adapter: spec.Name, Connection: spec.Connection, Revision: p.l.revision, Resource: p.resource, RunID: p.runID,
		}}, p.runID, carried)
	if err != nil {
		if errors.Is(err, snapshot.ErrKeyChanged) {
			return fmt.Errorf("the source key of %s is now (%s), which differs from dataset %q's key; drop the dataset or set key_columns: %w",
				p.resource, strings.Join(p.schema.Key, ", "), spec.Dataset, err)
		}
		return fmt.Errorf("starting a run of dataset %q: %w", spec.Dataset, err)
	}
	p.run, p.w = run, run
	p.ar.mu.Lock()
	p.ar.rec.TxnID = run.TxnID()
	p.ar.beginPhaseLocked(PhaseRead, s.now().UTC())
	p.ar.mu.Unlock()
	s.checkpoint(ctx, p.ar)

	// The digest and carrying ranges over need a run of this process.
	if r, ok := run.(*snapshot.Run); ok {
		p.local = r
	}
	p.startDigest()
	return nil
}

// startDigest sets up the new digest's chunks when the source has
// checksums and the rows go to this process (p.local) or to a partitioned
// run, whose coordinator stores a digest without sums (partitioned.go).
func (p *pull) startDigest() {
	p.res = pullResult{mode: ModeFull}
	if p.chunkable && p.digestTo() != nil {
		rows := digestChunkRows
		if p.chunkMode() {
			rows = math.MaxInt // chunk mode keeps the digest's chunks
		}
		p.rec = newChunkRecorder(p.local, rows)
		p.keyIdx = keyIndexes(p.schema)
	}
}

// abort aborts the snapshot run unless Commit was called.
func (p *pull) abort(ctx context.Context) {
	if p.committed {
		return
	}
	abortCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := p.run.Abort(abortCtx, "run "+p.runID+" did not finish"); err != nil {
		p.s.log.Warn("aborting run", "run", p.runID, "txn", p.run.TxnID(), "err", err)
	}
}

// read reads the table: in chunk mode the chunks that changed, the others
// carried over; in diff mode the source's changes since the version the
// current one copied (diffread.go); else all of it, ahead of the run
// (prefetch.go).
func (p *pull) read(ctx context.Context) error {
	if p.chunkMode() {
		return p.readChunks(ctx)
	}
	if done, err := p.readDiff(ctx); done || err != nil {
		return err
	}
	tr := prefetch(ctx, p.src)
	for tr.Next(ctx) {
		if err := p.put(ctx, tr); err != nil {
			tr.Close()
			return err
		}
	}
	if err := tr.Err(); err != nil {
		tr.Close()
		return p.readErr(ctx, err)
	}
	if p.rec != nil {
		p.rec.close(0)
		p.res.chunks = len(p.rec.chunks)
	}
	p.res.reason = p.fullReason()
	return nil
}

// put puts the current row of tr, and counts it.
func (p *pull) put(ctx context.Context, tr TableReader) error {
	return p.putValues(ctx, tr.Values())
}

// putValues puts one row, and counts it.
func (p *pull) putValues(ctx context.Context, vals []snapshot.Value) error {
	for _, i := range p.jsonCols {
		if vals[i].Kind == snapshot.KindJSON {
			vals[i].Kind = snapshot.KindEmbeddedJSON
		}
	}
	if err := p.w.Put(ctx, vals); err != nil {
		return fmt.Errorf("writing row %d of %s: %w", p.n+1, p.resource, err)
	}
	p.n++
	if p.rec != nil {
		p.rec.put(vals, p.keyIdx)
	}
	if p.s.testHookRow != nil {
		p.s.testHookRow(ctx, p.spec.Name, p.n)
	}
	if p.n%progressEvery == 0 {
		p.progress()
	}
	return nil
}

// progress updates the live run record with the rows read so far.
func (p *pull) progress() {
	if p.tables != nil {
		p.tables.progress(progressEvery)
		return
	}
	st := p.w.Stats()
	p.ar.mu.Lock()
	p.ar.rec.RowsRead, p.ar.rec.Stats = p.n, st
	p.ar.mu.Unlock()
}

// chunkMode reports whether the run reads in chunk mode: the chunk pass
// found few chunks changed, and either the rows go to this process, which
// can carry the others over with the sums the digest has, or they go to a
// partitioned run whose owners carry the others over (partitioned.go).
func (p *pull) chunkMode() bool {
	return p.chunks != nil && !p.chunks.full && (p.local != nil && !p.prev.Unsummed || p.carrying)
}

// readChunks is chunk mode: each chunk of the current version's digest
// is carried over when its checksum matched, else read again.
func (p *pull) readChunks(ctx context.Context) error {
	p.res.mode = ModeChunks
	var lo []snapshot.Value
	for i, c := range p.prev.Chunks {
		hi, err := parseDigestKey(c.Hi)
		if err != nil {
			return fmt.Errorf("the digest of the current version: %w", err)
		}
		if p.chunks.changed[i] {
			err = p.readChunk(ctx, i, lo, hi)
		} else {
			err = p.carry(ctx, c, lo, hi)
		}
		if err != nil {
			return err
		}
		lo = hi
	}
	p.res.chunks = len(p.rec.chunks)
	return nil
}

// carry carries the rows of chunk c, keys after lo up to hi, over from
// the current version: here, or on the owners of a partitioned run.
func (p *pull) carry(ctx context.Context, c chunk, lo, hi []snapshot.Value) error {
	if p.local == nil {
		// A partitioned run: its owners carry the range over, named in
		// the run's record.
		p.rec.carried(c)
		p.res.skipped++
		return nil
	}
	if err := p.local.Carry(ctx, lo, hi, c.Rows, c.Sum); err != nil {
		return fmt.Errorf("carrying rows of %s over: %w", p.resource, err)
	}
	p.rec.carried(c)
	p.res.skipped++
	return nil
}

// readChunk reads the rows of the digest's chunk i, keys after lo up to
// hiKey, and records them with the checksum the chunk pass computed in
// the same snapshot. The last range takes the keys past the digest's last
// one: a table that grows at its end is cut into new chunks there, rather
// than one chunk that grows each run, and those chunks get their
// checksums computed now, in that snapshot too.
func (p *pull) readChunk(ctx context.Context, i int, lo, hiKey []snapshot.Value) error {
	last := i == len(p.prev.Chunks)-1
	var hi []snapshot.Value
	if !last {
		hi = hiKey
	}
	rec, want := p.rec, p.chunks.rows[i]
	split := last && want > 2*digestChunkRows
	first := len(rec.chunks)
	if split {
		rec.chunkRows = digestChunkRows
	}
	p.cs.ReadRange(lo, hi)
	read := int64(0)
	for p.src.Next(ctx) {
		if err := p.put(ctx, p.src); err != nil {
			return err
		}
		read++
	}
	if err := p.src.Err(); err != nil {
		return p.readErr(ctx, err)
	}
	if read != want {
		return fmt.Errorf("reading %s: a range gave %d rows, its checksum counted %d", p.resource, read, want)
	}
	switch {
	case split:
		rec.close(0)
		return p.checksums(ctx, rec.chunks[first:], lo)
	case rec.rows > 0:
		rec.close(p.chunks.crc[i])
	}
	return nil
}

// checksums computes the source's checksums of chunks, the first after
// lo. When they disagree with the rows read, the digest is kept without
// checksums (p.dropped) rather than failing the run.
func (p *pull) checksums(ctx context.Context, chunks []chunk, lo []snapshot.Value) error {
	err := addChunkChecksums(ctx, p.checksummers(), chunks, lo)
	if err == nil {
		return nil
	}
	if !errors.Is(err, errDigestMismatch) {
		return p.readErr(ctx, err)
	}
	p.s.log.Warn("source checksums dropped", "run", p.runID, "err", err)
	p.dropped = true
	return nil
}

// seal gives the new version its digest: in chunk mode, the chunks'
// checksums carried or computed; after a full read of a table that
// changed little last time, the chunks' checksums computed now, for a
// cheaper run next time. The source read ends here.
func (p *pull) seal(ctx context.Context) error {
	if rec := p.rec; rec != nil {
		d := &digest{Version: digestVersion, Signature: p.signature, Chunks: rec.chunks, Changed: rec.changedShare()}
		if p.local == nil {
			d.Unsummed, d.Changed = true, p.passChanged()
		}
		if p.first {
			d.Changed = 1
		}
		switch {
		case p.res.mode == ModeChunks:
			d.Checksums = !p.dropped
		case d.Changed < 0.5:
			// A full read that changed little: the next run will likely
			// change little too, and chunk mode needs the checksums.
			if err := p.checksums(ctx, d.Chunks, nil); err != nil {
				return err
			}
			d.Checksums = !p.dropped
		}
		if b, err := json.Marshal(d); err == nil {
			p.digestTo().SetSourceDigest(b)
		}
	}
	if err := p.src.Close(); err != nil {
		p.s.log.Warn("ending source read", "run", p.runID, "err", p.l.scrub(err))
	}
	p.closePoint()
	return nil
}

// commit enters the commit phase and commits the snapshot run.
func (p *pull) commit(ctx context.Context) (pullResult, error) {
	ar, run := p.ar, p.run
	ar.mu.Lock()
	ar.rec.RowsRead, ar.rec.Stats = p.n, run.Stats()
	ar.beginPhaseLocked(PhaseCommit, p.s.now().UTC())
	ar.mu.Unlock()
	p.s.checkpoint(ctx, ar)
	if err := context.Cause(ctx); err != nil {
		return pullResult{}, err
	}
	vi, err := run.Commit(ctx)
	p.committed = true
	if err != nil {
		// A refused run's stats say what it would have done (the deletes
		// are counted inside Commit).
		ar.mu.Lock()
		ar.rec.Stats = run.Stats()
		ar.mu.Unlock()
		if errors.Is(err, snapshot.ErrGuardRefused) {
			return pullResult{}, fmt.Errorf("committing dataset %q: %w (start the run with force=true to commit anyway)", p.spec.Dataset, err)
		}
		return pullResult{}, fmt.Errorf("committing dataset %q: %w", p.spec.Dataset, err)
	}
	p.res.vi, p.res.verified = vi, run.Verified()
	return p.res, nil
}

// readErr is an error that ended a source read, named and scrubbed.
func (p *pull) readErr(ctx context.Context, err error) error {
	return p.l.scrub(readError(ctx, p.spec.Connection, err))
}
