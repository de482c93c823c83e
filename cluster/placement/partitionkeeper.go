package placement

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/snapstore/snapstore/cluster"
)

// partitionKeeper keeps the partition table on one node (cluster.K13): it
// rereads it every PartitionMoveInterval and when the members change,
// and, on the keeper node (Keeper: the rendezvous owner of the name
// "partitions" over the active nodes), writes one rebalance step when the
// table is out of balance, at most PartitionMoves moves and one change
// per PartitionMoveInterval. Partitions without an owner (the table's
// first write, or partitions of a forgotten node) are assigned at once:
// an owner that had nothing has nothing to rebuild.
type partitionKeeper struct {
	pl       *Placement
	parts    *Partitions
	moves    int
	interval time.Duration

	pokec        chan struct{}
	stopc, donec chan struct{}
	lastStep     time.Time // of this node's last change; loop only

	owned, epoch prometheus.Gauge
	moved        prometheus.Counter
}

func newPartitionKeeper(pl *Placement, parts *Partitions) *partitionKeeper {
	cfg := pl.m.Config()
	return &partitionKeeper{
		pl: pl, parts: parts, moves: cfg.PartitionMovesPerStep(), interval: cfg.PartitionMoveInterval,
		pokec: make(chan struct{}, 1), stopc: make(chan struct{}), donec: make(chan struct{}),
		owned: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "snapstore_cluster_partitions_owned",
			Help: "Partitions of partitioned runs this node owns in the partition table it read last.",
		}),
		epoch: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "snapstore_cluster_partition_table_epoch",
			Help: "Epoch of the partition table this node read last.",
		}),
		moved: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "snapstore_cluster_partition_moves_total",
			Help: "Partitions this node moved as the keeper of the partition table.",
		}),
	}
}

func (k *partitionKeeper) register(reg prometheus.Registerer) error {
	if reg == nil {
		return nil
	}
	for _, c := range []prometheus.Collector{k.owned, k.epoch, k.moved} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

func (k *partitionKeeper) unregister(reg prometheus.Registerer) {
	if reg == nil {
		return
	}
	for _, c := range []prometheus.Collector{k.owned, k.epoch, k.moved} {
		reg.Unregister(c)
	}
}

// poke asks for a round soon; it never blocks (cluster.K5).
func (k *partitionKeeper) poke() {
	select {
	case k.pokec <- struct{}{}:
	default:
	}
}

// loop runs rounds until stop.
func (k *partitionKeeper) loop() {
	defer close(k.donec)
	t := time.NewTicker(k.interval)
	defer t.Stop()
	k.round()
	for {
		select {
		case <-k.stopc:
			return
		case <-t.C:
		case <-k.pokec:
		}
		k.round()
	}
}

func (k *partitionKeeper) stop() {
	close(k.stopc)
	<-k.donec
}

// round rereads the table and, on the keeper, steps it.
func (k *partitionKeeper) round() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	log := k.pl.m.Logger()
	tab, err := k.parts.Refresh(ctx)
	if err != nil {
		log.Warn("reading the partition table", "err", err)
		return
	}
	nodes := k.pl.placementNodes()
	self := k.pl.m.ID()
	now := time.Now()
	// A node that is not a member counts itself joining (Placement.nodes),
	// so it is never the keeper; the fence is asked again here because
	// this is the one write of the table (cluster.K16).
	if Keeper(nodes) == self && k.pl.member() {
		unowned := slices.Contains(tab.Owners, "")
		if unowned || now.Sub(k.lastStep) >= k.interval {
			limit := k.moves
			if unowned {
				limit = 0
			}
			moves, err := k.parts.Step(ctx, nodes, limit, self, now)
			switch {
			case err != nil:
				log.Warn("changing the partition table", "err", err)
			case len(moves) > 0:
				k.lastStep = now
				k.moved.Add(float64(len(moves)))
				tab = k.parts.Table()
				log.Info("partition table changed", "epoch", tab.Epoch, "moves", len(moves), "detail", describeMoves(moves))
			}
		}
	}
	n := 0
	for _, o := range tab.Owners {
		if o == self {
			n++
		}
	}
	k.owned.Set(float64(n))
	k.epoch.Set(float64(tab.Epoch))
}

// describeMoves names moves for a log line: "3:a>b 7:>c".
func describeMoves(moves []Move) string {
	var b strings.Builder
	for i, m := range moves {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(partitionName(m.Partition)[2:])
		b.WriteByte(':')
		b.WriteString(m.From)
		b.WriteByte('>')
		b.WriteString(m.To)
	}
	return b.String()
}

// placementNodes returns the nodes as partition placement counts them: the
// members in their live state, and the entries of the node list that the
// membership does not show (serf reaped them, or they are not back since
// this node started) as recorded, a recorded active or joining node
// counting as failed (cluster.K3, cluster.K11): it keeps its partitions.
// Forgotten nodes are in neither and count for nothing, and so does a
// member without a transfer listener, which cannot receive rows.
func (p *Placement) placementNodes() []Member {
	byID := map[string]Member{}
	for _, r := range p.Records() {
		st := r.State
		if st == cluster.Active {
			st = cluster.Failed
		}
		byID[r.ID] = Member{ID: r.ID, Weight: r.WeightOf(), State: st}
	}
	for _, n := range p.nodes() {
		st := n.State
		if n.Tags.Transfer == "" {
			st = cluster.Draining // receives no rows: owns no partition
		}
		byID[n.ID] = Member{ID: n.ID, Weight: max(n.Tags.Weight, 1), State: st}
	}
	out := make([]Member, 0, len(byID))
	for _, n := range byID {
		out = append(out, n)
	}
	slices.SortFunc(out, func(a, b Member) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// KeepPartitions makes this node keep the partition table parts (cluster.K13):
// reread it, and step it when this node is the keeper. Call it before
// Start.
func (p *Placement) KeepPartitions(parts *Partitions) {
	p.pk = newPartitionKeeper(p, parts)
}
