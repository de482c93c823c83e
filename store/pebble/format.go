package pebble

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	cpebble "github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// Storage formats of the backend (docs/storage-format.md). The key and
// value encoding is the same in both; what changed is how Pebble keeps
// them:
//
//	1  Pebble's bytewise comparer, no bloom filters, Snappy everywhere
//	2  comparer splits keys after the row (comparer.go): bloom filters on
//	   rows, SeekPrefixGE for point reads; Zstandard on the lower levels
//
// A comparer is fixed for a database's life, so Open upgrades a format 1
// directory by copying it (migrateFormat1).
const (
	formatValue   = "2"
	format1Subdir = "format1"
)

// checkFormat writes the format version into a new database and checks it
// in an existing one.
func (s *Store) checkFormat() error {
	v, closer, err := s.db.Get(formatKey)
	switch {
	case errors.Is(err, cpebble.ErrNotFound):
		if err := s.db.Set(formatKey, []byte(formatValue), cpebble.Sync); err != nil {
			return fmt.Errorf("pebble: writing format version: %w", err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("pebble: reading format version: %w", err)
	}
	defer closer.Close()
	if string(v) != formatValue {
		return fmt.Errorf("%w: found version %q, want %q", ErrIncompatibleFormat, v, formatValue)
	}
	return nil
}

// dbComparer returns the name of the comparer that the Pebble database in
// dir was created with (from its newest OPTIONS file), or "" when dir holds
// no database.
func dbComparer(fs vfs.FS, dir string) (string, error) {
	desc, err := cpebble.Peek(dir, fs)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", nil
		}
		return "", err
	}
	if !desc.Exists {
		return "", nil
	}
	if desc.OptionsFilename == "" {
		return "", fmt.Errorf("pebble: %s has a database but no OPTIONS file", dir)
	}
	f, err := fs.Open(desc.OptionsFilename)
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "comparer="); ok {
			return v, nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", fmt.Errorf("pebble: %s names no comparer", desc.OptionsFilename)
}

// pebbleFile reports whether name is a file Pebble keeps in its directory.
func pebbleFile(name string) bool {
	switch {
	case name == "LOCK", name == "CURRENT",
		strings.HasPrefix(name, "MANIFEST-"), strings.HasPrefix(name, "OPTIONS-"), strings.HasPrefix(name, "marker."),
		strings.HasSuffix(name, ".log"), strings.HasSuffix(name, ".sst"), strings.HasSuffix(name, ".blob"),
		strings.HasSuffix(name, ".dbtmp"):
		return true
	}
	return false
}

// upgrade brings the database in dir to the current format, the caller
// holding dir's lock: a format 1 database is migrated, and a migration
// that stopped midway is finished.
func upgrade(dir string, po *cpebble.Options, lock *cpebble.Lock, logger *slog.Logger) error {
	fs := po.FS
	name, err := dbComparer(fs, dir)
	if err != nil {
		return err
	}
	_, statErr := fs.Stat(filepath.Join(dir, format1Subdir))
	switch {
	case statErr == nil && name == comparerName:
		// The copy may have finished before the old database went.
		done, err := hasFormat(dir, po, lock)
		if err != nil {
			return err
		}
		if done {
			return fs.RemoveAll(filepath.Join(dir, format1Subdir))
		}
	case statErr == nil:
	case name != cpebble.DefaultComparer.Name:
		return nil
	}
	return migrateFormat1(dir, po, lock, logger)
}

// hasFormat reports whether the database in dir holds the current format
// version.
func hasFormat(dir string, po *cpebble.Options, lock *cpebble.Lock) (bool, error) {
	o := *po
	o.Lock = lock
	db, err := cpebble.Open(dir, &o)
	if err != nil {
		return false, err
	}
	v, closer, err := db.Get(formatKey)
	done := err == nil && string(v) == formatValue
	if err == nil {
		closer.Close()
	} else if errors.Is(err, cpebble.ErrNotFound) {
		err = nil
	}
	return done, errors.Join(err, db.Close())
}

