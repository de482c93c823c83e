package daemon

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/snapstore/snapstore/config"
	"github.com/snapstore/snapstore/snapshot"
	"github.com/snapstore/snapstore/store"
	"github.com/snapstore/snapstore/store/hbase"
)

// sharedHBase tells snapshot.Open how this process shares the HBase table
// with other snapstore processes (snapshot.SharedStore). It embeds the
// concrete store, so that its optional capabilities (store.LateWriter,
// store.ApplyPlanner) reach snapshot too.
type sharedHBase struct {
	*hbase.Store
	sharing snapshot.Sharing
}

func (s sharedHBase) Sharing() snapshot.Sharing { return s.sharing }

var (
	_ snapshot.SharedStore = sharedHBase{}
	_ store.LateWriter     = sharedHBase{}
	_ store.ApplyPlanner   = sharedHBase{}
)

// openHBase opens the HBase backend through its Thrift2 gateway, creating
// the namespace and table when absent.
func openHBase(ctx context.Context, cfg *config.Config, log *slog.Logger, reg prometheus.Registerer) (store.Store, error) {
	h := cfg.Storage.HBase
	// The writer slots of a process that writes HBase (snapshot.W1):
	// after a crash, another writer takes a dataset the dead one held once
	// storage.hbase.writer_slot_lease passed.
	sharing := snapshot.Sharing{SlotLease: h.WriterSlotLease, SlotRenew: h.WriterSlotRenew}
	if h.ReadOnly {
		sharing = snapshot.Sharing{ReadOnly: true}
	}
	st, err := hbase.Open(ctx, hbase.Options{
		Addr:        h.Thrift,
		Namespace:   h.Namespace,
		Table:       h.Table,
		PoolSize:    h.PoolSize,
		DialTimeout: h.DialTimeout,
		CallTimeout: h.CallTimeout,
		Logger:      log,
		Registerer:  reg,
	})
	if err != nil {
		return nil, fmt.Errorf("opening HBase at %s (storage.hbase): %w", h.Thrift, err)
	}
	return sharedHBase{Store: st, sharing: sharing}, nil
}
