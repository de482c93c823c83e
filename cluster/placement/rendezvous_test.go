package placement

import (
	"cmp"
	"fmt"
	"slices"
	"testing"
)

// testIDs returns n node ids of the form newNodeID makes, fixed so that the
// figures below are the same on every run.
func testIDs(n int) []Candidate {
	out := make([]Candidate, n)
	for i := range out {
		out[i] = Candidate{ID: fmt.Sprintf("n%025d", i*7919+13), Weight: 100}
	}
	return out
}

func testNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("adapter-%05d", i)
	}
	return out
}

func owners(names []string, nodes []Candidate) map[string]string {
	m := make(map[string]string, len(names))
	for _, n := range names {
		o, _ := Owner(n, nodes)
		m[n] = o
	}
	return m
}

// TestRendezvous_MovementOnJoinAndLeave checks cluster.K6 at 3, 5 and 10
// nodes: a join moves at most 1/N + 5% of the names, every one of them to
// the new node; a leave moves exactly the leaving node's names.
func TestRendezvous_MovementOnJoinAndLeave(t *testing.T) {
	names := testNames(10000)
	for _, n := range []int{3, 5, 10} {
		nodes := testIDs(n + 1)
		before := owners(names, nodes[:n])

		after := owners(names, nodes) // node n joins
		moved := 0
		for _, name := range names {
			if after[name] != before[name] {
				moved++
				if after[name] != nodes[n].ID {
					t.Errorf("n=%d join: %s moved from %s to %s, not to the new node", n, name, before[name], after[name])
				}
			}
		}
		frac := float64(moved) / float64(len(names))
		t.Logf("n=%d: a join moved %d of %d names (%.1f%%; 1/(N+1) = %.1f%%, bound 1/N + 5%% = %.1f%%)",
			n, moved, len(names), 100*frac, 100/float64(n+1), 100*(1/float64(n)+0.05))
		if frac > 1/float64(n)+0.05 {
			t.Errorf("n=%d: a join moved %.1f%% of the names", n, 100*frac)
		}

		// Node 1 of n leaves.
		gone := nodes[1].ID
		rest := append(append([]Candidate{}, nodes[:1]...), nodes[2:n]...)
		left := owners(names, rest)
		moved = 0
		for _, name := range names {
			if left[name] != before[name] {
				moved++
				if before[name] != gone {
					t.Errorf("n=%d leave: %s moved from %s, which stayed", n, name, before[name])
				}
			} else if before[name] == gone {
				t.Errorf("n=%d leave: %s still owned by the node that left", n, name)
			}
		}
		frac = float64(moved) / float64(len(names))
		t.Logf("n=%d: a leave moved %d of %d names (%.1f%%; 1/N = %.1f%%)", n, moved, len(names), 100*frac, 100/float64(n))
		if frac > 1/float64(n)+0.05 {
			t.Errorf("n=%d: a leave moved %.1f%% of the names", n, 100*frac)
		}
	}
}

// TestRendezvous_Balance checks that 1,000 names over 5 equal nodes load
// the busiest node at most 1.2 times the mean.
func TestRendezvous_Balance(t *testing.T) {
	nodes := testIDs(5)
	load := map[string]int{}
	for _, o := range owners(testNames(1000), nodes) {
		load[o]++
	}
	most := 0
	for _, c := range nodes {
		most = max(most, load[c.ID])
	}
	mean := 1000.0 / 5
	t.Logf("loads %v: max/mean %.3f", load, float64(most)/mean)
	if float64(most)/mean > 1.2 {
		t.Errorf("max/mean %.3f > 1.2", float64(most)/mean)
	}
}

// TestRendezvous_Weights checks that a node's share follows its weight:
// weights 100, 200, 300 and 400 over 20,000 names get 10%, 20%, 30% and
// 40% within a tenth of each share.
func TestRendezvous_Weights(t *testing.T) {
	nodes := testIDs(4)
	total := 0
	for i := range nodes {
		nodes[i].Weight = 100 * (i + 1)
		total += nodes[i].Weight
	}
	names := testNames(20000)
	load := map[string]int{}
	for _, o := range owners(names, nodes) {
		load[o]++
	}
	for _, c := range nodes {
		want := float64(c.Weight) / float64(total)
		got := float64(load[c.ID]) / float64(len(names))
		t.Logf("weight %d: %.1f%% of the names (want %.1f%%)", c.Weight, 100*got, 100*want)
		if got < want*0.9 || got > want*1.1 {
			t.Errorf("weight %d: share %.3f, want %.3f +-10%%", c.Weight, got, want)
		}
	}
}

// TestRendezvous_RankAndEmpty checks that Rank starts with the owner, holds
// every candidate once and that Rank without the owner starts with the
// next one; Owner of no candidates is none.
func TestRendezvous_RankAndEmpty(t *testing.T) {
	nodes := testIDs(5)
	for _, name := range testNames(200) {
		r := Rank(name, nodes)
		o, ok := Owner(name, nodes)
		if !ok || r[0] != o || len(r) != len(nodes) {
			t.Fatalf("%s: rank %v, owner %s", name, r, o)
		}
		var rest []Candidate
		for _, c := range nodes {
			if c.ID != o {
				rest = append(rest, c)
			}
		}
		if o2, _ := Owner(name, rest); o2 != r[1] {
			t.Fatalf("%s: owner without %s is %s, rank says %s", name, o, o2, r[1])
		}
	}
	if _, ok := Owner("x", nil); ok {
		t.Error("an owner among no candidates")
	}
}

// Rank returns the candidates' ids in the order in which they would own
// name: Rank(name)[0] is the owner, [1] the owner once [0] is gone, and so
// on. A caller that fails over to "the next node" takes the next entry.
func Rank(name string, nodes []Candidate) []string {
	type scored struct {
		id string
		s  float64
	}
	ss := make([]scored, len(nodes))
	for i, c := range nodes {
		ss[i] = scored{c.ID, score(c, name)}
	}
	slices.SortFunc(ss, func(a, b scored) int {
		if c := cmp.Compare(b.s, a.s); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.id
	}
	return out
}
