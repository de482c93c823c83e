package placement

import (
	"context"
	"encoding/json"
	"time"

	"github.com/snapstore/snapstore/adapters"
	"github.com/snapstore/snapstore/cluster"
)

// Definitions across the cluster (cluster.K9). The data connections and
// adapters made through the API are records in HBase, which every node
// reads. A node that changes one sends a hint (a serf user event naming
// the kind and the name, far below serf's 512 bytes); every other node
// rereads the definitions when the hint comes, and every
// DefinitionsRefresh whatever the hints, so that a hint lost on the way
// (serf's gossip is best effort, and a hint that finds its reader behind
// is dropped) delays a change by at most that interval and never loses it.

// hintDefinitions is the name of the hint of a changed definition.
const hintDefinitions = "snapstore-defs"

// hintQueue is how many hints of this node wait for the placement loop
// to send them before new ones are dropped.
const hintQueue = 64

// definitionHint is the payload of a hintDefinitions hint.
type definitionHint struct {
	Kind string `json:"k"`
	Name string `json:"n"`
	From string `json:"from"`
}

// definitionsSync sends the hints of this node's changes and rereads the
// definitions on the others' hints and periodically.
type definitionsSync struct {
	m *cluster.Membership
	// out holds the hints to send: DefinitionsChanged must not block, and
	// serf's UserEvent takes serf's locks.
	out chan definitionHint
}

func newDefinitionsSync(m *cluster.Membership) *definitionsSync {
	return &definitionsSync{m: m, out: make(chan definitionHint, hintQueue)}
}

// changed queues the hint of a change made on this node; a full queue
// drops it (the periodic reread covers it).
func (d *definitionsSync) changed(kind, name string) {
	select {
	case d.out <- definitionHint{Kind: kind, Name: name, From: d.m.ID()}:
	default:
		d.m.HintDropped()
	}
}

// send broadcasts one hint.
func (d *definitionsSync) send(h definitionHint) {
	b, _ := json.Marshal(h)
	if err := d.m.SendHint(hintDefinitions, b); err != nil {
		d.m.Logger().Warn("sending the hint of a changed definition; the others see it within cluster.definitions_refresh", "kind", h.Kind, "name", h.Name, "err", err)
	}
}

// fromOther reports whether hint h is another node's change of a
// definition.
func (d *definitionsSync) fromOther(h cluster.Hint) bool {
	if h.Name != hintDefinitions {
		return false
	}
	var dh definitionHint
	if err := json.Unmarshal(h.Payload, &dh); err != nil {
		d.m.Logger().Debug("a definitions hint that does not decode", "err", err)
		return true // reread anyway: it costs one read
	}
	return dh.From != d.m.ID()
}

// reload rereads the definitions of svc.
func (d *definitionsSync) reload(svc *adapters.Service, why string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n, err := svc.Reload(ctx)
	if err != nil {
		d.m.Logger().Warn("rereading the definitions", "why", why, "err", err)
		return 0
	}
	if n > 0 {
		d.m.Logger().Info("definitions changed by other nodes applied", "changes", n, "why", why)
	}
	return n
}
