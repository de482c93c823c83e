package placement

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/snapstore/snapstore/cluster"
)

// randomIDs returns n node ids as newNodeID makes them, from a seeded
// source so a failure names its seed.
func randomIDs(r *rand.Rand, n int) []string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz234567"
	ids := make([]string, n)
	for i := range ids {
		b := make([]byte, 26)
		for j := range b {
			b[j] = alphabet[r.IntN(len(alphabet))]
		}
		ids[i] = string(b)
	}
	return ids
}

func activeNodes(ids []string) []Member {
	ns := make([]Member, len(ids))
	for i, id := range ids {
		ns[i] = Member{ID: id, Weight: cluster.DefaultWeight, State: cluster.Active}
	}
	return ns
}

// settle applies Rebalance until it moves nothing, and returns the table
// and every move made.
func settle(t *testing.T, owners []string, nodes []Member) ([]string, []Move) {
	t.Helper()
	var all []Move
	for range 100 {
		ms := Rebalance(owners, nodes, 0)
		if len(ms) == 0 {
			return owners, all
		}
		owners = Apply(owners, ms)
		all = append(all, ms...)
	}
	t.Fatal("Rebalance does not settle")
	return nil, nil
}

// loads counts partitions per owner.
func loads(owners []string) map[string]int {
	m := map[string]int{}
	for _, o := range owners {
		m[o]++
	}
	return m
}

// checkBalanced checks that every node holds floor or ceil of its quota.
func checkBalanced(t *testing.T, what string, owners []string, nodes []Member) {
	t.Helper()
	total := 0
	for _, n := range nodes {
		total += n.Weight
	}
	l := loads(owners)
	for _, n := range nodes {
		q := float64(len(owners)) * float64(n.Weight) / float64(total)
		if got := float64(l[n.ID]); got < math.Floor(q+1e-9) || got > math.Ceil(q-1e-9) {
			t.Fatalf("%s: %s holds %d partitions, quota %.2f", what, n.ID, l[n.ID], q)
		}
	}
	if l[""] != 0 {
		t.Fatalf("%s: %d partitions without an owner", what, l[""])
	}
}

// TestRebalance_JoinAndLeaveMoveAtMostAShare: at 3, 5 and 6 nodes and
// several partition counts, over 200 sets of random node ids each, a node
// joining moves at most 1/N + 5% of the partitions (N the nodes after
// the join), every one to the new node; a node forgotten moves at most
// 1/N + 5% (N the nodes before), every one of them its own, while a node
// that left (stopped, to come back) moves nothing; the table is balanced
// after each, and one more step moves nothing.
func TestRebalance_JoinAndLeaveMoveAtMostAShare(t *testing.T) {
	for _, parts := range []int{32, 64, 256} {
		for _, n := range []int{3, 5, 6} {
			worstJoin, worstLeave := 0, 0
			for seed := range 200 {
				r := rand.New(rand.NewPCG(uint64(seed), uint64(n*1000+parts)))
				ids := randomIDs(r, n)
				what := fmt.Sprintf("P=%d N=%d seed %d", parts, n, seed)
				before := activeNodes(ids[:n-1])
				owners, _ := settle(t, make([]string, parts), before)
				checkBalanced(t, what+" before the join", owners, before)
				if ms := Rebalance(owners, before, 0); len(ms) != 0 {
					t.Fatalf("%s: a balanced table moves %d on a restart", what, len(ms))
				}

				after := activeNodes(ids)
				joined, moves := settle(t, owners, after)
				checkBalanced(t, what+" after the join", joined, after)
				for _, m := range moves {
					if m.To != ids[n-1] {
						t.Fatalf("%s: the join moved partition %d from %s to %s, not to the new node", what, m.Partition, m.From, m.To)
					}
				}
				if bound := (1/float64(n) + 0.05) * float64(parts); float64(len(moves)) > bound {
					t.Fatalf("%s: the join moved %d of %d partitions, more than 1/N + 5%% (%.1f)", what, len(moves), parts, bound)
				}
				worstJoin = max(worstJoin, len(moves))

				gone := ids[r.IntN(n)]
				var rest []string
				for _, id := range ids {
					if id != gone {
						rest = append(rest, id)
					}
				}
				stopped := append(activeNodes(rest), Member{ID: gone, Weight: cluster.DefaultWeight, State: cluster.Left})
				if ms := Rebalance(joined, stopped, 0); len(ms) != 0 {
					t.Fatalf("%s: a node that left (a restart) loses %d partitions", what, len(ms))
				}
				left, moves := settle(t, joined, activeNodes(rest)) // forgotten
				checkBalanced(t, what+" after the leave", left, activeNodes(rest))
				for _, m := range moves {
					if m.From != gone {
						t.Fatalf("%s: the leave of %s moved partition %d of %s", what, gone, m.Partition, m.From)
					}
				}
				if bound := (1/float64(n) + 0.05) * float64(parts); float64(len(moves)) > bound {
					t.Fatalf("%s: the leave moved %d of %d partitions, more than 1/N + 5%% (%.1f)", what, len(moves), parts, bound)
				}
				worstLeave = max(worstLeave, len(moves))
			}
			t.Logf("P=%d N=%d: the worst join moved %d (%.1f%%, 1/N = %.1f%%), the worst forget %d (%.1f%%)", parts, n,
				worstJoin, 100*float64(worstJoin)/float64(parts), 100/float64(n), worstLeave, 100*float64(worstLeave)/float64(parts))
		}
	}
}

