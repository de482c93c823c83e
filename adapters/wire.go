package adapters

import (
	"time"

	"github.com/snapstore/snapstore/api"
	"github.com/snapstore/snapstore/snapshot"
)

// AdapterSpecOf is the adapter definition a of the wire schema (the config
// file, the HTTP API) as this package takes it.
func AdapterSpecOf(a api.Adapter) AdapterSpec {
	return AdapterSpec{
		Name:                a.Name,
		Connection:          a.Connection,
		Resource:            a.Resource,
		Dataset:             a.Dataset,
		KeyColumns:          a.KeyColumns,
		Schedule:            a.Schedule,
		Retention:           snapshot.Retention{TTL: time.Duration(a.Retention.TTL), MinVersions: a.Retention.MinVersions},
		Guard:               snapshot.Guard{AllowEmpty: a.Guard.AllowEmpty, MaxShrink: a.Guard.MaxShrink},
		Retries:             a.Retries,
		RetryBackoff:        time.Duration(a.RetryBackoff),
		RunOnStart:          a.RunOnStart,
		EmbedJSON:           a.EmbedJSON,
		CommitUnchanged:     a.CommitUnchanged,
		Strategy:            Strategy(a.Strategy),
		TransferCompression: a.TransferCompression,
		PartitionKey:        a.PartitionKey,
	}
}

// API is the definition in the wire schema.
func (s AdapterSpec) API() api.Adapter {
	return api.Adapter{
		Name:                s.Name,
		Connection:          s.Connection,
		Resource:            s.Resource,
		Dataset:             s.Dataset,
		KeyColumns:          s.KeyColumns,
		Schedule:            s.Schedule,
		Retention:           api.Retention{TTL: api.Duration(s.Retention.TTL), MinVersions: s.Retention.MinVersions},
		Guard:               api.Guard{AllowEmpty: s.Guard.AllowEmpty, MaxShrink: s.Guard.MaxShrink},
		Retries:             s.Retries,
		RetryBackoff:        api.Duration(s.RetryBackoff),
		RunOnStart:          s.RunOnStart,
		EmbedJSON:           s.EmbedJSON,
		CommitUnchanged:     s.CommitUnchanged,
		Strategy:            string(s.Strategy),
		TransferCompression: s.TransferCompression,
		PartitionKey:        s.PartitionKey,
	}
}

// ConnectionSpecOf is the connection definition c of the wire schema as
// this package takes it.
func ConnectionSpecOf(c api.Connection) ConnectionSpec {
	return ConnectionSpec{Name: c.Name, Type: c.Type, Sharing: Sharing(c.Sharing), Options: c.Options}
}
