package partitionrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/snapstore/snapstore/adapters"
	"github.com/snapstore/snapstore/cluster/placement"
	"github.com/snapstore/snapstore/cluster/transfer"
	"github.com/snapstore/snapstore/snapshot"
)

// The run record: one record of the metadata table per dataset (kind
// runRecordKind, name the dataset), written by the coordinator before it
// sends a row, read by the owners when a run's first stream reaches them.
const runRecordKind = "partitioned-run"

// runRecord is what the owners need of a run that another node began.
type runRecord struct {
	Txn        int64           `json:"txn"`
	Epoch      int64           `json:"epoch"`
	Owners     []string        `json:"owners"`
	Version    int64           `json:"version"`
	Partitions int             `json:"partitions"`
	Schema     snapshot.Schema `json:"schema"`
	// PartitionKey is the dataset's partition key, nil for the row key
	// (snapshot.PartitionedRun.PartitionKey).
	PartitionKey []string `json:"partition_key,omitempty"`
	// Carried are the key ranges of Version whose rows the run does not
	// send: every owner carries them over (snapshot.PartitionSpec.
	// Carried). None when the run sends every row.
	Carried []snapshot.KeyRange `json:"carried,omitempty"`
	// Tables are the tables of a run of a dataset of named tables, in the
	// order of their streams (streams.go); Schema and PartitionKey are
	// then unset. None for a dataset of one table.
	Tables []tableRecord `json:"tables,omitempty"`
	// Coordinator and Incarnation name the process that began the run;
	// RunID its run record (adapters).
	Coordinator string    `json:"coordinator"`
	Incarnation string    `json:"incarnation"`
	RunID       string    `json:"run_id,omitempty"`
	Started     time.Time `json:"started"`
}

// DefaultOwnerWait is how long a partitioned run waits for an owner that
// cannot be reached before it fails.
const DefaultOwnerWait = 10 * time.Minute

// Config configures a node's partitioned runs.
type Config struct {
	// Self and Incarnation are this node's id and process (cluster.K1).
	Self, Incarnation string
	DB                *snapshot.DB
	// Table is the partition table (placement.Partitions).
	Table *placement.Partitions
	// OwnerWait is how long a run waits for an owner that cannot be
	// reached, in a row, before it fails; an owner also drops the state
	// of a run it heard nothing of for as long. Default DefaultOwnerWait.
	OwnerWait time.Duration
	// StoreRetries is how many times an owner writes a partition again
	// from its first batch after a transient store error before it
	// refuses it (retry.go); StoreRetryBackoff the pause before the
	// first, doubling up to 8 s. Defaults DefaultStoreRetries and
	// DefaultStoreRetryBackoff; StoreRetries < 0 retries never.
	StoreRetries      int
	StoreRetryBackoff time.Duration
	// BatchRows and BatchBytes close a batch of one partition: 1,000 rows
	// or 256 KiB by default.
	BatchRows  int
	BatchBytes int
	Logger     *slog.Logger
	Registerer prometheus.Registerer
}

// Runs is a node's side of partitioned runs. Safe for concurrent
// use.
type Runs struct {
	cfg Config
	log *slog.Logger
	xfr *transfer.Transport // set once by SetTransport, before any run
	// departed is set once by SetDeparted, before any run (departed.go).
	departed func(node string) (string, bool)

	// mu guards streams, records and retries.
	mu      sync.Mutex
	streams map[ownerStream]*ownedStream
	records map[transfer.RunKey]*runRecord
	retries map[ownerStream]*retryState

	// stopc ends sweepLoop (idle.go), which closes sweepDone.
	stopc     chan struct{}
	sweepDone chan struct{}
	closeOnce sync.Once

	rowsApplied   prometheus.Counter
	partsReported *prometheus.CounterVec
	runs          *prometheus.CounterVec
	storeRetries  *prometheus.CounterVec
	// streamsDropped counts the streams dropped as silent (idle.go).
	streamsDropped prometheus.Counter
}

var _ adapters.Partitioner = (*Runs)(nil)
var _ transfer.Handler = (*Runs)(nil)

