package server

import (
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/snapstore/snapstore/snapshot"
)

// The cache of built Parquet files. Readers of Parquet over HTTP (DuckDB's
// httpfs, fsspec, Spark) ask for the size first (HEAD, or a Range of the
// footer) and then for the row groups by Range: several requests of the
// same file, which the server would otherwise make once each. Built files
// are kept on local disk, least recently used evicted past the bound, and
// every request of the same key is answered from the one file:
//
//	B1. The key is everything that decides the bytes (parquetKey): the
//	    request is normalized by its handler, and the version is a
//	    number resolved at the request, so a tag moved or a new current
//	    version is another key, never a stale file. A version number
//	    names one content for good: it is a transaction id, handed out
//	    once (txn.I1), and a committed version is never rewritten (a
//	    rollback commits a new one).
//	B2. A file has its name in the cache only once whole: it is built
//	    under a temporary name and renamed when its footer is written;
//	    a build that fails or whose client leaves removes it.
//	B3. One build at a time per key: the requests of a key being built
//	    wait for it (singleflight) and are answered from its file.
//	B4. The cache holds nothing the node cannot make again: it is
//	    emptied at start, and its files are named by a hash of their
//	    key, which holds neither a token nor a value in clear.
//	B5. Its files, whole and being built, hold at most Size bytes
//	    together: a build reserves each byte before it writes it
//	    (buildFile), evicting the least recently used whole files to
//	    make room. A build that finds no room, because its file is
//	    larger than Size or the other builds hold the rest, moves what
//	    it wrote to a file of the temporary directory without a name
//	    there (buildUnnamedParquet's) and goes on writing there: its
//	    answer is served and not kept.
//
// The grant of the token is checked before (the middleware's checkGrant),
// and the handler resolves the version before it looks at the cache, so a
// version collected since is 410 even when its file is cached. A file
// open for an answer stays readable when it is evicted meanwhile (its
// name removed; on Unix the data lives until it is closed).

// ParquetCacheOptions bound the cache of built Parquet files.
type ParquetCacheOptions struct {
	// Dir is the directory of the cache, emptied of its files at start;
	// "": no cache, each request builds its file.
	Dir string
	// Size is the most bytes of files the cache holds, whole and being
	// built (B5); 0 or less: no cache. A file that does not fit is served
	// to the requests that wait for its build and not kept.
	Size int64
}

// parquetCache is the cache of built Parquet files (B1-B4 above).
type parquetCache struct {
	dir  string
	size int64
	m    *metrics

	mu sync.Mutex
	// files are the whole files by name, lru their order of use (front:
	// the latest), held the sum of their sizes; building is the sum of
	// the bytes the builds under way reserved (B5): held + building <=
	// size.
	files    map[string]*list.Element // of *cachedParquet
	lru      list.List
	held     int64
	building int64
	// builds are the builds under way by name.
	builds map[string]*parquetBuild
	// onWait, when set (tests), is called as a request begins to wait
	// for another's build.
	onWait func()
	// onBuilt, when set (tests), is called when a build wrote its whole
	// file, before the cache keeps it.
	onBuilt func()
}

// cachedParquet is a whole file of the cache.
type cachedParquet struct {
	name string // the key's hash in hex; the file is name+".parquet"
	size int64
}

// parquetBuild is a build under way; donec closes when it ends.
type parquetBuild struct {
	donec chan struct{}
	// Set before donec closes:
	err error
	// retry: the waiters build the file themselves, because the build's
	// client went away (err is its context's) or the file found no room
	// in the cache and was not kept (B5).
	retry bool
}

// Suffixes of the cache's files: whole ones, and those being built.
const (
	parquetCachedSuffix = ".parquet"
	parquetBuildSuffix  = ".tmp"
)

