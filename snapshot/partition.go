package snapshot

// Hash partitions (doc.go, "Partitions"): a dataset's rows are spread over
// Options.Partitions data tables by a hash of the row key, and every scan
// merges the partitions back into row key order.

import (
	"bytes"
	"context"
	"fmt"

	"github.com/cespare/xxhash/v2"
	"github.com/snapstore/snapstore/store"
	"github.com/snapstore/snapstore/txn"
)

// partitionOf returns the partition (0..partitions-1) of an encoded row
// key: xxhash64 of the key modulo partitions.
func partitionOf(rowKey []byte, partitions int) int {
	if partitions <= 1 {
		return 0
	}
	return int(xxhash.Sum64(rowKey) % uint64(partitions))
}

// rowSource is a partition's rows in key order: a rowCursor (rows resolved
// at a visibility) or a rowReader (every version).
type rowSource interface {
	next() bool
	row() []byte
	err() error
	close() error
}

// mergedRows merges the rows of several sources (one per partition) in
// row key order, one row key at a time: the group of partitions that hold
// it. A row key is in one partition unless its partition key value
// changed (partition_key.go); then each partition holds it, and at any
// one version it is visible in one of them at most (single,
// resolveMerged).
type mergedRows[S rowSource] struct {
	srcs  []S
	live  []bool
	group []int // the sources at the current row key
	init  bool
}

func newMergedRows[S rowSource](srcs []S) *mergedRows[S] {
	return &mergedRows[S]{srcs: srcs, live: make([]bool, len(srcs))}
}

// next advances past the current row key in every partition that holds
// it.
func (m *mergedRows[S]) next() bool {
	if !m.init {
		m.init = true
		for i, s := range m.srcs {
			m.live[i] = s.next()
		}
	}
	for _, i := range m.group {
		m.live[i] = m.srcs[i].next()
	}
	m.group = m.group[:0]
	for i, s := range m.srcs {
		if !m.live[i] {
			continue
		}
		if len(m.group) == 0 {
			m.group = append(m.group, i)
			continue
		}
		switch c := bytes.Compare(s.row(), m.srcs[m.group[0]].row()); {
		case c < 0:
			m.group = append(m.group[:0], i)
		case c == 0:
			m.group = append(m.group, i)
		}
	}
	return len(m.group) > 0
}

// src returns the first source of the current row.
func (m *mergedRows[S]) src() S { return m.srcs[m.group[0]] }

// twice is the error of a row key visible in partitions i and j at one
// version: a source that gave a key twice, with two partition key values,
// that the run could not find (partition_key.go).
func (m *mergedRows[S]) twice(i, j int) error {
	return fmt.Errorf("%w: row %x is in partitions %d and %d at one version", ErrCorrupt, m.srcs[i].row(), i, j)
}

// single returns the source of the current row when it is one partition's
// alone, as it is for rowCursors at one visibility, which skip the rows
// absent there.
func (m *mergedRows[S]) single() (S, error) {
	if len(m.group) > 1 {
		return m.srcs[m.group[0]], m.twice(m.group[0], m.group[1])
	}
	return m.srcs[m.group[0]], nil
}

// resolveMerged resolves the current row of m at vis into st (n columns
// of the dictionary), from the partition where the row is visible; tmp is
// scratch for telling a row visible in two partitions (ErrCorrupt).
func resolveMerged(m *mergedRows[*rowReader], vis txn.Visibility, n int, st, tmp *resolvedRow) error {
	for j, i := range m.group {
		if err := st.resolveCells(m.srcs[i].cells, vis, n); err != nil {
			return err
		}
		if !st.present() {
			continue
		}
		for _, k := range m.group[j+1:] {
			if err := tmp.resolveCells(m.srcs[k].cells, vis, n); err != nil {
				return err
			}
			if tmp.present() {
				return m.twice(i, k)
			}
		}
		return nil
	}
	return nil
}

func (m *mergedRows[S]) err() error {
	for _, s := range m.srcs {
		if err := s.err(); err != nil {
			return err
		}
	}
	return nil
}

func (m *mergedRows[S]) close() error {
	var first error
	for _, s := range m.srcs {
		if err := s.close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// openPartitions opens a scan of every partition's data table (tables)
// with opts and wraps each iterator with wrap.
func openPartitions[S rowSource](ctx context.Context, st store.Store, tables []string, opts store.ScanOptions, wrap func(store.Iterator) S) (*mergedRows[S], error) {
	srcs := make([]S, 0, len(tables))
	for _, t := range tables {
		it, err := st.Scan(ctx, t, opts)
		if err != nil {
			for _, s := range srcs {
				s.close()
			}
			return nil, err
		}
		srcs = append(srcs, wrap(it))
	}
	return newMergedRows(srcs), nil
}
