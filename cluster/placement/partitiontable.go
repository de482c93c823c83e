package placement

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/snapstore/snapstore/cluster"
	"github.com/snapstore/snapstore/records"
)

// The partition table: which node owns each partition of partitioned runs,
// with an epoch, kept in one record of the metadata table (HBase is the
// truth; docs/rfcs/20261202_partitioned_runs.md). It changes only by
// compare-and-set against the bytes last read, so two nodes that both
// compute a change cannot both write one (store.S7), and every change
// writes epoch + 1. A node caches the table it read; Refresh reads it
// again.

// The record of the partition table.
const (
	partitionsKind = "cluster"
	partitionsName = "partitions"
)

// PartitionTable is the partition table as stored.
type PartitionTable struct {
	// Epoch counts the changes; 0 is the table before its first write
	// (every partition without an owner).
	Epoch int64 `json:"epoch"`
	// Owners holds the id of each partition's owner ("" for none); its
	// length is the partition count, fixed at the first write.
	Owners []string `json:"owners"`
	// Since holds the epoch at which each partition got its owner: a node
	// that owns a partition since an epoch newer than its cache of it
	// rebuilds the cache.
	Since []int64 `json:"since"`
	// ChangedAt and ChangedBy say when and by which node the last change
	// was written.
	ChangedAt time.Time `json:"changed_at"`
	ChangedBy string    `json:"changed_by,omitempty"`
}

// ErrPartitionCount is returned when the stored table has another count
// of partitions than the node is configured with.
var ErrPartitionCount = errors.New("cluster: the partition count differs from the cluster's")

// Partitions is a node's handle on the partition table: its cached copy
// and the one way to change it. Safe for concurrent use.
type Partitions struct {
	rec   *records.Store
	count int

	// mu guards tab and raw; it is not held across I/O (the record's
	// compare-and-set serialises writers across processes).
	mu  sync.Mutex
	tab PartitionTable
	raw []byte // the record as last read; nil when there is none
}

// OpenPartitions reads the partition table of count partitions. A cluster
// that has none yet gets one at its first Step; a stored table of another
// count is ErrPartitionCount, naming both.
func OpenPartitions(ctx context.Context, rec *records.Store, count int) (*Partitions, error) {
	if count < 1 {
		return nil, fmt.Errorf("cluster: %d partitions", count)
	}
	p := &Partitions{rec: rec, count: count}
	if _, err := p.Refresh(ctx); err != nil {
		return nil, err
	}
	return p, nil
}

// Table returns the cached table (a copy).
func (p *Partitions) Table() PartitionTable {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.tab.clone()
}

func (t PartitionTable) clone() PartitionTable {
	t.Owners = slices.Clone(t.Owners)
	t.Since = slices.Clone(t.Since)
	return t
}

// Refresh reads the table from the metadata table and caches it.
func (p *Partitions) Refresh(ctx context.Context) (PartitionTable, error) {
	raw, err := p.rec.Get(ctx, partitionsKind, partitionsName)
	switch {
	case errors.Is(err, records.ErrNotFound):
		raw = nil
	case err != nil:
		return PartitionTable{}, fmt.Errorf("cluster: reading the partition table: %w", err)
	}
	tab := PartitionTable{Owners: make([]string, p.count), Since: make([]int64, p.count)}
	if raw != nil {
		if err := json.Unmarshal(raw, &tab); err != nil {
			return PartitionTable{}, fmt.Errorf("cluster: the partition table does not decode: %w", err)
		}
		if len(tab.Owners) != p.count || len(tab.Since) != p.count {
			return PartitionTable{}, fmt.Errorf("%w: the cluster's table has %d partitions, this node is configured with %d (cluster.partitions)",
				ErrPartitionCount, len(tab.Owners), p.count)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if raw == nil || tab.Epoch >= p.tab.Epoch {
		p.tab, p.raw = tab, raw
	}
	return p.tab.clone(), nil
}

// Step reads the table, computes one rebalance step over nodes (Rebalance,
// at most max moves) and writes it as epoch + 1 with one compare-and-set
// against what it read, stamped with by and now. It returns the moves
// written: none when the table is balanced, or when another node changed
// the table first (the cache then holds that node's table, and the next
// Step computes from it).
func (p *Partitions) Step(ctx context.Context, nodes []Member, max int, by string, now time.Time) ([]Move, error) {
	cur, err := p.Refresh(ctx)
	if err != nil {
		return nil, err
	}
	moves := Rebalance(cur.Owners, nodes, max)
	if len(moves) == 0 {
		return nil, nil
	}
	next := cur.clone()
	next.Epoch++
	for _, m := range moves {
		next.Owners[m.Partition] = m.To
		next.Since[m.Partition] = next.Epoch
	}
	next.ChangedAt, next.ChangedBy = now.UTC(), by
	raw, err := json.Marshal(next)
	if err != nil {
		return nil, fmt.Errorf("cluster: encoding the partition table: %w", err)
	}
	p.mu.Lock()
	old := p.raw
	p.mu.Unlock()
	ok, err := p.rec.CompareAndSet(ctx, partitionsKind, partitionsName, old, raw)
	if err != nil {
		// The outcome is unknown (store.S9): the record says.
		if _, rerr := p.Refresh(ctx); rerr != nil {
			return nil, fmt.Errorf("cluster: writing the partition table: %w (reading it back: %v)", err, rerr)
		}
		p.mu.Lock()
		ok = bytes.Equal(p.raw, raw)
		p.mu.Unlock()
		if !ok {
			return nil, fmt.Errorf("cluster: writing the partition table: %w", err)
		}
	}
	if !ok {
		if _, err := p.Refresh(ctx); err != nil {
			return nil, err
		}
		return nil, nil
	}
	p.mu.Lock()
	p.tab, p.raw = next, raw
	p.mu.Unlock()
	return moves, nil
}

// Keeper returns the node that changes the partition table: the
// rendezvous owner of the name "partitions" over the active nodes, "" when
// none is active.
func Keeper(nodes []Member) string {
	var cs []Candidate
	for _, n := range nodes {
		if n.State == cluster.Active {
			cs = append(cs, Candidate{ID: n.ID, Weight: n.Weight})
		}
	}
	id, _ := Owner(partitionsName, cs)
	return id
}
