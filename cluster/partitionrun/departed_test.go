package partitionrun

import (
	"errors"
	"strings"
	"testing"

	"github.com/snapstore/snapstore/adapters"
	"github.com/snapstore/snapstore/snapshot"
)

// TestCoordinatorDeparted checks that a run fails with ErrNodeFailed, naming
// the node and its partitions still to report, once an owner departed, and
// not for an owner that reported all its partitions or is still there.
func TestCoordinatorDeparted(t *testing.T) {
	gone := map[string]bool{}
	p := &Runs{cfg: Config{Self: "a"}}
	p.SetDeparted(func(node string) (string, bool) { return "was forgotten", gone[node] })
	c := &coordinator{p: p, rec: &runRecord{Epoch: 3, Owners: []string{"a", "b", "c", "b", "c"}},
		reports: map[int]snapshot.PartitionReport{2: {Partition: 2}}}
	if err := c.departed(); err != nil {
		t.Fatalf("no owner departed: %v", err)
	}
	gone["a"] = true // this node: never its own owner
	if err := c.departed(); err != nil {
		t.Fatalf("this node departed: %v", err)
	}
	gone["b"] = true
	err := c.departed()
	if !errors.Is(err, adapters.ErrNodeFailed) || !strings.Contains(err.Error(), "node b, owner of partitions 1 3 of this run (epoch 3), was forgotten") {
		t.Fatalf("b departed: %v", err)
	}
	c.reports[1], c.reports[3] = snapshot.PartitionReport{Partition: 1}, snapshot.PartitionReport{Partition: 3}
	if err := c.departed(); err != nil {
		t.Fatalf("b departed after it reported every partition: %v", err)
	}
	gone["c"] = true
	if err := c.departed(); err == nil || !strings.Contains(err.Error(), "partitions 4 of") {
		t.Fatalf("c departed with partition 4 to report: %v", err)
	}
}