// openParquetCache opens the cache in dir, created 0700 when absent, and
// removes the files a previous process left there (B4).
func openParquetCache(dir string, size int64, m *metrics) (*parquetCache, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("server: the Parquet cache directory: %w", err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("server: the Parquet cache directory: %w", err)
	}
	for _, e := range ents {
		// Only the cache's own files: the directory is configured and may
		// hold others.
		if n := e.Name(); e.Type().IsRegular() && (strings.HasSuffix(n, parquetCachedSuffix) || strings.HasSuffix(n, parquetBuildSuffix)) {
			if err := os.Remove(filepath.Join(dir, n)); err != nil {
				return nil, fmt.Errorf("server: emptying the Parquet cache: %w", err)
			}
		}
	}
	m.parquetBytes.Set(0)
	return &parquetCache{dir: dir, size: size, m: m, files: map[string]*list.Element{}, builds: map[string]*parquetBuild{}}, nil
}

// open returns the file named name (a key's hash, parquetKey.sum), open
// for reading: the cached one, or the one build writes when the cache has
// none (B3). The caller closes it.
func (pc *parquetCache) open(ctx context.Context, name string, build func(parquetOut) error) (*os.File, error) {
	for {
		pc.mu.Lock()
		if el, ok := pc.files[name]; ok {
			pc.lru.MoveToFront(el)
			f, err := os.Open(pc.path(name, parquetCachedSuffix))
			if err != nil {
				// Removed behind the cache's back: forget it, build again.
				pc.dropLocked(el)
				pc.mu.Unlock()
				continue
			}
			pc.mu.Unlock()
			pc.m.parquetHits.Inc()
			return f, nil
		}
		if b, ok := pc.builds[name]; ok {
			pc.mu.Unlock()
			if pc.onWait != nil {
				pc.onWait()
			}
			select {
			case <-b.donec:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			if b.retry {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
				if b.err == nil {
					// Built but not kept: build this one's own.
					return pc.buildOnce(build)
				}
				continue // its client went away: build it here
			}
			if b.err != nil {
				return nil, b.err
			}
			continue // built: served from the cache
		}
		b := &parquetBuild{donec: make(chan struct{})}
		pc.builds[name] = b
		pc.mu.Unlock()
		return pc.lead(ctx, name, b, build)
	}
}

// lead builds the file of name for the requests waiting on b, and ends
// b however the build ends, a panic included (its waiters then get
// errBuildPanicked rather than wait for ever).
func (pc *parquetCache) lead(ctx context.Context, name string, b *parquetBuild, build func(parquetOut) error) (f *os.File, err error) {
	kept := false
	err = errBuildPanicked
	defer func() {
		pc.mu.Lock()
		delete(pc.builds, name)
		pc.mu.Unlock()
		b.err = err
		// A build stopped by its client's going away is no answer for the
		// others: they build it again, one of them for the rest.
		b.retry = err != nil && ctx.Err() != nil || err == nil && !kept
		close(b.donec)
	}()
	f, kept, err = pc.buildAndKeep(name, build)
	return f, err
}

// errBuildPanicked is the error of the requests that waited for a build
// that panicked.
var errBuildPanicked = errors.New("server: the Parquet file's build failed")

// buildAndKeep builds the file of name under a temporary name, then
// renames it to its own and keeps it (B2), its bytes counted against the
// bound as they are written (B5). The build runs in its request's
// context (the reader it reads is pinned for that request): a client
// that goes away stops it, and its temporary file is removed. Building
// on for the cache would let clients that hang up make the node build
// files nobody waits for, holding the reservation of block cache and a
// pin of the version meanwhile; the next request of the key builds it
// again. kept is false when the file found no room in the cache: it is
// returned open, without a name.
func (pc *parquetCache) buildAndKeep(name string, build func(parquetOut) error) (*os.File, bool, error) {
	pc.m.parquetBuilds.Inc()
	f, err := os.CreateTemp(pc.dir, name+"-*"+parquetBuildSuffix)
	if err != nil {
		return nil, false, err
	}
	bf := &buildFile{pc: pc, f: f, tmp: f.Name()}
	// On every way out, a panic of the build included: the temporary
	// name is removed and its bytes' reservation given back unless the
	// file is kept, the file closed unless returned.
	kept, returned := false, false
	defer func() {
		if !returned {
			bf.f.Close()
		}
		if !kept {
			bf.drop()
		}
	}()
	if err := build(bf); err != nil {
		return nil, false, err
	}
	if pc.onBuilt != nil {
		pc.onBuilt()
	}
	if bf.tmp == "" { // moved out of the cache (B5)
		pc.m.parquetSpills.Inc()
		returned = true
		return bf.f, false, nil
	}
	if err := os.Rename(bf.tmp, pc.path(name, parquetCachedSuffix)); err != nil {
		return nil, false, err
	}
	kept, returned = true, true
	pc.mu.Lock()
	defer pc.mu.Unlock()
	// The reservation becomes the whole file's share of the bound.
	pc.building -= bf.reserved
	pc.files[name] = pc.lru.PushFront(&cachedParquet{name: name, size: bf.reserved})
	pc.held += bf.reserved
	pc.m.parquetBytes.Set(float64(pc.held))
	return bf.f, true, nil
}

// buildOnce builds a file that is not kept, for a request that waited
// for a build the cache did not keep: outside the cache, as without one.
func (pc *parquetCache) buildOnce(build func(parquetOut) error) (*os.File, error) {
	pc.m.parquetBuilds.Inc()
	return buildUnnamedParquet(build)
}

// reserve counts grow more bytes against the bound for a build whose
// file has reserved have bytes so far, evicting the least recently used
// whole files to make room (B5); false, evicting nothing, when no room
// can be made: the file would be larger than the bound, or the other
// builds hold the rest of it.
func (pc *parquetCache) reserve(have, grow int64) bool {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if have+grow > pc.size || pc.building+grow > pc.size {
		return false
	}
	for pc.held+pc.building+grow > pc.size && pc.lru.Len() > 0 {
		pc.dropLocked(pc.lru.Back())
		pc.m.parquetEvictions.Inc()
	}
	if pc.held+pc.building+grow > pc.size {
		return false // only if held miscounts: refuse rather than overshoot
	}
	pc.building += grow
	return true
}

// release gives back n bytes a build reserved, once its file no longer
// holds them in the cache's directory.
func (pc *parquetCache) release(n int64) {
	pc.mu.Lock()
	pc.building -= n
	pc.mu.Unlock()
}

// parquetOut is what a build writes its Parquet file to, from its start
// (buildParquet): a file of the temporary directory, or a build of the
// cache (buildFile).
type parquetOut interface {
	io.Writer
	io.Seeker
	Truncate(size int64) error
}

// buildFile is the file a build of the cache writes (B5): no byte is
// written past what the file reserved from the bound, so the directory's
// bytes never exceed it. When the bound has no room for more, the file
// moves out of the cache (spill) and is written on, uncounted. Not safe
// for concurrent use: one build writes it.
type buildFile struct {
	pc *parquetCache
	f  *os.File
	// tmp is f's name in the cache's directory; "" once it moved out.
	tmp string
	// pos is the offset of the next write; reserved the bytes counted
	// against the bound for f while in the cache, at least its size.
	pos, reserved int64
}

func (bf *buildFile) Write(p []byte) (int, error) {
	if err := bf.room(bf.pos + int64(len(p))); err != nil {
		return 0, err
	}
	n, err := bf.f.Write(p)
	bf.pos += int64(n)
	return n, err
}

func (bf *buildFile) Seek(offset int64, whence int) (int64, error) {
	pos, err := bf.f.Seek(offset, whence)
	if err == nil {
		bf.pos = pos
	}
	return pos, err
}

// Truncate changes the file's size to size; the bytes cut off are given
// back to the bound.
func (bf *buildFile) Truncate(size int64) error {
	if err := bf.room(size); err != nil {
		return err
	}
	if err := bf.f.Truncate(size); err != nil {
		return err
	}
	if bf.tmp != "" && size < bf.reserved {
		bf.pc.release(bf.reserved - size)
		bf.reserved = size
	}
	return nil
}

// room makes the file's reservation cover size bytes, or moves the file
// out of the cache when the bound has no room for them.
func (bf *buildFile) room(size int64) error {
	if bf.tmp == "" || size <= bf.reserved {
		return nil
	}
	if bf.pc.reserve(bf.reserved, size-bf.reserved) {
		bf.reserved = size
		return nil
	}
	return bf.spill()
}

// spill moves the file out of the cache: its bytes are copied to a file
// of the temporary directory without a name there, where the build goes
// on at the same offset, and its name and reservation in the cache are
// given up.
func (bf *buildFile) spill() error {
	out, err := openUnnamedParquet()
	if err != nil {
		return err
	}
	if _, err = bf.f.Seek(0, io.SeekStart); err == nil {
		_, err = io.Copy(out, bf.f)
	}
	if err == nil {
		_, err = out.Seek(bf.pos, io.SeekStart)
	}
	if err != nil {
		out.Close()
		return err
	}
	bf.f.Close()
	bf.drop()
	bf.f = out
	return nil
}

// drop removes the file's name from the cache's directory, then gives
// its reservation back (in that order: the directory never holds more
// than is counted).
func (bf *buildFile) drop() {
	if bf.tmp == "" {
		return
	}
	os.Remove(bf.tmp)
	bf.pc.release(bf.reserved)
	bf.tmp, bf.reserved = "", 0
}

// dropLocked forgets the file of el and removes it from disk.
func (pc *parquetCache) dropLocked(el *list.Element) {
	cp := pc.lru.Remove(el).(*cachedParquet)
	delete(pc.files, cp.name)
	pc.held -= cp.size
	pc.m.parquetBytes.Set(float64(pc.held))
	// A name that cannot be removed stays on disk until the next start
	// empties the directory; the bound counts the files the cache knows.
	_ = os.Remove(pc.path(cp.name, parquetCachedSuffix))
}

func (pc *parquetCache) path(name, suffix string) string {
	return filepath.Join(pc.dir, name+suffix)
}

// parquetKey is what decides the bytes of a Parquet answer (B1), written
// field by field, each with its length, into a hash: the handler adds the
// normalized request (the dataset, the table, the version numbers, the
// columns, the key ranges as typed values, the limit, the compression),
// never its raw URL, so that two spellings of one request share a file,
// and nothing of the request's credentials.
type parquetKey struct {
	h hash.Hash
}

// newParquetKey starts the key of an answer of kind (rows, diff).
func newParquetKey(kind string) *parquetKey {
	k := &parquetKey{h: sha256.New()}
	k.str("parquet/" + kind)
	return k
}

func (k *parquetKey) int(v int64) {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(v))
	k.h.Write(b[:])
}

