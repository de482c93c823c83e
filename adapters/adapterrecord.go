package adapters

import (
	"time"

	"github.com/snapstore/snapstore/api"
	"github.com/snapstore/snapstore/snapshot"
)

// adapterRecord is an adapter definition as its record in the metadata
// table holds it (recordAdapter), and as ConfigDigests hashes it: the
// field names of api.Adapter, with durations in nanoseconds and the
// flags and strategy omitted when unset. It is the stored format, so it
// does not follow the wire schema's changes.
type adapterRecord struct {
	Name                string              `json:"name"`
	Connection          string              `json:"connection"`
	Resource            string              `json:"resource"`
	Resources           []string            `json:"resources,omitempty"`
	Include             []string            `json:"include,omitempty"`
	Exclude             []string            `json:"exclude,omitempty"`
	AllowDroppedTables  bool                `json:"allow_dropped_tables,omitempty"`
	Parallelism         int                 `json:"parallelism,omitempty"`
	Dataset             string              `json:"dataset,omitempty"`
	KeyColumns          []string            `json:"key_columns,omitempty"`
	TableKeys           map[string][]string `json:"table_keys,omitempty"`
	SourceOptions       map[string]any      `json:"source_options,omitempty"`
	Schedule            string              `json:"schedule,omitempty"`
	Retention           snapshot.Retention  `json:"retention"`
	Guard               snapshot.Guard      `json:"guard"`
	Retries             int                 `json:"retries,omitempty"`
	RetryBackoff        time.Duration       `json:"retry_backoff,omitempty"`
	RunOnStart          bool                `json:"run_on_start,omitempty"`
	EmbedJSON           bool                `json:"embed_json,omitempty"`
	CommitUnchanged     bool                `json:"commit_unchanged,omitempty"`
	AuditReads          bool                `json:"audit_reads,omitempty"`
	Strategy            Strategy            `json:"strategy,omitempty"`
	TransferCompression string              `json:"transfer_compression,omitempty"`
	PartitionKey        []string            `json:"partition_key,omitempty"`
	// Notify is absent (nil) in records of adapters without a notify
	// list, so that they read and hash as before; [] is kept: none.
	Notify []string `json:"notify,omitzero"`
}

// adapterRecordOf is the stored form of spec.
func adapterRecordOf(spec api.Adapter) adapterRecord {
	return adapterRecord{
		Name:                spec.Name,
		Connection:          spec.Connection,
		Resource:            spec.Resource,
		Resources:           spec.Resources,
		Include:             spec.Include,
		Exclude:             spec.Exclude,
		AllowDroppedTables:  spec.AllowDroppedTables,
		Parallelism:         spec.Parallelism,
		Dataset:             spec.Dataset,
		KeyColumns:          spec.KeyColumns,
		TableKeys:           spec.TableKeys,
		SourceOptions:       spec.SourceOptions,
		Schedule:            spec.Schedule,
		Retention:           retentionOf(spec),
		Guard:               guardOf(spec),
		Retries:             spec.Retries,
		RetryBackoff:        time.Duration(spec.RetryBackoff),
		RunOnStart:          spec.RunOnStart,
		EmbedJSON:           spec.EmbedJSON,
		CommitUnchanged:     spec.CommitUnchanged,
		AuditReads:          spec.AuditReads,
		Strategy:            Strategy(spec.Strategy),
		TransferCompression: spec.TransferCompression,
		PartitionKey:        spec.PartitionKey,
		Notify:              spec.Notify,
	}
}

// spec is the definition the record holds.
func (r adapterRecord) spec() api.Adapter {
	return api.Adapter{
		Name:                r.Name,
		Connection:          r.Connection,
		Resource:            r.Resource,
		Resources:           r.Resources,
		Include:             r.Include,
		Exclude:             r.Exclude,
		AllowDroppedTables:  r.AllowDroppedTables,
		Parallelism:         r.Parallelism,
		Dataset:             r.Dataset,
		KeyColumns:          r.KeyColumns,
		TableKeys:           r.TableKeys,
		SourceOptions:       r.SourceOptions,
		Schedule:            r.Schedule,
		Retention:           api.Retention{TTL: api.Duration(r.Retention.TTL), MinVersions: r.Retention.MinVersions},
		Guard:               api.Guard{AllowEmpty: r.Guard.AllowEmpty, MaxShrink: r.Guard.MaxShrink},
		Retries:             r.Retries,
		RetryBackoff:        api.Duration(r.RetryBackoff),
		RunOnStart:          r.RunOnStart,
		EmbedJSON:           r.EmbedJSON,
		CommitUnchanged:     r.CommitUnchanged,
		AuditReads:          r.AuditReads,
		Strategy:            string(r.Strategy),
		TransferCompression: r.TransferCompression,
		PartitionKey:        r.PartitionKey,
		Notify:              r.Notify,
	}
}

// retentionOf is spec's retention as package snapshot takes it.
func retentionOf(spec api.Adapter) snapshot.Retention {
	return snapshot.Retention{TTL: time.Duration(spec.Retention.TTL), MinVersions: spec.Retention.MinVersions}
}

// guardOf is spec's guard as package snapshot takes it.
func guardOf(spec api.Adapter) snapshot.Guard {
	return snapshot.Guard{AllowEmpty: spec.Guard.AllowEmpty, MaxShrink: spec.Guard.MaxShrink}
}
