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
	// Size is the most bytes of files the cache keeps; 0 or less: no
	// cache. A file larger than Size is served to the requests that wait
	// for its build and not kept.
	Size int64
}

// parquetCache is the cache of built Parquet files (B1-B4 above).
type parquetCache struct {
	dir  string
	size int64
	m    *metrics

	mu sync.Mutex
	// files are the whole files by name, lru their order of use (front:
	// the latest), held the sum of their sizes.
	files map[string]*list.Element // of *cachedParquet
	lru   list.List
	held  int64
	// builds are the builds under way by name.
	builds map[string]*parquetBuild
	// onWait, when set (tests), is called as a request begins to wait
	// for another's build.
	onWait func()
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
	// client went away (err is its context's) or the file was larger
	// than the cache and not kept.
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
func (pc *parquetCache) open(ctx context.Context, name string, build func(*os.File) error) (*os.File, error) {
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
					// Built but too large to keep: build this one's own.
					return pc.buildOnce(name, build)
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
func (pc *parquetCache) lead(ctx context.Context, name string, b *parquetBuild, build func(*os.File) error) (f *os.File, err error) {
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
// renames it to its own and keeps it, evicting the least recently used
// files past the bound (B2). The build runs in its request's context (the
// reader it reads is pinned for that request): a client that goes away
// stops it, and its temporary file is removed. Building on for the cache
// would let clients that hang up make the node build files nobody waits
// for, holding the reservation of block cache and a pin of the version
// meanwhile; the next request of the key builds it again. kept is false
// when the file is larger than the cache: it is returned open, without a
// name.
func (pc *parquetCache) buildAndKeep(name string, build func(*os.File) error) (*os.File, bool, error) {
	pc.m.parquetBuilds.Inc()
	f, err := os.CreateTemp(pc.dir, name+"-*"+parquetBuildSuffix)
	if err != nil {
		return nil, false, err
	}
	tmp := f.Name()
	// On every way out, a panic of the build included: the temporary
	// name is removed unless renamed, the file closed unless returned.
	renamed, returned := false, false
	defer func() {
		if !renamed {
			os.Remove(tmp)
		}
		if !returned {
			f.Close()
		}
	}()
	if err := build(f); err != nil {
		return nil, false, err
	}
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return nil, false, err
	}
	if size > pc.size {
		returned = true
		return f, false, nil
	}
	if err := os.Rename(tmp, pc.path(name, parquetCachedSuffix)); err != nil {
		return nil, false, err
	}
	renamed, returned = true, true
	pc.mu.Lock()
	defer pc.mu.Unlock()
	pc.files[name] = pc.lru.PushFront(&cachedParquet{name: name, size: size})
	pc.held += size
	for pc.held > pc.size {
		pc.dropLocked(pc.lru.Back())
		pc.m.parquetEvictions.Inc()
	}
	pc.m.parquetBytes.Set(float64(pc.held))
	return f, true, nil
}

// buildOnce builds a file of name that is not kept, for a request that
// waited for a build too large to keep.
func (pc *parquetCache) buildOnce(name string, build func(*os.File) error) (*os.File, error) {
	pc.m.parquetBuilds.Inc()
	f, err := os.CreateTemp(pc.dir, name+"-*"+parquetBuildSuffix)
	if err != nil {
		return nil, err
	}
	os.Remove(f.Name())
	if err := build(f); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
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
