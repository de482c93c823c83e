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

// mergedRows merges the rows of several rowReaders (one per partition) in
// row key order, one row key at a time: the group of partitions that
// hold it. A row key is in one partition unless its partition key value
// changed (partition_key.go); then each partition holds it, and at any
// one version it is visible in one of them at most (mergedResolve).
type mergedRows struct {
	srcs  []*rowReader
	live  []bool
	group []int // the sources at the current row key, -1 before the first
	init  bool
	tmp   []resolvedCol
}

func newMergedRows(srcs []*rowReader) *mergedRows {
	return &mergedRows{srcs: srcs, live: make([]bool, len(srcs))}
}

// next advances past the current row key in every partition that holds
// it.
func (m *mergedRows) next() bool {
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
		switch {
		case len(m.group) == 0:
			m.group = append(m.group, i)
		default:
			switch c := bytes.Compare(s.row, m.srcs[m.group[0]].row); {
			case c < 0:
				m.group = append(m.group[:0], i)
			case c == 0:
				m.group = append(m.group, i)
			}
		}
	}
	return len(m.group) > 0
}

func (m *mergedRows) row() []byte { return m.srcs[m.group[0]].row }

// resolve appends the current row's columns visible at vis to dst (as
// resolve does), from the partition where the row is visible. A row key
// visible in two partitions at one version is ErrCorrupt: a source that
// gave a key twice, with two partition key values, that the run could
// not find (partition_key.go).
func (m *mergedRows) resolve(vis txn.Visibility, dst []resolvedCol) ([]resolvedCol, error) {
	n := len(dst)
	for j, i := range m.group {
		dst = resolve(m.srcs[i].cells, vis, dst)
		if len(dst) == n {
			continue
		}
		for _, k := range m.group[j+1:] {
			if m.tmp = resolve(m.srcs[k].cells, vis, m.tmp[:0]); len(m.tmp) > 0 {
				return dst, fmt.Errorf("%w: row %x is in partitions %d and %d at one version", ErrCorrupt, m.row(), i, k)
			}
		}
		break
	}
	return dst, nil
}

func (m *mergedRows) err() error {
	for _, s := range m.srcs {
		if err := s.err(); err != nil {
			return err
		}
	}
	return nil
}

func (m *mergedRows) close() error {
	var first error
	for _, s := range m.srcs {
		if err := s.close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// openMerged opens a scan of [start, end) over every partition table.
func openMerged(ctx context.Context, st store.Store, dataset string, parts int, opts store.ScanOptions) (*mergedRows, error) {
	srcs := make([]*rowReader, 0, parts)
	for p := 0; p < parts; p++ {
		it, err := st.Scan(ctx, dataTable(dataset, p), opts)
		if err != nil {
			for _, s := range srcs {
				s.close()
			}
			return nil, err
		}
		srcs = append(srcs, newRowReader(it))
	}
	return newMergedRows(srcs), nil
}
