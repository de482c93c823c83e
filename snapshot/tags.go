package snapshot

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// ValidTagName checks a tag name: a name (validName) with at least one
// letter or one of "_.:@", so that wherever a version number or a tag may
// be given (a diff's from and to) a value of digits and signs always means
// a version ("3", "-1"); and not dots alone, since a tag is a segment of
// URL paths (/v1/datasets/{dataset}/tags/{tag}) where "." and ".." are
// dot-segments that browsers and curl remove (RFC 3986, 5.2.4): a tag so
// named could not be removed from the console. ErrInvalidArgument.
func ValidTagName(tag string) error {
	if err := validName("tag", tag); err != nil {
		return err
	}
	if strings.Trim(tag, "0123456789-") == "" {
		return fmt.Errorf("%w: tag name %q has only digits and \"-\", which would read as a version number; give it a letter or one of _.:@", ErrInvalidArgument, tag)
	}
	if strings.Trim(tag, ".") == "" {
		return fmt.Errorf("%w: tag name %q has only dots, which URL paths drop; give it a letter, a digit or one of _:@-", ErrInvalidArgument, tag)
	}
	return nil
}

// Tag names a kept version; tagged versions are exempt from GC (G1).
// Re-tagging moves the tag. One write of the row (D9), made only while
// the version is kept there: a tag never names a version GC expired.
// ErrVersionNotKept; ErrInvalidArgument for a bad tag name (ValidTagName).
func (db *DB) Tag(ctx context.Context, dataset, tag string, version int64) error {
	if err := ValidTagName(tag); err != nil {
		return err
	}
	ds, err := db.lookupWritable(ctx, dataset)
	if err != nil {
		return err
	}
	_, err = db.writeRow(ctx, ds, func(st *rowState) error {
		switch {
		case st.Dropping != nil:
			return fmt.Errorf("%w: %q", ErrDatasetNotFound, dataset)
		case !st.kept(version):
			return fmt.Errorf("%w: %s version %d", ErrVersionNotKept, dataset, version)
		case st.Tags[tag] == version:
			return errNoChange
		}
		if st.Tags == nil {
			st.Tags = map[string]int64{}
		}
		st.Tags[tag] = version
		return nil
	})
	if err != nil {
		return fmt.Errorf("snapshot: tagging %s version %d: %w", dataset, version, err)
	}
	return nil
}

// Untag removes a tag, in one write of the row. ErrTagNotFound.
func (db *DB) Untag(ctx context.Context, dataset, tag string) error {
	ds, err := db.lookupWritable(ctx, dataset)
	if err != nil {
		return err
	}
	ds.mu.Lock()
	_, ok := ds.tags[tag]
	ds.mu.Unlock()
	if !ok {
		return fmt.Errorf("%w: %s tag %q", ErrTagNotFound, dataset, tag)
	}
	_, err = db.writeRow(ctx, ds, func(st *rowState) error {
		if _, ok := st.Tags[tag]; !ok {
			return errNoChange // gone meanwhile: by this write, or another process's
		}
		delete(st.Tags, tag)
		return nil
	})
	if err != nil {
		return fmt.Errorf("snapshot: untagging %s: %w", dataset, err)
	}
	return nil
}

// ParseVersionNumber reads a version number written where a user gives
// one (a path, a query parameter, a CLI flag): canonical decimal only,
// digits without a sign or a leading zero, at least 1. strconv.ParseInt
// alone would read "+1", "01" and "0001" as version 1, so that two
// spellings name one version and a typo reads a version not asked for;
// these, and "1e3", "0x1" or " 1", are refused saying the form.
// ErrInvalidArgument.
func ParseVersionNumber(s string) (int64, error) {
	// Canonical: the text is the one formatting the number gives back.
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 1 || strconv.FormatInt(n, 10) != s {
		return 0, fmt.Errorf("%w: want a version number, decimal digits from 1 without a sign or a leading zero, got %q", ErrInvalidArgument, s)
	}
	return n, nil
}
