package snapshot

// Hash partitions (doc.go, "Partitions"): a dataset's rows are spread over
// Options.Partitions data tables by a hash of the row key, and every scan
// merges the partitions back into row key order.

import (
	"bytes"
	"context"

	"github.com/cespare/xxhash/v2"
	"github.com/snapstore/snapstore/store"
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

// mergedRows merges the rows of several sources (one per partition) in row
// key order. Rows never repeat across partitions.
type mergedRows[S rowSource] struct {
	srcs []S
	live []bool
	cur  int // index of the source returned last, -1 before the first
	init bool
}

func newMergedRows[S rowSource](srcs []S) *mergedRows[S] {
	return &mergedRows[S]{srcs: srcs, live: make([]bool, len(srcs)), cur: -1}
}

func (m *mergedRows[S]) next() bool {
	if !m.init {
		m.init = true
		for i, s := range m.srcs {
			m.live[i] = s.next()
		}
	} else if m.cur >= 0 {
		m.live[m.cur] = m.srcs[m.cur].next()
	}
	m.cur = -1
	for i, s := range m.srcs {
		if m.live[i] && (m.cur < 0 || bytes.Compare(s.row(), m.srcs[m.cur].row()) < 0) {
			m.cur = i
		}
	}
	return m.cur >= 0
}

// src returns the source of the current row.
func (m *mergedRows[S]) src() S { return m.srcs[m.cur] }

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

// openPartitions opens a scan of every partition table of dataset with
// opts and wraps each iterator with wrap.
func openPartitions[S rowSource](ctx context.Context, st store.Store, dataset string, parts int, opts store.ScanOptions, wrap func(store.Iterator) S) (*mergedRows[S], error) {
	srcs := make([]S, 0, parts)
	for p := 0; p < parts; p++ {
		it, err := st.Scan(ctx, dataTable(dataset, p), opts)
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
