package snapshot

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/snapstore/snapstore/store"
	"github.com/snapstore/snapstore/txn"
)

// batchSize is the number of mutations after which a run applies a batch
// (without Sync; the commit syncs once).
const batchSize = 4096

// defaultMaxShrink is Guard.MaxShrink's default.
const defaultMaxShrink = 0.5

type runState struct {
	db     *DB
	ds     *dataset
	id     int64
	opts   RunOptions
	guard  Guard
	parts  []*runPart
	nparts int

	// schema
	cols    [][]byte // column names as qualifiers, schema order
	byName  []int    // schema indexes sorted by column name
	keyIdx  []int    // schema indexes of the key columns, key order
	keyName []byte   // first key column, used to test row existence

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
// come in ascending order (phase A, D5): the previous version is walked
// forward alongside, and its rows the source skipped get their row delete
// marker at once. The first key below its predecessor switches the
// partition to phase B for the rest of the run: keys are recorded in the
// scratch table and deletions above switchKey are found at commit.
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

func validSchema(s Schema) error {
	if len(s.Columns) == 0 {
		return fmt.Errorf("%w: no columns", ErrBadSchema)
	}
	seen := make(map[string]bool, len(s.Columns))
	for _, c := range s.Columns {
		if c.Name == "" {
			return fmt.Errorf("%w: empty column name", ErrBadSchema)
		}
		if seen[c.Name] {
			return fmt.Errorf("%w: column %q twice", ErrBadSchema, c.Name)
		}
		if c.Kind > KindGeometry {
			return fmt.Errorf("%w: column %q has unknown kind %d", ErrBadSchema, c.Name, c.Kind)
		}
		seen[c.Name] = true
	}
	if len(s.Key) == 0 {
		return fmt.Errorf("%w: no key columns", ErrBadSchema)
	}
	inKey := map[string]bool{}
	for _, k := range s.Key {
		if !seen[k] {
			return fmt.Errorf("%w: key column %q is not a column", ErrBadSchema, k)
		}
		if inKey[k] {
			return fmt.Errorf("%w: key column %q twice", ErrBadSchema, k)
		}
		inKey[k] = true
	}
	for _, c := range s.Columns {
		if inKey[c.Name] && c.Kind == KindNull {
			return fmt.Errorf("%w: key column %q has kind null", ErrBadSchema, c.Name)
		}
	}
	return nil
}

func columnIndex(s Schema, name string) int {
	for i, c := range s.Columns {
		if c.Name == name {
			return i
		}
	}
	return -1
}

func (db *DB) beginRun(ctx context.Context, cfg DatasetConfig, opts RunOptions) (*Run, error) {
	if err := db.writable(); err != nil {
		return nil, err
	}
	if err := validConfig(cfg); err != nil {
		return nil, err
	}
	if err := validSchema(opts.Schema); err != nil {
		return nil, err
	}
	db.mu.Lock()
	ds := db.datasets[cfg.Name]
	created := false
	if ds == nil {
		ds = &dataset{name: cfg.Name, tags: map[string]int64{}, readers: map[*Reader]struct{}{},
			cfg: datasetConfig{CreatedAt: db.opts.now().UTC(), Partitions: db.opts.Partitions}}
		db.datasets[cfg.Name] = ds
		created = true
	}
	db.mu.Unlock()
	if err := ds.acquire("run"); err != nil {
		return nil, err
	}
	r, err := db.beginAcquired(ctx, ds, cfg, opts, created)
	if err != nil {
		ds.release()
		return nil, err
	}
	return r, nil
}

func (db *DB) beginAcquired(ctx context.Context, ds *dataset, cfg DatasetConfig, opts RunOptions, created bool) (*Run, error) {
	ds.mu.Lock()
	var prev *VersionInfo
	if ds.current > 0 {
		prev = ds.versionLocked(ds.current)
	}
	if prev != nil && !slices.Equal(prev.Schema.Key, opts.Schema.Key) {
		ds.mu.Unlock()
		return nil, fmt.Errorf("%w: %s has key %v, the run has %v", ErrKeyChanged, ds.name, prev.Schema.Key, opts.Schema.Key)
	}
	var err error
	if created || ds.cfg.Retention != cfg.Retention || ds.cfg.Guard != cfg.Guard || !slices.Equal(ds.cfg.Key, opts.Schema.Key) {
		ds.cfg.Retention, ds.cfg.Guard, ds.cfg.Key = cfg.Retention, cfg.Guard, slices.Clone(opts.Schema.Key)
		err = db.putConfigLocked(ctx, ds)
	}
	parts := ds.cfg.Partitions
	dirty := ds.scratchDirty
	ds.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("snapshot: beginning a run of %s: %w", ds.name, err)
	}
	if created {
		db.logger.Info("dataset created", "dataset", ds.name, "partitions", parts)
	}
	if dirty {
		db.clearScratch(ctx, ds, parts)
	}
	id, err := db.txm.Begin(ctx, ds.name)
	if err != nil {
		return nil, fmt.Errorf("snapshot: beginning a run of %s: %w", ds.name, err)
	}
	r := &Run{runState{db: db, ds: ds, id: id, opts: opts, guard: cfg.Guard, nparts: parts, prev: prev,
		digest: xxhash.New(), started: db.opts.now()}}
	s := &r.runState
	s.opts.Schema.Columns = slices.Clone(opts.Schema.Columns)
	s.opts.Schema.Key = slices.Clone(opts.Schema.Key)
	for i, c := range s.opts.Schema.Columns {
		s.cols = append(s.cols, []byte(c.Name))
		s.byName = append(s.byName, i)
	}
	slices.SortFunc(s.byName, func(a, b int) int { return bytes.Compare(s.cols[a], s.cols[b]) })
	for _, k := range s.opts.Schema.Key {
		s.keyIdx = append(s.keyIdx, columnIndex(s.opts.Schema, k))
	}
	s.keyName = []byte(s.opts.Schema.Key[0])
	if prev != nil {
		s.prevVis = db.txm.Visibility(ds.name, prev.Version)
		s.readOpts = readOpts(s.prevVis)
	}
	for p := 0; p < parts; p++ {
		rp := &runPart{table: dataTable(ds.name, p), scratch: scratchTable(ds.name, p)}
		rp.data.Table, rp.seen.Table = rp.table, rp.scratch
		if prev != nil {
			it, err := db.st.Scan(ctx, rp.table, store.ScanOptions{ReadOptions: s.readOpts})
			if err != nil {
				s.closeIters()
				db.txm.Abort(ctx, id, nil)
				return nil, fmt.Errorf("snapshot: beginning a run of %s: %w", ds.name, err)
			}
			rp.cur = newRowReader(it)
		}
		s.parts = append(s.parts, rp)
	}
	ds.mu.Lock()
	ds.run = r
	ds.mu.Unlock()
	db.logger.Info("run begun", "dataset", ds.name, "txn", id, "version", s.prevVersion())
	return r, nil
}