func (k *parquetKey) bytes(b []byte) {
	k.int(int64(len(b)))
	k.h.Write(b)
}

func (k *parquetKey) str(s string) { k.bytes([]byte(s)) }

// strs adds a list; nil and empty are the same list.
func (k *parquetKey) strs(ss []string) {
	k.int(int64(len(ss)))
	for _, s := range ss {
		k.str(s)
	}
}

// values adds a key prefix; nil (none given) and empty are the same.
func (k *parquetKey) values(vs []snapshot.Value) {
	k.int(int64(len(vs)))
	for _, v := range vs {
		k.int(int64(v.Kind))
		k.int(v.Int)
		k.int(int64(v.Uint))
		k.int(int64(math.Float64bits(v.Float)))
		k.bytes(v.Bytes)
	}
}

// sum names the file of the key made by build (the server's version,
// whose writer decides the bytes too): a SHA-256 in hex.
func (k *parquetKey) sum(build string) string {
	h := sha256.New()
	h.Write(k.h.Sum(nil))
	h.Write([]byte(build))
	return hex.EncodeToString(h.Sum(nil))
}

// etag is the strong ETag of the key's answer: the same bytes for the
// same key by the same build, so a hash of these.
func (k *parquetKey) etag(build string) string {
	return `"` + k.sum(build)[:32] + `"`
}