// TestRebalance_FailedKeepsDrainingGives: a failed node keeps its
// partitions and nothing moves (no failover, cluster.K3); a draining node gives
// all of its partitions, and only those move; a joining node takes none
// until it is active.
func TestRebalance_FailedKeepsDrainingGives(t *testing.T) {
	ids := []string{"node-a", "node-b", "node-c", "node-d"}
	nodes := activeNodes(ids)
	owners, _ := settle(t, make([]string, 64), nodes)

	failed := activeNodes(ids)
	failed[1].State = cluster.Failed
	if ms := Rebalance(owners, failed, 0); len(ms) != 0 {
		t.Fatalf("a failed node's partitions move: %v", ms)
	}
	joining := append(activeNodes(ids), Member{ID: "node-e", Weight: cluster.DefaultWeight, State: cluster.Joining})
	if ms := Rebalance(owners, joining, 0); len(ms) != 0 {
		t.Fatalf("a joining node takes partitions: %v", ms)
	}
	draining := activeNodes(ids)
	draining[2].State = cluster.Draining
	drained, moves := settle(t, owners, draining)
	if l := loads(drained); l["node-c"] != 0 || len(moves) != loads(owners)["node-c"] {
		t.Fatalf("draining node-c: it holds %d after, %d moved of its %d", l["node-c"], len(moves), loads(owners)["node-c"])
	}
	for _, m := range moves {
		if m.From != "node-c" {
			t.Fatalf("draining node-c moved %v", m)
		}
	}
	checkBalanced(t, "after the drain", drained, append(activeNodes(ids[:2]), activeNodes(ids[3:])...))
}

// TestRebalance_WeightsAndRateLimit: weights 100, 200 and 300 get a
// sixth, a third and a half; at most max moves come per step, the table
// converges over steps to the same balance, and partitions without an
// owner come first.
func TestRebalance_WeightsAndRateLimit(t *testing.T) {
	nodes := []Member{{ID: "a", Weight: 100, State: cluster.Active}, {ID: "b", Weight: 200, State: cluster.Active}, {ID: "c", Weight: 300, State: cluster.Active}}
	owners, _ := settle(t, make([]string, 600), nodes)
	if l := loads(owners); l["a"] != 100 || l["b"] != 200 || l["c"] != 300 {
		t.Fatalf("loads %v, want 100, 200, 300", l)
	}
	checkBalanced(t, "weighted", owners, nodes)

	// A fourth node of weight 600 and a table with 10 partitions unowned:
	// 8 moves a step, the unowned first.
	for p := range 10 {
		owners[p*7] = ""
	}
	nodes = append(nodes, Member{ID: "d", Weight: 600, State: cluster.Active})
	steps := 0
	for {
		ms := Rebalance(owners, nodes, 8)
		if len(ms) == 0 {
			break
		}
		if len(ms) > 8 {
			t.Fatalf("step %d: %d moves, limit 8", steps, len(ms))
		}
		if steps == 0 {
			for _, m := range ms {
				if m.From != "" {
					t.Fatalf("the first step moves an owned partition before the unowned ones: %v", ms)
				}
			}
		}
		owners = Apply(owners, ms)
		steps++
	}
	checkBalanced(t, "after the rate-limited join", owners, nodes)
	if l := loads(owners); l["d"] != 300 || steps < 300/8 {
		t.Fatalf("d holds %d after %d steps", l["d"], steps)
	}
}

// Apply returns owners after moves.
func Apply(owners []string, moves []Move) []string {
	out := slices.Clone(owners)
	for _, m := range moves {
		out[m.Partition] = m.To
	}
	return out
}
