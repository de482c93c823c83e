package partitionrun

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/snapstore/snapstore/adapters"
)

// An owner that departed for good (placement.Placement.Departed: it was
// forgotten, or it failed or left and its partitions moved) will never
// write the partitions of a run in progress, which keeps the owners of
// the epoch it began at: the run fails at once with code node_failed,
// rather than after cluster.transfer.owner_wait, and frees its dataset
// for the next run, which takes the partitions' new owners.

// SetDeparted gives p the test of an owner gone for good (departed
// reports why); call it once, before the node takes runs. Without it, a
// run waits for every owner up to OwnerWait.
func (p *Runs) SetDeparted(departed func(node string) (string, bool)) { p.departed = departed }

// departed returns the error of the first owner of the run that departed
// with partitions it has not reported.
func (c *coordinator) departed() error {
	if c.p.departed == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	pending := map[string][]int{}
	for s := range c.rec.streams() {
		if owner := c.rec.ownerOf(s); owner != c.p.cfg.Self {
			if _, ok := c.reports[s]; !ok {
				pending[owner] = append(pending[owner], s)
			}
		}
	}
	for _, owner := range slices.Sorted(maps.Keys(pending)) {
		why, gone := c.p.departed(owner)
		if !gone {
			continue
		}
		parts := make([]string, len(pending[owner]))
		for i, s := range pending[owner] {
			parts[i] = c.rec.streamName(s)
		}
		sep := " "
		if len(c.rec.Tables) > 0 {
			sep = ", "
		}
		return fmt.Errorf("%w: node %s, owner of partitions %s of this run (epoch %d), %s: they will not be written at this run's epoch; run again",
			adapters.ErrNodeFailed, owner, strings.Join(parts, sep), c.rec.Epoch, why)
	}
	return nil
}