// migrateFormat1 upgrades the format 1 database in dir to format 2, the
// caller holding dir's lock. Every key and value is copied unchanged, in
// order, into SSTables that a new database in dir ingests; the old
// database waits in dir/format1 until the new one holds the format
// version, then is deleted. A crash at any point leaves either the old
// database (in dir, or complete in dir/format1 beside a partial new one,
// which the next Open throws away and copies again) or the new one.
func migrateFormat1(dir string, po *cpebble.Options, lock *cpebble.Lock, logger *slog.Logger) error {
	fs := po.FS
	old := filepath.Join(dir, format1Subdir)
	staging := old + ".tmp"
	if _, err := fs.Stat(old); err != nil {
		// Move the old database aside: into the staging directory file
		// by file (a crash midway is finished next time), then rename
		// the staging directory, which marks the move done.
		if err := fs.MkdirAll(staging, privateDirMode); err != nil {
			return err
		}
		names, err := fs.List(dir)
		if err != nil {
			return err
		}
		for _, name := range names {
			if name == "LOCK" || !pebbleFile(name) {
				continue
			}
			if err := fs.Rename(filepath.Join(dir, name), filepath.Join(staging, name)); err != nil {
				return err
			}
		}
		if err := syncDir(fs, staging); err != nil {
			return err
		}
		if err := fs.Rename(staging, old); err != nil {
			return err
		}
		if err := syncDir(fs, dir); err != nil {
			return err
		}
	} else {
		// An earlier migration stopped after the move: whatever new
		// database it began is thrown away.
		names, err := fs.List(dir)
		if err != nil {
			return err
		}
		for _, name := range names {
			if name != "LOCK" && pebbleFile(name) {
				if err := fs.Remove(filepath.Join(dir, name)); err != nil {
					return err
				}
			}
		}
	}
	logger.Info("pebble: upgrading storage format 1 to 2, copying every key once", "dir", dir)
	src, err := cpebble.Open(old, &cpebble.Options{FS: fs, ReadOnly: true, Logger: po.Logger, Cache: po.Cache})
	if err != nil {
		return fmt.Errorf("opening the format 1 database: %w", err)
	}
	npo := *po
	npo.Lock = lock
	dst, err := cpebble.Open(dir, &npo)
	if err != nil {
		return errors.Join(fmt.Errorf("creating the format 2 database: %w", err), src.Close())
	}
	wopts := npo.Clone()
	wopts.EnsureDefaults()
	wo := wopts.MakeWriterOptions(6, dst.TableFormat())
	wo.DisableValueBlocks = true // as compactions write them (options.go)
	n, err := copyAll(src, dst, wo, dir, fs)
	if err == nil {
		err = dst.Set(formatKey, []byte(formatValue), cpebble.Sync)
	}
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if cerr := src.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("copying into the format 2 database: %w", err)
	}
	logger.Info("pebble: storage format 2 written; deleting the format 1 copy", "dir", dir, "keys", n)
	return fs.RemoveAll(old)
}

// migrateTableBytes is the size at which the copy of a format 1 database
// starts a new SSTable.
const migrateTableBytes = 128 << 20

// copyAll copies every key of src, in order, into SSTables written in dir
// with wo (dst's options for the bottom level), and ingests them into dst,
// which is empty. It returns the number of keys copied.
func copyAll(src, dst *cpebble.DB, wo sstable.WriterOptions, dir string, fs vfs.FS) (int64, error) {
	it, err := src.NewIter(nil)
	if err != nil {
		return 0, err
	}
	defer it.Close()
	var paths []string
	defer func() {
		for _, p := range paths {
			_ = fs.Remove(p)
		}
	}()
	var w *sstable.Writer
	var size int64
	var n int64
	finish := func() error {
		if w == nil {
			return nil
		}
		err := w.Close()
		w = nil
		return err
	}
	for it.First(); it.Valid(); it.Next() {
		if w == nil || size >= migrateTableBytes {
			if err := finish(); err != nil {
				return n, err
			}
			p := filepath.Join(dir, fmt.Sprintf("format1-copy-%06d.sst", len(paths)))
			f, err := fs.Create(p, vfs.WriteCategoryUnspecified)
			if err != nil {
				return n, err
			}
			paths = append(paths, p)
			w = sstable.NewWriter(objstorageprovider.NewFileWritable(f), wo)
			size = 0
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return n, err
		}
		if err := w.Set(it.Key(), v); err != nil {
			return n, err
		}
		size += int64(len(it.Key()) + len(v))
		n++
	}
	if err := it.Error(); err != nil {
		return n, err
	}
	if err := finish(); err != nil {
		return n, err
	}
	if len(paths) == 0 {
		return 0, nil
	}
	return n, dst.Ingest(context.Background(), paths)
}

// syncDir makes the entries of dir durable.
func syncDir(fs vfs.FS, dir string) error {
	d, err := fs.OpenDir(dir)
	if err != nil {
		return err
	}
	if err := d.Sync(); err != nil {
		d.Close()
		return err
	}
	return d.Close()
}