// New returns the partitioned runs of a node; give it its
// transport with SetTransport, after transfer.Open with it as Handler.
func New(cfg Config) (*Runs, error) {
	if cfg.OwnerWait <= 0 {
		cfg.OwnerWait = DefaultOwnerWait
	}
	switch {
	case cfg.StoreRetries == 0:
		cfg.StoreRetries = DefaultStoreRetries
	case cfg.StoreRetries < 0:
		cfg.StoreRetries = 0
	}
	if cfg.StoreRetryBackoff <= 0 {
		cfg.StoreRetryBackoff = DefaultStoreRetryBackoff
	}
	if cfg.BatchRows <= 0 {
		cfg.BatchRows = 1000
	}
	if cfg.BatchBytes <= 0 {
		cfg.BatchBytes = 256 << 10
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := &Runs{cfg: cfg, log: log.With("component", "partitioned"),
		streams: map[ownerStream]*ownedStream{}, records: map[transfer.RunKey]*runRecord{}, retries: map[ownerStream]*retryState{},
		stopc: make(chan struct{}), sweepDone: make(chan struct{}),
		rowsApplied: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "snapstore_cluster_partition_rows_applied_total",
			Help: "Rows of partitioned runs this node compared and wrote as the owner of their partition (rows of its own runs included).",
		}),
		partsReported: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "snapstore_cluster_partitions_written_total",
			Help: "Partitions of partitioned runs this node wrote and reported, by whether the run was this node's (local) or another's (remote).",
		}, []string{"origin"}),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "snapstore_cluster_partitioned_runs_total",
			Help: "Partitioned runs this node coordinated, by outcome (committed, verified, aborted).",
		}, []string{"outcome"}),
		storeRetries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "snapstore_cluster_partition_store_retries_total",
			Help: "Transient store errors of this node's partition writes as an owner, by what followed: retried (the partition written again from its first batch) or gave_up (the partition refused, the run failed).",
		}, []string{"outcome"}),
		streamsDropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "snapstore_cluster_partition_streams_dropped_total",
			Help: "Streams of partitioned runs this node dropped as an owner after hearing nothing of them for cluster.transfer.owner_wait (their coordinator died or gave up).",
		}),
	}
	if reg := cfg.Registerer; reg != nil {
		for _, c := range []prometheus.Collector{p.rowsApplied, p.partsReported, p.runs, p.storeRetries, p.streamsDropped} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	go p.sweepLoop()
	return p, nil
}

// SetTransport gives p the node's transport; call it once, before the
// node takes runs.
func (p *Runs) SetTransport(t *transfer.Transport) { p.xfr = t }

// readRecord returns the run record of run, cached per run.
func (p *Runs) readRecord(ctx context.Context, run transfer.RunKey) (*runRecord, error) {
	p.mu.Lock()
	rec := p.records[run]
	p.mu.Unlock()
	if rec != nil {
		return rec, nil
	}
	raw, err := p.cfg.DB.GetRecord(ctx, runRecordKind, run.Dataset)
	if err != nil {
		return nil, fmt.Errorf("reading the run record of %s: %w", run.Dataset, err)
	}
	rec = &runRecord{}
	if err := json.Unmarshal(raw, rec); err != nil {
		return nil, fmt.Errorf("the run record of %s does not decode: %w", run.Dataset, err)
	}
	if rec.Txn != run.Txn {
		return nil, fmt.Errorf("%w: the run record of %s is of transaction %d, not %d", errRunGone, run.Dataset, rec.Txn, run.Txn)
	}
	if len(rec.Owners) != rec.Partitions {
		return nil, fmt.Errorf("the run record of %s names %d owners for %d partitions", run.Dataset, len(rec.Owners), rec.Partitions)
	}
	p.mu.Lock()
	p.records[run] = rec
	p.mu.Unlock()
	return rec, nil
}

// errRunGone: the run a batch belongs to is over (another run of the
// dataset began since).
var errRunGone = errors.New("the run is over")

// writeRecord writes the run record of rec's dataset.
func (p *Runs) writeRecord(ctx context.Context, dataset string, rec *runRecord) error {
	raw, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return p.cfg.DB.PutRecord(ctx, runRecordKind, dataset, raw)
}
