package placement

import (
	"cmp"
	"math"
	"slices"
	"strconv"

	"github.com/snapstore/snapstore/cluster"
)

// Placement of the partitions of partitioned runs: weighted rendezvous
// with bounded loads (docs/rfcs/20261202_partitioned_runs.md). The owners
// are an explicit table, kept with an epoch in HBase, and Rebalance is the
// one rule that changes it: given the table and the nodes, it returns the
// moves of one step toward balance, deterministically, so that whichever
// node applies them computes the same ones.
//
// Node n's quota is q_n = P * w_n / W over the nodes counted: active,
// failed and left ones (a failed or left node keeps its partitions and
// takes none: no failover, a flap or a restart moves nothing, cluster.K3).
// Draining nodes, and nodes not in the list (forgotten), count for nothing
// and give all their partitions away; joining nodes are not counted until
// active. The
// rendezvous score of a node for partition p (the name "p/<p>",
// rendezvous.go) is its preference. A step:
//
//  1. a partition without an owner that counts goes to the active node of
//     highest score among those below floor(q), else among those below
//     ceil(q), else among all;
//  2. while an active node holds fewer than floor(q), it takes, from the
//     active node most above its quota, that node's partition it scores
//     highest;
//  3. while an active node holds more than ceil(q), it gives the partition
//     scored highest by the active node most below its quota.
//
// A join thus moves floor(q) or ceil(q) partitions, all to the new node,
// and a node forgotten or drained only its own: at most P/N + 1 of P
// partitions.

// Member is a node as partition placement counts it.
type Member struct {
	ID     string
	Weight int
	State  cluster.State
}

// Move is one partition changing owner; From is empty for a partition
// that had no owner.
type Move struct {
	Partition int
	From, To  string
}

// partitionName is the rendezvous name of partition p.
func partitionName(p int) string { return "p/" + strconv.Itoa(p) }

// Rebalance returns the moves of one rebalance step of owners (owners[p]
// is the id of partition p's owner, "" for none) over nodes, in the order
// they are to be applied: partitions without an owner first. At most max
// moves are returned (all when max <= 0); the rest come with the next
// step, computed afresh. A table in balance gives none: a full restart
// with the same nodes moves nothing.
func Rebalance(owners []string, nodes []Member, max int) []Move {
	pl := newRebalance(owners, nodes)
	var moves []Move
	full := func() bool { return max > 0 && len(moves) >= max }
	move := func(p int, to string) {
		moves = append(moves, Move{Partition: p, From: pl.owners[p], To: to})
		pl.assign(p, to)
	}

	// 1. Partitions whose owner counts for nothing.
	for p, o := range pl.owners {
		if full() {
			return moves
		}
		if o != "" && pl.counted[o] {
			continue
		}
		to := pl.best(p, func(id string) bool { return pl.load[id] < pl.floor(id) })
		if to == "" {
			to = pl.best(p, func(id string) bool { return pl.load[id] < pl.ceil(id) })
		}
		if to == "" {
			to = pl.best(p, func(string) bool { return true })
		}
		if to == "" {
			break // no active node
		}
		move(p, to)
	}
	// 2. Active nodes below their floor take from the most loaded.
	for !full() {
		r := pl.most(func(id string) (float64, bool) {
			return float64(pl.floor(id) - pl.load[id]), pl.load[id] < pl.floor(id)
		})
		d := pl.most(func(id string) (float64, bool) {
			return float64(pl.load[id]) - pl.quota[id], id != r && pl.load[id] > pl.floor(id)
		})
		if r == "" || d == "" {
			break
		}
		move(pl.bestOf(d, r), r)
	}
	// 3. Active nodes above their ceiling give to the least loaded.
	for !full() {
		d := pl.most(func(id string) (float64, bool) {
			return float64(pl.load[id] - pl.ceil(id)), pl.load[id] > pl.ceil(id)
		})
		r := pl.most(func(id string) (float64, bool) {
			return pl.quota[id] - float64(pl.load[id]), id != d && pl.load[id] < pl.ceil(id)
		})
		if r == "" || d == "" {
			break
		}
		move(pl.bestOf(d, r), r)
	}
	return moves
}

// rebalance is the working state of one Rebalance.
type rebalance struct {
	owners  []string
	active  []Candidate // sorted by id
	counted map[string]bool
	quota   map[string]float64
	load    map[string]int
}

func newRebalance(owners []string, nodes []Member) *rebalance {
	pl := &rebalance{owners: slices.Clone(owners), counted: map[string]bool{}, quota: map[string]float64{}, load: map[string]int{}}
	total := 0
	for _, n := range nodes {
		if n.State == cluster.Active || n.State == cluster.Failed || n.State == cluster.Left {
			pl.counted[n.ID] = true
			total += max(n.Weight, 1)
		}
		if n.State == cluster.Active {
			pl.active = append(pl.active, Candidate{ID: n.ID, Weight: n.Weight})
		}
	}
	slices.SortFunc(pl.active, func(a, b Candidate) int { return cmp.Compare(a.ID, b.ID) })
	for _, n := range nodes {
		if pl.counted[n.ID] {
			pl.quota[n.ID] = float64(len(owners)) * float64(max(n.Weight, 1)) / float64(total)
		}
	}
	for _, o := range owners {
		if pl.counted[o] {
			pl.load[o]++
		}
	}
	return pl
}

func (pl *rebalance) floor(id string) int { return int(math.Floor(pl.quota[id] + 1e-9)) }
func (pl *rebalance) ceil(id string) int  { return int(math.Ceil(pl.quota[id] - 1e-9)) }

func (pl *rebalance) assign(p int, to string) {
	if from := pl.owners[p]; pl.counted[from] {
		pl.load[from]--
	}
	pl.owners[p] = to
	pl.load[to]++
}

// best returns the active node ok accepts with the highest score for
// partition p, "" when none.
func (pl *rebalance) best(p int, ok func(id string) bool) string {
	best, bestScore := "", math.Inf(-1)
	name := partitionName(p)
	for _, c := range pl.active {
		if !ok(c.ID) {
			continue
		}
		if s := score(c, name); s > bestScore {
			best, bestScore = c.ID, s
		}
	}
	return best
}

// bestOf returns the partition of node d that node r scores highest.
func (pl *rebalance) bestOf(d, r string) int {
	rc := Candidate{ID: r}
	for _, c := range pl.active {
		if c.ID == r {
			rc = c
		}
	}
	best, bestScore := -1, math.Inf(-1)
	for p, o := range pl.owners {
		if o != d {
			continue
		}
		if s := score(rc, partitionName(p)); s > bestScore {
			best, bestScore = p, s
		}
	}
	return best
}

// most returns the active node with the largest key among those ok
// accepts, the smaller id on a tie; "" when none.
func (pl *rebalance) most(key func(id string) (float64, bool)) string {
	best, bestKey := "", math.Inf(-1)
	for _, c := range pl.active {
		k, ok := key(c.ID)
		if ok && k > bestKey+1e-9 {
			best, bestKey = c.ID, k
		}
	}
	return best
}