func (s *runState) prevVersion() int64 {
	if s.prev == nil {
		return 0
	}
	return s.prev.Version
}

func (s *runState) closeIters() {
	for _, p := range s.parts {
		if p.cur != nil {
			p.cur.close()
			p.cur = nil
		}
	}
}

// PartitionOf returns the partition (0..partitions-1) of an encoded row
// key: xxhash64 of the key modulo partitions.
func PartitionOf(rowKey []byte, partitions int) int {
	if partitions <= 1 {
		return 0
	}
	return int(xxhash.Sum64(rowKey) % uint64(partitions))
}

// EncodeKey returns the row key of key values given in key order (see
// encoding.go). ErrBadKey for NULL or unparsable values.
func EncodeKey(key []Value) ([]byte, error) {
	var out []byte
	for _, v := range key {
		var err error
		if out, err = appendKeyValue(out, v); err != nil {
			return nil, err
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: empty key", ErrBadKey)
	}
	return out, nil
}

func (s *runState) statsNow() RunStats {
	st := s.stats
	st.Checksum = fmt.Sprintf("%016x", s.sum)
	return st
}

// publishStats makes the counts so far visible to Stats.
func (s *runState) publishStats() {
	st := s.statsNow()
	s.pubMu.Lock()
	s.pub = st
	s.pubMu.Unlock()
}

// liveStats returns the last published counts; safe from any goroutine.
func (s *runState) liveStats() RunStats {
	s.pubMu.Lock()
	defer s.pubMu.Unlock()
	return s.pub
}

func (s *runState) usable() error {
	if s.done {
		return ErrRunClosed
	}
	if s.err != nil {
		return s.err
	}
	return s.db.check()
}

// put implements Run.Put: see the delta rules in doc.go (D1-D4).
func (s *runState) put(ctx context.Context, vals []Value) error {
	if err := s.usable(); err != nil {
		return err
	}
	cols := s.opts.Schema.Columns
	if len(vals) != len(cols) {
		return fmt.Errorf("%w: %d values for %d columns", ErrInvalidArgument, len(vals), len(cols))
	}
	for i := range vals {
		if k := vals[i].Kind; k != KindNull && k != cols[i].Kind {
			return fmt.Errorf("%w: column %q holds %s, got a %s value", ErrBadSchema, cols[i].Name, cols[i].Kind, k)
		}
	}
	var err error
	s.keyBuf = s.keyBuf[:0]
	for _, i := range s.keyIdx {
		if s.keyBuf, err = appendKeyValue(s.keyBuf, vals[i]); err != nil {
			return fmt.Errorf("%w (column %q)", err, cols[i].Name)
		}
	}
	key := s.keyBuf
	p := s.parts[PartitionOf(key, s.nparts)]
	switch c := bytes.Compare(key, p.lastKey); {
	case c == 0 && p.lastKey != nil:
		return fmt.Errorf("%w: key given twice", ErrBadKey)
	case c < 0 && !p.switched:
		// Phase B begins; phase A's writes must be readable by revisit.
		if err := s.flushData(ctx, p); err != nil {
			return err
		}
		p.switched = true
		p.switchKey = append([]byte{}, p.lastKey...)
		s.ds.mu.Lock()
		s.ds.scratchDirty = true // before the first scratch write
		s.ds.mu.Unlock()
	}

	// Find the row in the previous version (and, in phase B below
	// switchKey, whether phase A saw or deleted it).
	s.res = s.res[:0]
	if p.switched && bytes.Compare(key, p.switchKey) <= 0 {
		if err := s.revisit(ctx, p, key); err != nil {
			return err
		}
	} else if s.prev != nil {
		if err := s.readPrev(ctx, p, key); err != nil {
			s.err = err
			return err
		}
	}
	p.lastKey = append(p.lastKey[:0], key...)

	// Encode the row's cell values and fold it into the checksum (D6).
	s.enc = s.enc[:0]
	s.encOff = s.encOff[:0]
	s.digest.Reset()
	var lenBuf [binary.MaxVarintLen64]byte
	for i := range vals {
		s.encOff = append(s.encOff, len(s.enc))
		s.enc = appendCellValue(s.enc, vals[i])
		s.digest.Write(lenBuf[:binary.PutUvarint(lenBuf[:], uint64(len(s.cols[i])))])
		s.digest.Write(s.cols[i])
		v := s.enc[s.encOff[i]:]
		s.digest.Write(lenBuf[:binary.PutUvarint(lenBuf[:], uint64(len(v)))])
		s.digest.Write(v)
	}
	s.encOff = append(s.encOff, len(s.enc))
	s.sum += s.digest.Sum64()

	// Write what differs (D1-D3).
	rowStart := len(p.arena)
	p.arena = append(p.arena, key...)
	row := p.arena[rowStart:len(p.arena):len(p.arena)]
	exists := len(s.res) > 0
	changed := false
	ri := 0
	for _, ci := range s.byName {
		name := s.cols[ci]
		for ri < len(s.res) && bytes.Compare(s.res[ri].name, name) < 0 {
			// a column the new schema no longer has (D3)
			s.writeDeleteColumn(p, row, s.res[ri].name)
			changed = true
			ri++
		}
		nv := s.enc[s.encOff[ci]:s.encOff[ci+1]]
		if ri < len(s.res) && bytes.Equal(s.res[ri].name, name) {
			same := bytes.Equal(s.res[ri].value, nv)
			ri++
			if same {
				continue
			}
		}
		s.writePut(p, row, name, nv)
		changed = true
	}
	for ; ri < len(s.res); ri++ {
		s.writeDeleteColumn(p, row, s.res[ri].name)
		changed = true
	}
	if !changed {
		p.arena = p.arena[:rowStart] // nothing refers to the row key
	}
	switch {
	case !exists:
		s.stats.Inserted++
	case changed:
		s.stats.Updated++
	default:
		s.stats.Unchanged++
	}
	s.stats.Rows++
	if s.stats.Rows%1024 == 0 {
		s.publishStats()
	}

	// Record the key as seen (D5), in phase B only.
	if p.switched {
		s.recordSeen(p, key)
	}
	if p.data.Len() >= s.db.opts.batchSize {

		if err := s.flushData(ctx, p); err != nil {
			return err
		}
	}
	if p.seen.Len() >= s.db.opts.batchSize {
		if err := s.flushSeen(ctx, p); err != nil {
			return err
		}
	}
	s.hook("put", s.stats.Rows)
	return nil
}

func (s *runState) recordSeen(p *runPart, key []byte) {
	ss := len(p.sarena)
	p.sarena = append(p.sarena, key...)
	p.sarena = binary.BigEndian.AppendUint64(p.sarena, p.seq)
	p.seq++
	p.seen.Put(p.sarena[ss:ss+len(key):ss+len(key)], p.sarena[ss+len(key):len(p.sarena):len(p.sarena)], s.id, nil)
}

func (s *runState) hook(point string, n int64) {
	if h := s.db.opts.hook; h != nil {
		h(point, n)
	}
}

// readPrev resolves key's row in the previous version into s.res. In
// phase A it walks the partition's iterator forward, writing a row delete
// marker for every existing row it passes (the source skipped it); in
// phase B it steps a few rows forward, seeks when the key is further, and
// falls back to a point Get for keys behind the iterator.
func (s *runState) readPrev(ctx context.Context, p *runPart, key []byte) error {
	var cells []store.Cell
	steps := 0
	for p.cur != nil {
		if !p.loaded {
			if !p.cur.next() {
				if err := p.cur.err(); err != nil {
					return fmt.Errorf("snapshot: reading %s version %d: %w", s.ds.name, s.prev.Version, err)
				}
				// Exhausted: nothing at or above the floor.
				if !p.known(key) {
					return s.getPrev(ctx, p, key)
				}
				break
			}
			p.loaded = true
		}
		c := bytes.Compare(p.cur.row, key)
		if c > 0 {
			if !p.known(key) { // behind the iterator (phase B)
				return s.getPrev(ctx, p, key)
			}
			break // absent
		}
		p.pass()
		if c == 0 {
			cells = p.cur.cells // valid until the next call to next
			break
		}
		// A previous row below key.
		if !p.switched {
			if err := s.deleteSkipped(ctx, p); err != nil {
				return err
			}
			continue
		}
		if steps++; steps > 8 {
			p.cur.seek(key)
			p.loaded = false
			p.floor, p.floorIncl = append(p.floor[:0], key...), true
			steps = 0
		}
	}
	s.res = resolve(cells, s.prevVis, s.res)
	return nil
}

// known reports whether key lies in the region the iterator has covered:
// above the floor, below the loaded row.
func (p *runPart) known(key []byte) bool {
	c := bytes.Compare(key, p.floor)
	return c > 0 || (c == 0 && p.floorIncl) || p.floor == nil
}

// pass marks the loaded row as passed: it becomes the floor.
func (p *runPart) pass() {
	p.loaded = false
	p.floor, p.floorIncl = append(p.floor[:0], p.cur.row...), false
}

func (s *runState) getPrev(ctx context.Context, p *runPart, key []byte) error {
	cells, err := s.db.st.Get(ctx, p.table, key, s.readOpts)
	if err != nil {
		return fmt.Errorf("snapshot: reading %s version %d: %w", s.ds.name, s.prev.Version, err)
	}
	s.res = resolve(cells, s.prevVis, s.res)
	return nil
}

// deleteSkipped writes a row delete marker for the previous version's row
// under the iterator when it exists there (phase A).
func (s *runState) deleteSkipped(ctx context.Context, p *runPart) error {
	s.tmp = resolve(p.cur.cells, s.prevVis, s.tmp[:0])
	if len(s.tmp) == 0 {
		return nil // already deleted in the previous version
	}
	st := len(p.arena)
	p.arena = append(p.arena, p.cur.row...)
	p.data.DeleteRow(p.arena[st:len(p.arena):len(p.arena)], s.id)
	s.stats.Deleted++
	s.stats.BytesWritten += int64(len(p.cur.row) + 8)
	if p.data.Len() >= s.db.opts.batchSize {
		return s.flushData(ctx, p)
	}
	return nil
}

// revisit handles a phase B key at or below switchKey: phase A (whose
// writes were flushed at the switch) either saw it (then it is a
// duplicate, ErrBadKey) or passed it in the previous version and wrote a
// row delete marker, which is taken back. A key given twice within phase
// B is left to the scratch merge at commit. It leaves the previous
// version's row in s.res.
func (s *runState) revisit(ctx context.Context, p *runPart, key []byte) error {
	// One Get for both the run's own cells (at its id, the newest) and the
	// previous version's.
	// Versions above the previous one are the run's own and excluded
	// ones (invalid, rolled back): count them all.
	o := s.readOpts
	o.TimeRange = store.TimeRange{Min: 0, Max: s.id + 1}
	o.MaxVersions = 2 + s.prevVis.ExcludedAtOrBelow(s.id)
	if s.prev == nil {
		o = store.ReadOptions{TimeRange: store.TimeRange{Min: s.id, Max: s.id + 1}}
	}
	cells, err := s.db.st.Get(ctx, p.table, key, o)
	if err != nil {
		s.err = fmt.Errorf("snapshot: reading %s txn %d: %w", s.ds.name, s.id, err)
		return s.err
	}
	own, marked := 0, false
	prevCells := cells[:0]
	for _, c := range cells {
		if c.Timestamp == s.id {
			own++
			marked = marked || c.Kind == store.KindDeleteRow
			continue
		}
		prevCells = append(prevCells, c)
	}
	s.res = resolve(prevCells, s.prevVis, s.res[:0])
	switch {
	case marked:
		p.data.DeleteVersion(append([]byte{}, key...), nil, s.id)
		s.stats.Deleted--
		s.stats.BytesWritten -= int64(len(key) + 8)
	case own > 0 || len(s.res) > 0:
		return fmt.Errorf("%w: key given twice", ErrBadKey)
	}
	return nil
}

func (s *runState) writePut(p *runPart, row, col, val []byte) {
	st := len(p.arena)
	p.arena = append(p.arena, val...)
	v := p.arena[st:len(p.arena):len(p.arena)]
	p.data.Put(row, col, s.id, v)
	s.stats.BytesWritten += int64(len(row) + len(col) + len(val) + 8)
}

func (s *runState) writeDeleteColumn(p *runPart, row, col []byte) {
	st := len(p.arena)
	p.arena = append(p.arena, col...)
	c := p.arena[st:len(p.arena):len(p.arena)]
	p.data.DeleteColumn(row, c, s.id)
	s.stats.BytesWritten += int64(len(row) + len(col) + 8)
}

func (s *runState) flushData(ctx context.Context, p *runPart) error {
	if p.data.Len() == 0 {
		return nil
	}
	n := p.data.Len()
	if err := s.db.st.Apply(ctx, &p.data); err != nil {
		s.err = fmt.Errorf("snapshot: writing %s txn %d: %w", s.ds.name, s.id, err)
		return s.err
	}
	s.db.metrics.cellsWrite.Add(float64(n))
	p.data.Reset()
	p.arena = p.arena[:0]
	s.hook("flush", s.stats.Rows)
	return nil
}

func (s *runState) flushSeen(ctx context.Context, p *runPart) error {
	if p.seen.Len() == 0 {
		return nil
	}
	if err := s.db.st.Apply(ctx, &p.seen); err != nil {
		s.err = fmt.Errorf("snapshot: recording seen keys of %s txn %d: %w", s.ds.name, s.id, err)
		return s.err
	}
	p.seen.Reset()
	p.sarena = p.sarena[:0]
	return nil
}

// commit implements Run.Commit.
func (s *runState) commit(ctx context.Context) (vi VersionInfo, err error) {
	if err := s.usable(); err != nil {
		return VersionInfo{}, err
	}
	start := time.Now()
	defer func() {
		if err != nil && !s.done {
			if aerr := s.abort(context.WithoutCancel(ctx), err.Error()); aerr != nil {
				err = errors.Join(err, aerr)
			}
		}
	}()
	for _, p := range s.parts {
		if err := s.flushData(ctx, p); err != nil {
			return VersionInfo{}, err
		}
		if err := s.flushSeen(ctx, p); err != nil {
			return VersionInfo{}, err
		}
	}
	s.hook("commit:flushed", s.stats.Rows)
	// Delete markers for rows not seen (D5), and duplicate keys.
	for _, p := range s.parts {
		if err := s.markDeleted(ctx, p); err != nil {
			return VersionInfo{}, err
		}
		if err := s.flushData(ctx, p); err != nil {
			return VersionInfo{}, err
		}
	}
	s.closeIters()
	s.hook("commit:deleted", s.stats.Deleted)
	if err := s.checkGuards(); err != nil {
		return VersionInfo{}, err
	}
	// Data first (flushed, not yet durable), then the commit record.
	if err := s.db.st.Sync(ctx); err != nil {
		return VersionInfo{}, fmt.Errorf("snapshot: syncing %s txn %d: %w", s.ds.name, s.id, err)
	}
	s.hook("commit:synced", 0)
	vi = VersionInfo{
		Dataset: s.ds.name, Version: s.id, CommittedAt: s.db.opts.now().UTC(),
		Source: s.opts.Source, Stats: s.statsNow(), Schema: s.opts.Schema,
	}
	enc, err := json.Marshal(vi)
	if err != nil {
		return VersionInfo{}, fmt.Errorf("snapshot: encoding version info: %w", err)
	}
	if err := s.db.writable(); err != nil { // S3
		return VersionInfo{}, fmt.Errorf("snapshot: committing %s txn %d: %w", s.ds.name, s.id, err)
	}
	b := &store.Batch{Table: s.db.meta}
	b.Put(versionKey(s.ds.name, s.id), colInfo, 0, enc)
	b.Put(datasetKey(s.ds.name), colCur, 0, be64(s.id))
	if err := s.db.txm.Commit(ctx, s.id, b); err != nil {
		return VersionInfo{}, fmt.Errorf("snapshot: committing %s txn %d: %w", s.ds.name, s.id, err)
	}
	s.hook("commit:committed", s.id)
	s.publishStats()
	s.done = true
	ds := s.ds
	ds.mu.Lock()
	ds.current = s.id
	stored := vi
	ds.versions = append(ds.versions, &stored)
	ds.writer, ds.run = "", nil
	vi = ds.infoLocked(&stored)
	ds.mu.Unlock()
	s.db.clearScratchIfDirty(context.WithoutCancel(ctx), ds, s.nparts)
	s.hook("commit:cleared", s.id)
	s.db.metrics.runs.WithLabelValues("committed").Inc()
	s.db.metrics.commitSecs.Observe(time.Since(start).Seconds())
	s.db.logger.Info("run committed", "dataset", ds.name, "txn", s.id, "version", s.id,
		"rows", vi.Stats.Rows, "inserted", vi.Stats.Inserted, "updated", vi.Stats.Updated,
		"deleted", vi.Stats.Deleted, "bytes_written", vi.Stats.BytesWritten)
	return vi, nil
}

func (s *runState) checkGuards() error {
	if s.opts.Force {
		return nil
	}
	if s.stats.Rows == 0 && !s.guard.AllowEmpty {
		return fmt.Errorf("%w: the run has 0 rows (set allow_empty or force)", ErrGuardRefused)
	}
	maxShrink := s.guard.MaxShrink
	if maxShrink == 0 {
		maxShrink = defaultMaxShrink
	}
	if s.prev != nil && maxShrink < 1 && s.prev.Stats.Rows > 0 {
		frac := float64(s.stats.Deleted) / float64(s.prev.Stats.Rows)
		if frac > maxShrink {
			return fmt.Errorf("%w: the run deletes %d of %d rows (%.1f%% > max_shrink %.1f%%)", ErrGuardRefused,
				s.stats.Deleted, s.prev.Stats.Rows, 100*frac, 100*maxShrink)
		}
	}
	return nil
}

// markDeleted writes the row delete markers still due at commit (D5). In
// phase A they are the previous rows after the last key, read on from the
// partition's iterator. In phase B the keys seen (the scratch table, which
// the store keeps sorted) are merge-joined with the previous rows above
// switchKey; a key seen twice there is ErrBadKey.
func (s *runState) markDeleted(ctx context.Context, p *runPart) error {
	if !p.switched {
		if p.cur == nil {
			return nil
		}
		for {
			if !p.loaded {
				if !p.cur.next() {
					break
				}
				p.loaded = true
			}
			p.pass()
			if err := s.deleteSkipped(ctx, p); err != nil {
				return err
			}
		}
		if err := p.cur.err(); err != nil {
			return fmt.Errorf("snapshot: reading %s version %d: %w", s.ds.name, s.prev.Version, err)
		}
		return nil
	}
	seenIt, err := s.db.st.Scan(ctx, p.scratch, store.ScanOptions{})
	if err != nil {
		return fmt.Errorf("snapshot: reading seen keys of %s: %w", s.ds.name, err)
	}
	seen := newRowReader(seenIt)
	defer seen.close()
	var prev *rowReader
	if s.prev != nil {
		o := s.readOpts
		o.Columns = [][]byte{s.keyName}
		it, err := s.db.st.Scan(ctx, p.table, store.ScanOptions{ReadOptions: o, Start: append(append([]byte{}, p.switchKey...), 0)})
		if err != nil {
			return fmt.Errorf("snapshot: reading %s version %d: %w", s.ds.name, s.prev.Version, err)
		}
		prev = newRowReader(it)
		defer prev.close()
	}
	nextSeen := func() (bool, error) {
		if !seen.next() {
			return false, nil
		}
		if len(seen.cells) > 1 {
			return false, fmt.Errorf("%w: a key was given %d times", ErrBadKey, len(seen.cells))
		}
		return true, nil
	}
	haveSeen, err := nextSeen()
	if err != nil {
		return err
	}
	if prev != nil {
		for prev.next() {
			for haveSeen && bytes.Compare(seen.row, prev.row) < 0 {
				if haveSeen, err = nextSeen(); err != nil {
					return err
				}
			}
			if haveSeen && bytes.Equal(seen.row, prev.row) {
				continue
			}
			s.tmp = resolve(prev.cells, s.prevVis, s.tmp[:0])
			if len(s.tmp) == 0 {
				continue // already deleted in the previous version
			}
			st := len(p.arena)
			p.arena = append(p.arena, prev.row...)
			p.data.DeleteRow(p.arena[st:len(p.arena):len(p.arena)], s.id)
			s.stats.Deleted++
			s.stats.BytesWritten += int64(len(prev.row) + 8)
			if p.data.Len() >= s.db.opts.batchSize {
				if err := s.flushData(ctx, p); err != nil {
					return err
				}
			}
		}
		if err := prev.err(); err != nil {
			return fmt.Errorf("snapshot: reading %s version %d: %w", s.ds.name, s.prev.Version, err)
		}
	}
	for haveSeen {
		if haveSeen, err = nextSeen(); err != nil {
			return err
		}
	}
	if err := seen.err(); err != nil {
		return fmt.Errorf("snapshot: reading seen keys of %s: %w", s.ds.name, err)
	}
	return nil
}

// abort implements Run.Abort.
func (s *runState) abort(ctx context.Context, reason string) error {
	if s.done {
		return nil
	}
	s.publishStats()
	s.done = true
	s.closeIters()
	err := s.db.txm.Abort(ctx, s.id, nil)
	s.db.clearScratchIfDirty(ctx, s.ds, s.nparts)
	s.ds.release()
	s.db.metrics.runs.WithLabelValues("aborted").Inc()
	s.db.logger.Warn("run aborted", "dataset", s.ds.name, "txn", s.id, "reason", reason)
	if err != nil {
		return fmt.Errorf("snapshot: aborting %s txn %d: %w", s.ds.name, s.id, err)
	}
	return nil
}

var _ = strconv.Itoa
